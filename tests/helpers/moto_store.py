"""The S3 server of the tests: moto's standalone server (`moto[server]`) on a loopback
port, in a thread of the test process, speaking real HTTP to the real client code. Its
objects live in moto's backend, so stopping the server and starting it again on the
same port is a store that went away and came back with its data."""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from tests.helpers.fake_recognizer import FakeRecognizer

ACCESS = {
    "AWS_ACCESS_KEY_ID": "transcriber-test",
    "AWS_SECRET_ACCESS_KEY": "not-a-secret",
    "AWS_REGION": "us-east-1",
}


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
        from transcriber.storage.s3 import make_client

        return make_client(self.env())

    def new_bucket(self) -> str:
        name = f"t-{uuid.uuid4().hex[:20]}"
        self.client().create_bucket(Bucket=name)
        return name


@attrs.define(eq=False)
class HeldDeletes:
    """Around moto's WSGI application: the `nth` DeleteObject request (1-based) and every
    one after it (boto's own retries) are held — `entered` set — until `release`, then
    answered 500 without being done. A process removing a record's bytes is parked at a
    known point, to be killed there."""

    app: Callable[..., Iterable[bytes]]
    nth: int
    seen: int = 0
    entered: threading.Event = attrs.field(factory=threading.Event)
    release: threading.Event = attrs.field(factory=threading.Event)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] == "DELETE":
            with self._lock:
                self.seen += 1
                held = self.seen >= self.nth
            if held:
                self.entered.set()
                self.release.wait(120)
                start_response("500 Internal Server Error", [("Content-Type", "application/xml")])
                return [b"<Error><Code>InternalError</Code><Message>held</Message></Error>"]
        return self.app(environ, start_response)


@contextlib.contextmanager
def held_deletes(store: MotoStore, nth: int) -> Iterator[HeldDeletes]:
    """`HeldDeletes` in front of `store` for the block; released and taken away after."""
    server = store.server._server
    held = HeldDeletes(server.app, nth)
    server.app = held
    try:
        yield held
    finally:
        held.release.set()
        server.app = held.app


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
    return [
        u["Key"] for u in store.client().list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    ]


class EchoRecognizer(FakeRecognizer):
    """An OpenAI-compatible recognizer that answers every request with the number of
    audio bytes it was sent (so a test sees the audio came whole). It listens on every
    address, so daemons in network namespaces reach it too."""

    def __init__(self) -> None:
        super().__init__("0.0.0.0")
        self.requests = 0
        self.gate = threading.Event()
        """Answers wait while it is clear: a step held in mid-request."""
        self.gate.set()
        self.held = 0
        self._lock = threading.Lock()

    def answer(
        self, path: str, fields: dict[str, bytes], authorization: str | None
    ) -> tuple[int, Any]:
        with self._lock:
            self.requests += 1
            self.held += 1
        self.gate.wait(120)
        with self._lock:
            self.held -= 1
        text = f"{len(fields['file'])} bytes"
        return 200, {
            "text": text,
            "language": "english",
            "duration": 1.0,
            "segments": [{"start": 0.0, "end": 1.0, "text": text}],
        }
