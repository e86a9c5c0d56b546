"""A watch of an S3 prefix, `s3://BUCKET/PREFIX/`, read and written with the service's
own object store's client and credentials (TRANSCRIBER_STORAGE_URL=s3://…,
AWS_ENDPOINT_URL …): the objects directly under the prefix, as a folder's top level,
listed a part a scan, each going on after the last (MAX_PAGES: every key within a
bounded number of scans).

An object is whole once its size, LastModified and ETag stayed the same across two scans
a quiet period apart (S3 shows an object only once its upload completed, so this waits
out a writer that uploads it again and again as it grows). Its bytes are streamed with
`If-Match: ETAG`, so they are the listed object's or nothing: once for its content hash
(the claim's key), and kept in memory for the intake that follows in the same scan
(KEEP_BYTES; a larger object is streamed again). Transcripts and notes go
beside it as new objects, with a conditional PUT (`If-None-Match: *`): an existing key is
never overwritten. Nothing of the prefix is ever deleted.

The store's own prefix (uploads, audio, live sessions of every owner) is never watched:
its objects are the service's, not one owner's to take."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from transcriber.storage.blobs import CHUNK, StorageError
from transcriber.storage.s3 import S3Blobs, parse_url
from transcriber.storage.s3_objects import (
    ObjectChanged,
    exists,
    list_children,
    open_object,
    put_new,
    read_chunk,
    read_small,
)
from transcriber.watch import outputs
from transcriber.watch.folder import MAX_LISTED, Entry, FolderUnreadable, Listing, is_media
from transcriber.watch.taking import FileChanged
from transcriber.watch.writing import KEPT, SAME, TOO_LONG, WRITTEN

SCHEME = "s3://"

MAX_PAGES = 100
"""Pages of 1000 keys one scan lists under a prefix (100 000 keys, notes, transcripts
and "folders" among them), and of its media objects MAX_LISTED at most: the listing
stops at whichever bound comes first, and the next scan goes on after the last key
this one reached (S3's `StartAfter`), from the first again once a scan reached the
last. So every scan but the last of a round lists 100 000 keys or 10 000 media objects,
and a prefix of K keys, M of them media objects, is listed whole within
⌊K/100 000 + M/10 000⌋ + 1 scans; a key there all along is listed at least once in any
⌊K/100 000 + M/10 000⌋ + 2 scans in a row (one scan when K ≤ 100 000 and M ≤ 10 000:
each lists it whole). A new media object is taken at its second listing a quiet period
after its first. Each daemon goes round on its own; the claim keeps one take."""

KEEP_BYTES = 64 << 20
"""An object up to this size is read once: its bytes, read for the content hash, are kept
for the take that follows in the same scan (one object at a time per watch); a larger one
is read again into the intake. An hour of speech is about 30 MB in Opus, 58 MB in MP3 at
128 kbit/s; a WAV of an hour (115 MB) is read twice."""

KEY_MAX = 1024
"""Bytes of an S3 key: a transcript's or a note's past it is never written."""
PREFIX_MAX = 900
"""S3 keys are at most 1024 bytes: the prefix leaves room for the names under it."""

_BAD = re.compile(r"[\x00-\x1f\x7f]")
_URL = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(.*))?", re.DOTALL)
"""The store's bucket names (transcriber.storage.s3.parse_url), any key after them."""


class BadPrefix(ValueError):
    """Not a prefix a watch can take: the reason in one line."""


def is_s3(where: str) -> bool:
    return where.startswith(SCHEME)


def prefix_of(text: str) -> str:
    """`s3://BUCKET/PREFIX` as a watch keeps it: `s3://BUCKET/PREFIX/` (the bucket's top
    level: `s3://BUCKET/`). BadPrefix for what is not a bucket name, or a prefix with
    empty, `.` or `..` parts or control characters (S3 reads them literally; a reader
    of the prefix would not)."""
    m = _URL.fullmatch(text)
    if m is None:
        raise BadPrefix(f"not an S3 prefix (s3://BUCKET/PREFIX/): {text!r}")
    bucket, prefix = m.group(1), m.group(2) or ""
    prefix = prefix.removesuffix("/")
    parts = prefix.split("/") if prefix else []
    if any(p in ("", ".", "..") for p in parts) or _BAD.search(prefix):
        raise BadPrefix(
            f"the prefix may not hold empty, '.' or '..' parts or control characters: {text!r}"
        )
    if len(prefix.encode()) > PREFIX_MAX:
        raise BadPrefix(f"the prefix is longer than {PREFIX_MAX} bytes")
    return f"{SCHEME}{bucket}/{prefix}/" if prefix else f"{SCHEME}{bucket}/"


def split(where: str) -> tuple[str, str]:
    """(bucket, key prefix: "" or ending in `/`) of a kept `s3://BUCKET/PREFIX/`."""
    bucket, _, prefix = where.removeprefix(SCHEME).partition("/")
    return bucket, prefix


def store_overlap(where: str, store_url: str | None) -> str | None:
    """Why `where` may not be watched with the store `store_url`: no object store, or
    a prefix holding or held by the store's own. None: it may."""
    if not store_url:
        return "an S3 prefix is watched with an object store (TRANSCRIBER_STORAGE_URL=s3://…)"
    bucket, prefix = split(where)
    store_bucket, store_prefix = parse_url(store_url)
    store_prefix = f"{store_prefix}/" if store_prefix else ""
    # Alike whatever the case: a store on a file system that ignores it (MinIO on macOS's
    # or Windows' disks) reads `TX/uploads/` as `tx/uploads/`.
    prefix, store_prefix = prefix.casefold(), store_prefix.casefold()
    if bucket == store_bucket and (
        prefix.startswith(store_prefix) or store_prefix.startswith(prefix)
    ):
        return f"{where} holds or is inside the service's own store {store_url}"
    return None


def _unreadable(e: StorageError) -> str:
    return " ".join(str(e).split())[:300]


@attrs.frozen
class S3Place:
    client: Any
    bucket: str
    prefix: str
    kept: dict[tuple[str, str], list[bytes]] = attrs.field(factory=dict, eq=False)
    """The last object hashed, by name and ETag, when KEEP_BYTES holds it: the take's."""

    @classmethod
    def of(cls, where: str, blobs: object) -> S3Place:
        """The place of kept prefix `where` with the store `blobs`; FolderUnreadable when
        it cannot be watched with that store."""
        if not isinstance(blobs, S3Blobs):
            raise FolderUnreadable(str(store_overlap(where, None)))
        why = store_overlap(where, blobs.ref(blobs.prefix))
        if why is not None:
            raise FolderUnreadable(why)
        return cls(blobs.client, *split(where))

    def key(self, name: str) -> str:
        return self.prefix + name

    async def listing(self, after: str | None = None) -> Listing:
        """The part of the prefix after the name `after` (None: from the first) that
        one scan lists (MAX_PAGES)."""
        try:
            got = await trio.to_thread.run_sync(
                lambda: list_children(
                    self.client,
                    self.bucket,
                    self.prefix,
                    is_media,
                    after=after,
                    max_kept=MAX_LISTED,
                    max_pages=MAX_PAGES,
                )
            )
        except StorageError as e:
            raise FolderUnreadable(_unreadable(e)) from None
        media = tuple(Entry(o.name, o.size, o.modified_ns, 0, o.etag) for o in got.objects)
        return Listing(media, got.names, after=got.after, through=got.through)

    async def has(self, name: str) -> bool:
        try:
            return await trio.to_thread.run_sync(exists, self.client, self.bucket, self.key(name))
        except StorageError as e:
            raise OSError(_unreadable(e)) from None

    async def read(self, entry: Entry, put: Callable[[bytes], Awaitable[None]]) -> None:
        """The listed object's bytes: those the content hash read, when kept (KEEP_BYTES);
        else streamed with `If-Match` its ETag, a chunk in memory at a time."""
        kept = self.kept.pop((entry.name, entry.tag), None)
        if kept is None:
            await self._stream(entry, put)
            return
        for chunk in kept:
            await put(chunk)

    async def _stream(self, entry: Entry, put: Callable[[bytes], Awaitable[None]]) -> None:
        """Cancellation: a chunk being read finishes in its thread; the stream is closed."""
        key = self.key(entry.name)
        try:
            body = await trio.to_thread.run_sync(
                open_object, self.client, self.bucket, key, entry.tag
            )
        except ObjectChanged:
            raise FileChanged(key) from None
        except StorageError as e:
            raise OSError(_unreadable(e)) from None
        try:
            while chunk := await trio.to_thread.run_sync(read_chunk, body, CHUNK):
                await put(chunk)
        except StorageError as e:
            raise OSError(_unreadable(e)) from None
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(body.close)

    async def content_hash(self, entry: Entry) -> bytes:
        digest = hashlib.sha256()
        chunks: list[bytes] = []
        room = [entry.size if entry.size <= KEEP_BYTES else -1]

        async def put(chunk: bytes) -> None:
            digest.update(chunk)
            room[0] -= len(chunk)
            # Kept only while the body is no longer than listed: a store that lists one
            # size and sends more does not fill memory.
            if room[0] >= 0:
                chunks.append(chunk)
            else:
                chunks.clear()

        self.kept.clear()
        await self._stream(entry, put)
        if room[0] == 0:
            self.kept[(entry.name, entry.tag)] = chunks
        return digest.digest()

    async def write_new(self, name: str, suffix: str, data: bytes) -> str:
        key = self.key(f"{outputs.stem(name)}{suffix}")
        if len(key.encode()) > KEY_MAX:
            return TOO_LONG
        try:
            if await trio.to_thread.run_sync(put_new, self.client, self.bucket, key, data):
                return WRITTEN
            there = await trio.to_thread.run_sync(
                read_small, self.client, self.bucket, key, len(data)
            )
        except StorageError as e:
            raise OSError(_unreadable(e)) from None
        return SAME if there == data else KEPT

    async def tidy(self, listing: Listing) -> None:
        """Nothing: a PUT is whole or not there (so a partial listing's names miss
        nothing tidy needs)."""
