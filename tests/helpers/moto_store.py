"""The S3 server of the tests: moto's standalone server (`moto[server]`) on a loopback
port, in a thread of the test process, speaking real HTTP to the real client code. Its
objects live in moto's backend, so stopping the server and starting it again on the
same port is a store that went away and came back with its data."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
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
