"""Objects under a prefix of an S3 bucket, outside the store's own: what a watch of
`s3://BUCKET/PREFIX/` lists, reads and writes (transcriber.watch.s3). Every function
blocks (one S3 call or a page of them): the caller runs it in a worker thread. The
store's failures come out as StorageError (transcriber.storage.s3.translated).

Nothing here deletes or overwrites an object: a write is a conditional PUT
(`If-None-Match: *`), which S3 (since 2024), MinIO, Ceph RGW, R2 and moto refuse with
412 when the key exists, atomically on the server."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import attrs

from transcriber.storage.blobs import StorageError
from transcriber.storage.s3 import translated

PAGE_KEYS = 1000
"""Keys of one ListObjectsV2 page (S3's most)."""


@attrs.frozen
class ObjectSeen:
    """An object directly under the prefix as one listing saw it."""

    name: str
    """The key without the prefix (no `/` in it)."""
    size: int
    modified_ns: int
    etag: str


@attrs.frozen
class PrefixListing:
    """One part of a prefix's listing: the names after `after` up to and including
    `through`, in key order."""

    objects: tuple[ObjectSeen, ...]
    """The objects `keep` chose in that range, the oldest first."""
    names: frozenset[str]
    """Every name directly under the prefix in that range."""
    after: str | None = None
    """The listing went on after this name (None: from the first)."""
    through: str | None = None
    """The last name it reached (None: it reached the end of the prefix)."""


def _ns(when: dt.datetime) -> int:
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def list_children(
    client: Any,
    bucket: str,
    prefix: str,
    keep: Callable[[str], bool],
    *,
    after: str | None,
    max_kept: int,
    max_pages: int,
) -> PrefixListing:
    """The objects directly under `prefix` (`Delimiter=/`: a key with another `/` after
    the prefix — `PREFIX/sub/a.mp3`, `PREFIX/../a.mp3` — is in a "folder" and never
    seen) whose names sort after `after` (S3's `StartAfter`; None: from the first),
    those whose name `keep` takes with size, LastModified and ETag. It stops after
    `max_pages` pages of PAGE_KEYS keys, or just before the object that would be the
    `max_kept`+1st kept, or at the end of the prefix; `through` says where. S3 lists
    keys in the order of their UTF-8 bytes, which is the order of Python's strings:
    a name sorts after `after` exactly when it is greater. StorageError when the bucket
    cannot be listed."""
    kept: list[ObjectSeen] = []
    names: set[str] = set()
    ask: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
    if after is not None:
        ask["StartAfter"] = prefix + after
    reached = after

    def part(through: str | None) -> PrefixListing:
        kept.sort(key=lambda o: (o.modified_ns, o.name))
        return PrefixListing(tuple(kept), frozenset(names), after, through)

    with translated():
        for _ in range(max_pages):
            page = client.list_objects_v2(**ask, MaxKeys=PAGE_KEYS)
            for obj in page.get("Contents", []):
                name = obj["Key"][len(prefix) :]
                if not name or "/" in name:
                    continue
                if keep(name):
                    if len(kept) == max_kept:
                        return part(reached)  # the next listing starts at this one
                    kept.append(
                        ObjectSeen(
                            name,
                            int(obj["Size"]),
                            _ns(obj["LastModified"]),
                            str(obj.get("ETag", "")),
                        )
                    )
                names.add(name)
                reached = name
            listed = [o["Key"] for o in page.get("Contents", [])]
            listed += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
            if not page.get("IsTruncated") or not listed:
                return part(None)
            # The page's last key, a "folder" maybe: the next page, or scan, after it.
            reached = max(listed)[len(prefix) :]
            ask = {
                "Bucket": bucket,
                "Prefix": prefix,
                "Delimiter": "/",
                "ContinuationToken": page["NextContinuationToken"],
            }
    return part(reached)


class ObjectChanged(Exception):
    """The object is no longer the one listed (another ETag, or gone)."""


def _status(e: Exception) -> int | None:
    response = getattr(e.__cause__, "response", None) or getattr(e, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(code) if code is not None else None


def open_object(client: Any, bucket: str, key: str, etag: str) -> Any:
    """The body of the object `key` as listed with `etag` (`If-Match`: a stream of
    exactly those bytes, or ObjectChanged); read it with `read_chunk`."""
    try:
        with translated():
            return client.get_object(Bucket=bucket, Key=key, IfMatch=etag)["Body"]
    except StorageError as e:
        if _status(e) in (404, 412):
            raise ObjectChanged(key) from None
        raise


def read_chunk(body: Any, size: int) -> bytes:
    """The next `size` bytes at most of a body `open_object` gave (b"" at its end)."""
    with translated():
        return bytes(body.read(size))


def put_new(client: Any, bucket: str, key: str, data: bytes) -> bool:
    """`data` as object `key` if there is none (True); False when the key exists (it is
    left as it is). StorageError otherwise."""
    try:
        with translated():
            client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except StorageError as e:
        # 412: the key exists; 409: a concurrent conditional write of the same key won.
        if _status(e) in (409, 412):
            return False
        raise
    return True


def read_small(client: Any, bucket: str, key: str, limit: int) -> bytes | None:
    """Object `key`'s bytes when it has at most `limit` of them; None when it is
    bigger or gone."""
    try:
        with translated():
            head = client.head_object(Bucket=bucket, Key=key)
            if int(head["ContentLength"]) > limit:
                return None
            return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    except StorageError as e:
        if _status(e) == 404:
            return None
        raise


def exists(client: Any, bucket: str, key: str) -> bool:
    """Whether object `key` is there (one HEAD). StorageError when that cannot be told."""
    try:
        with translated():
            client.head_object(Bucket=bucket, Key=key)
    except StorageError as e:
        if _status(e) == 404:
            return False
        raise
    return True


def probe(client: Any, bucket: str, prefix: str) -> None:
    """One listing of at most one key under `prefix`: StorageError when these
    credentials cannot list it (no bucket, denied, unreachable)."""
    with translated():
        client.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/", MaxKeys=1)
