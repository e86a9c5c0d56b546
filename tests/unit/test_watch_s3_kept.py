"""An S3 watch keeps an object's bytes from its hash to its take only when they are as
many as listed (transcriber.watch.s3.S3Place.content_hash): a fake store that sends more
than it listed does not fill memory, and the take reads it again."""

from __future__ import annotations

import hashlib
import io
from typing import Any

import attrs

from transcriber.watch.folder import Entry
from transcriber.watch.s3 import S3Place


@attrs.define
class Store:
    """A store whose object `rec/a.ogg` is `body`, however large it was listed."""

    body: bytes
    gets: int = 0

    def get_object(self, **_: Any) -> dict[str, Any]:
        self.gets += 1
        return {"Body": io.BytesIO(self.body)}


async def read_twice(store: Store, listed: int) -> tuple[bytes, bytes, int]:
    """The hash, the take's bytes, and how many bytes were kept between the two."""
    place = S3Place(store, "b", "rec/")
    entry = Entry("a.ogg", listed, 1, 0, '"etag"')
    sha = await place.content_hash(entry)
    kept = sum(len(c) for chunks in place.kept.values() for c in chunks)
    got: list[bytes] = []

    async def put(chunk: bytes) -> None:
        got.append(chunk)

    await place.read(entry, put)
    return sha, b"".join(got), kept


async def test_bytes_as_many_as_listed_are_kept_for_the_take() -> None:
    store = Store(b"x" * 1000)
    sha, taken, kept = await read_twice(store, 1000)
    assert sha == hashlib.sha256(store.body).digest()
    assert (taken, kept, store.gets) == (store.body, 1000, 1)


async def test_more_bytes_than_listed_are_not_kept() -> None:
    store = Store(b"x" * 1000)
    sha, taken, kept = await read_twice(store, 10)
    assert sha == hashlib.sha256(store.body).digest()
    assert (taken, kept, store.gets) == (store.body, 0, 2)
