"""A fake OpenAI-compatible recognizer for tests: a real HTTP server in a thread of the
test process that reads each `POST` as a multipart form and answers what a subclass
says. The remote recognizer's tests script its answers; the object store's tests echo
the size of the audio they were sent."""

from __future__ import annotations

import email
import email.policy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeRecognizer:
    """Serves on `host` (loopback by default; "0.0.0.0" for daemons in network
    namespaces) at `url`, for the length of a `with` block."""

    def __init__(self, host: str = "127.0.0.1"):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
                message = email.message_from_bytes(head + body, policy=email.policy.HTTP)
                fields = {
                    part.get_param("name", header="content-disposition"): part.get_payload(
                        decode=True
                    )
                    for part in message.iter_parts()
                }
                status, answer = fake.answer(self.path, fields, self.headers.get("Authorization"))
                data = answer.encode() if isinstance(answer, str) else json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def answer(
        self, path: str, fields: dict[str, bytes], authorization: str | None
    ) -> tuple[int, Any]:
        """(status, body) for one request, in a thread of the server; a str body is sent
        as it is, anything else as JSON."""
        raise NotImplementedError

    def __enter__(self) -> Any:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
