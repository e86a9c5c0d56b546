"""Where a watch looks: a folder (`/srv/recorder`) or an S3 prefix
(`s3://BUCKET/PREFIX/`, transcriber.watch.s3). A scan asks the same things of either:
what is there (and whether one name is), the content hash of a whole file, its bytes
streamed into the intake, and a note or transcript written beside it (never over
another)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

import attrs
import trio

from transcriber.storage.blobs import CHUNK
from transcriber.watch import outputs
from transcriber.watch.folder import (
    Entry,
    Listing,
    content_hash,
    list_folder,
    open_listed,
    stamp_of,
)
from transcriber.watch.taking import FileChanged
from transcriber.watch.writing import sweep_parts, write_new


class Place(Protocol):
    async def listing(self, after: str | None = None) -> Listing:
        """What is there now — a folder whole; of an S3 prefix, a scan's part of it,
        going on after the name `after` — FolderUnreadable when it cannot be listed."""

    async def has(self, name: str) -> bool:
        """Whether `name` is there now (a name outside the range a listing covered);
        OSError when that cannot be told."""

    async def content_hash(self, entry: Entry) -> bytes:
        """The sha256 of `entry`; FileChanged when it changed since listed, OSError
        when it cannot be read."""

    async def read(self, entry: Entry, put: Callable[[bytes], Awaitable[None]]) -> None:
        """`entry`'s bytes, chunk by chunk, into `put` (a `taking.Reader`)."""

    async def write_new(self, name: str, suffix: str, data: bytes) -> str:
        """`data` beside file `name` as STEM+suffix: WRITTEN, SAME or KEPT
        (transcriber.watch.writing); OSError when it cannot be written."""

    async def tidy(self, listing: Listing) -> None:
        """What a killed write of ours left, removed."""


@attrs.frozen
class FolderPlace:
    """A local or mounted folder (its top level)."""

    folder: Path

    async def listing(self, after: str | None = None) -> Listing:
        return await trio.to_thread.run_sync(list_folder, self.folder)  # whole: no range

    async def has(self, name: str) -> bool:
        return await trio.to_thread.run_sync(os.path.lexists, self.folder / name)

    async def content_hash(self, entry: Entry) -> bytes:
        path = self.folder / entry.name
        sha = await trio.to_thread.run_sync(content_hash, path, entry)
        if await trio.to_thread.run_sync(stamp_of, path) != entry.stamp:
            raise FileChanged(str(path))
        return sha

    async def read(self, entry: Entry, put: Callable[[bytes], Awaitable[None]]) -> None:
        path = self.folder / entry.name
        fd = await trio.to_thread.run_sync(open_listed, path, entry)
        async with await trio.open_file(fd, "rb") as f:
            while chunk := await f.read(CHUNK):
                await put(chunk)
        if await trio.to_thread.run_sync(stamp_of, path) != entry.stamp:
            raise FileChanged(str(path))

    async def write_new(self, name: str, suffix: str, data: bytes) -> str:
        target = outputs.beside(str(self.folder), name, suffix)
        return await trio.to_thread.run_sync(write_new, target, data)

    async def tidy(self, listing: Listing) -> None:
        await trio.to_thread.run_sync(sweep_parts, self.folder, listing.names)
