"""What one owner may put in: bytes kept in the store and hours of normalized audio
(their quota), and the free space the store's disk keeps for everything else on it —
with the embedded database, the database itself.

The disk reserve is about this host's disk, so it is checked where an upload lands on
it: the local folder store. An upload into an object store never touches the local disk
(its parts are in memory on their way), so only the owner's quota bounds it there; the
steps' scratch copies on this host keep the same reserve in transcriber.storage.blobs."""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import shutil
from collections.abc import Iterator
from pathlib import Path

import attrs
import trio

from actors.log import event
from transcriber.audio.normalize import probed_seconds
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake.refusals import NoRoom, TooLarge, TooLong
from transcriber.records.archive import audio_seconds, stored_bytes
from transcriber.storage.blobs import Blobs
from transcriber.storage.files import private_dir

DISK_RETRY_AFTER_S = 60
DISK_FULL = "the server's disk is full; retry later"


@attrs.frozen
class Limits:
    """The bounds of a door: the size of one recording, and the owner's quota."""

    max_bytes: int
    owner_max_bytes: int
    owner_max_audio_hours: float

    @classmethod
    def of(cls, config: Config, max_bytes: int | None = None) -> Limits:
        """The configured bounds; `max_bytes` instead of the configured size limit."""
        return cls(
            config.max_upload_bytes if max_bytes is None else max_bytes,
            config.owner_max_bytes,
            config.owner_max_audio_hours,
        )


@attrs.frozen
class Room:
    """How many bytes the next recording may take, and why fewer than the size limit
    (None: the size limit itself is the bound)."""

    limit: int
    short: NoRoom | None
    audio_room_s: float = math.inf
    """Seconds of audio the owner's quota has left."""


def disk_full() -> NoRoom:
    return NoRoom(DISK_FULL, DISK_RETRY_AFTER_S)


def _free_bytes(folder: Path) -> int:
    return shutil.disk_usage(private_dir(folder)).free


async def room_for(db: Database, blobs: Blobs, owner: int, limits: Limits) -> Room:
    """The room for `owner`'s next recording; NoRoom at once when there is none.

    Recordings of one owner coming in at the same time are each measured against the
    same room, so together they may pass the quota by at most the uploads at once.
    Cancellation: a plain query and a stat; nothing to undo.
    """
    stored = await stored_bytes(db, owner)
    # Hours of audio are known only once normalized (the normalize step holds each
    # record to what is left, and stops it with `audio_quota` past it): a recording is
    # refused here only when nothing is left.
    audio_s = await audio_seconds(db, owner)
    audio_room_s = limits.owner_max_audio_hours * 3600 - audio_s
    if audio_room_s <= 0:
        raise NoRoom(
            f"your recordings hold {audio_s / 3600:.2f} hours of audio, your quota of "
            f"{limits.owner_max_audio_hours:g} hours; no more audio fits",
        )
    quota = NoRoom(
        f"your recordings take {stored} bytes of your quota of "
        f"{limits.owner_max_bytes}; this upload does not fit",
    )
    bounds = [(limits.owner_max_bytes - stored, quota)]
    folder = blobs.upload_folder
    if folder is not None:
        free = await trio.to_thread.run_sync(_free_bytes, folder) - blobs.min_free_bytes
        bounds.append((free, disk_full()))
    limit, short = limits.max_bytes, None
    for room, why in bounds:
        if room <= 0:
            raise why
        if room < limit:
            limit, short = room, why
    return Room(limit, short, audio_room_s)


async def audio_fits(room: Room, ref: str) -> None:
    """TooLong when the received recording at `ref` says it is longer than the owner's
    quota of audio has left, before its record commits (the file then goes). Only a file
    on this host is probed, and only its container's word is taken (no decoding): an
    object in an object store, a length the container does not tell, or one that lies,
    is held to the quota by its normalization (stop `audio_quota`).

    Cancellation: the probe (a header read) finishes in its thread; nothing to undo.
    """
    if not ref.startswith("/") or math.isinf(room.audio_room_s):
        return
    seconds = await trio.to_thread.run_sync(probed_seconds, Path(ref))
    if seconds is not None and seconds > room.audio_room_s + 1:
        raise TooLong(
            f"the recording is {seconds:.0f} s of audio; your quota of hours of audio has "
            f"{room.audio_room_s:.0f} s left",
        )


@contextlib.contextmanager
def room_refusals(room: Room, owner: int) -> Iterator[None]:
    """Around receiving a recording into `room`: passing the limit that the owner's
    quota or the disk's room set (not the size limit) is that refusal instead, and the
    disk filling up while writing is NoRoom."""
    try:
        yield
    except TooLarge:
        if room.short is None:
            raise
        raise room.short from None
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        event(logging.ERROR, "upload_disk_full", owner=owner, error=str(e))
        raise disk_full() from None
