"""What the tests of a watched S3 prefix share (tests/integration/test_watch_s3*.py): a
bucket whose `rec/` is watched and whose `tx/` is the service's store, on moto's
standalone server; the owner's records; the store's requests of one kind counted (with
botocore's own event hook); and listing bounds made small, so tens of keys stand for
S3's hundreds of thousands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.helpers.generated_audio import SAMPLES
from tests.helpers.moto_store import MotoStore, keys
from tests.helpers.watching import QUIET_S
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.storage.configured import blobs_of
from transcriber.storage.s3 import S3Blobs
from transcriber.watch.scanning import Watcher
from transcriber.watch.watches import add_watch

EN = (SAMPLES / "en.ogg").read_bytes()
RU = (SAMPLES / "ru.ogg").read_bytes()


@attrs.frozen
class Prefix:
    """The watched prefix `rec/` of a bucket whose `tx/` is the service's store."""

    moto: MotoStore
    bucket: str
    config: Config

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/rec/"

    def put(self, name: str, data: bytes) -> None:
        self.moto.client().put_object(Bucket=self.bucket, Key=f"rec/{name}", Body=data)

    def get(self, name: str) -> bytes:
        got = self.moto.client().get_object(Bucket=self.bucket, Key=f"rec/{name}")
        return bytes(got["Body"].read())

    def names(self) -> list[str]:
        return [k.removeprefix("rec/") for k in keys(self.moto, self.bucket, "rec/")]


def new_prefix(moto: MotoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Prefix:
    """A new bucket, its `rec/` watched, its `tx` the store (the process's env names moto)."""
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)
    bucket = moto.new_bucket()
    config = Config(home=tmp_path / "home", storage_url=f"s3://{bucket}/tx", watch_quiet_s=QUIET_S)
    return Prefix(moto, bucket, config)


async def watch_of(db: Database, owner: str, prefix: Prefix) -> int:
    added = await add_watch(db, owner, prefix.url, ("txt", "srt"), blobs_of(prefix.config))
    assert added.readable_here is None
    return added.id


async def records(db: Database, owner: int) -> list[Any]:
    return await db.run(
        lambda con: con.fetch(
            "SELECT id, filename, size_bytes FROM recordings WHERE owner_id = $1"
            " ORDER BY created_at",
            owner,
        )
    )


def counted(w: Watcher, operation: str) -> list[str]:
    """The keys of every `operation` (HeadObject, GetObject) the watcher's client asks."""
    asked: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        asked.append(params["Key"])

    assert isinstance(w.blobs, S3Blobs)
    w.blobs.client.meta.events.register(f"provide-client-params.s3.{operation}", count)
    return asked


def pages(monkeypatch: pytest.MonkeyPatch, keys: int, per_scan: int) -> None:
    """Pages of `keys` keys, `per_scan` of them a scan."""
    monkeypatch.setattr("transcriber.storage.s3_objects.PAGE_KEYS", keys)
    monkeypatch.setattr("transcriber.watch.s3.MAX_PAGES", per_scan)
