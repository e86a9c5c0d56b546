"""The operator's watches (`transcriber watch add|list|remove`): which owner's folder,
with which formats, and what the daemons last found there."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import attrs
import trio

from transcriber.db.database import Database
from transcriber.owners import owner_named
from transcriber.storage.blobs import Blobs, StorageError
from transcriber.storage.s3_objects import probe
from transcriber.watch.folder import FolderUnreadable
from transcriber.watch.s3 import BadPrefix, S3Place, is_s3, prefix_of


class NoSuchOwner(Exception):
    pass


_URL_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/")
"""`S3://…`, `s3:/…`, `https://…`: a URL mistyped, never a folder the operator meant (as
a relative path it would be watched, unreadable, under the command's folder)."""


@attrs.frozen
class Added:
    id: int
    created: bool
    folder: str
    readable_here: str | None
    """Why this command cannot list the folder (None: it can). The daemons may see
    another filesystem or run as another user: a warning, not a refusal."""


@attrs.frozen
class WatchRow:
    id: int
    owner: str
    folder: str
    formats: tuple[str, ...]
    created_at: dt.datetime
    scanned_at: dt.datetime | None
    scanned_by: str | None
    scan_error: str | None
    paused: bool
    taken: int
    waiting: int
    stopped: int

    @property
    def state(self) -> str:
        """What `watch list` says of it: ok, unreadable (why), paused, not scanned yet."""
        if self.paused:
            return "paused (owner revoked)"
        if self.scanned_at is None:
            return "not scanned yet"
        if self.scan_error is not None:
            return f"unreadable: {self.scan_error}"
        return "ok"


def folder_of(text: str) -> str:
    """DIR as a watch keeps it: absolute, normalized (not resolved: a mount point or a
    link the operator named stays what they named)."""
    return os.path.normpath(os.path.abspath(os.path.expanduser(text)))


def _readable_here(folder: str) -> str | None:
    try:
        with os.scandir(folder):
            return None
    except OSError as e:
        return e.strerror or type(e).__name__


async def _prefix_readable_here(place: S3Place) -> str | None:
    try:
        await trio.to_thread.run_sync(probe, place.client, place.bucket, place.prefix)
    except StorageError as e:
        return " ".join(str(e).split())[:300]
    return None


async def add_watch(
    db: Database, owner: str, folder: str, formats: tuple[str, ...], blobs: Blobs | None = None
) -> Added:
    """Watch `folder` (a folder, or `s3://BUCKET/PREFIX/` with the object store `blobs`)
    for `owner`, writing `formats`; the same folder again changes its formats.
    NoSuchOwner; BadPrefix for an S3 prefix that is malformed, or cannot be watched
    with `blobs` (not an object store, or the store's own objects). Cancellation: one
    statement, and one listing of the prefix."""
    place = None
    if is_s3(folder):
        path = prefix_of(folder)
        try:
            place = S3Place.of(path, blobs)
        except FolderUnreadable as e:
            raise BadPrefix(e.reason) from None
    elif _URL_LIKE.match(folder):
        raise BadPrefix(f"not a folder nor an S3 prefix (s3://BUCKET/PREFIX/): {folder!r}")
    else:
        path = folder_of(folder)
    owner_id = await owner_named(db, owner)
    if owner_id is None:
        raise NoSuchOwner(owner)
    row = await db.fetchrow("watch_add", owner_id, path, list(formats))
    assert row is not None
    readable = (
        _readable_here(str(Path(path))) if place is None else await _prefix_readable_here(place)
    )
    return Added(row["id"], row["created"], path, readable)


async def list_watches(db: Database) -> list[WatchRow]:
    """Every watch. Cancellation: a plain read."""
    return [
        WatchRow(
            r["id"],
            r["owner"],
            r["folder"],
            tuple(r["formats"]),
            r["created_at"],
            r["scanned_at"],
            r["scanned_by"],
            r["scan_error"],
            r["paused"],
            r["taken"],
            r["waiting"],
            r["stopped"],
        )
        for r in await db.fetch("watch_list")
    ]


async def remove_watch(db: Database, watch_id: int) -> bool:
    """End watch `watch_id` (what it took stays taken); False if there is none.
    Cancellation: one statement."""
    return await db.fetchrow("watch_remove", watch_id) is not None
