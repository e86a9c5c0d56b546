"""The S3 server of the tests: moto's standalone server (`moto[server]`) on a loopback
port, in a thread of the test process, speaking real HTTP to the real client code. Its
objects live in moto's backend, so stopping the server and starting it again on the
same port is a store that went away and came back with its data."""

from __future__ import annotations

import email
import email.policy
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

ACCESS = {"AWS_ACCESS_KEY_ID": "transcriber-test", "AWS_SECRET_ACCESS_KEY": "not-a-secret",
          "AWS_REGION": "us-east-1"}


@attrs.define(eq=False)
class MotoStore:
    port: int = 0
    server: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {**ACCESS, "AWS_ENDPOINT_URL": self.endpoint}

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.server.start()
        self.port = self.server.get_host_and_port()[1]

    def stop(self) -> None:
        self.server.stop()

    def client(self) -> Any:
        from transcriber.s3 import make_client

        return make_client(self.env())

    def new_bucket(self) -> str:
        name = f"t-{uuid.uuid4().hex[:20]}"
        self.client().create_bucket(Bucket=name)
        return name


def moto_store() -> Iterator[MotoStore]:
    store = MotoStore()
    store.start()
    try:
        yield store
    finally:
        store.stop()


def keys(store: MotoStore, bucket: str, prefix: str = "") -> list[str]:
    found = store.client().list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return sorted(o["Key"] for o in found)


def multipart_uploads(store: MotoStore, bucket: str) -> list[str]:
    return [u["Key"] for u in store.client().list_multipart_uploads(Bucket=bucket)
            .get("Uploads", [])]


class EchoRecognizer:
    """An OpenAI-compatible recognizer on loopback that answers every request with the
    number of audio bytes it was sent (so a test sees the audio came whole)."""

    def __init__(self) -> None:
        self.requests = 0
        self.gate = threading.Event()
        """Answers wait while it is clear: a step held in mid-request."""
        self.gate.set()
        self.held = 0
        lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
                message = email.message_from_bytes(head + body, policy=email.policy.HTTP)
                [audio] = [part.get_payload(decode=True) for part in message.iter_parts()
                           if part.get_param("name", header="content-disposition") == "file"]
                with lock:
                    fake.requests += 1
                    fake.held += 1
                fake.gate.wait(120)
                with lock:
                    fake.held -= 1
                text = f"{len(audio)} bytes"
                data = json.dumps({"text": text, "language": "english", "duration": 1.0,
                                   "segments": [{"start": 0.0, "end": 1.0, "text": text}]
                                   }).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        # On every address, so daemons in network namespaces reach it too.
        self.server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> EchoRecognizer:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
