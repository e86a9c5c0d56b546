"""What one owner may take: uploads at once (429 beyond), bytes kept in the store and
hours of normalized audio (507 beyond), and the free space the store's disk keeps for
everything else on it — with the embedded database, the database itself.

The disk reserve is about this host's disk, so it is checked where an upload lands on
it: the local folder store. An upload into an object store never touches the local disk
(its parts are in memory on their way), so only the owner's quota bounds it there; the
steps' scratch copies on this host keep the same reserve in transcriber.storage.blobs."""

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
from transcriber.http.errors import ApiError
from transcriber.http.uploads import UploadRefused
from transcriber.records.archive import audio_seconds, stored_bytes
from transcriber.storage.configured import blobs_of
from transcriber.storage.files import private_dir

BUSY_RETRY_AFTER_S = 5
DISK_RETRY_AFTER_S = 60
DISK_FULL = "the server's disk is full; retry later"


@attrs.define
class UploadSlots:
    """Uploads in progress per owner, at most `per_owner` each."""

    per_owner: int
    taken: dict[int, int] = attrs.field(factory=dict)

    @contextlib.contextmanager
    def take(self, owner: int) -> Iterator[None]:
        """One slot of `owner` for the block; 429 when they are all taken."""
        if self.taken.get(owner, 0) >= self.per_owner:
            raise ApiError(
                429,
                f"{self.per_owner} uploads of yours are in progress "
                "already; retry when one has ended",
                {"Retry-After": str(BUSY_RETRY_AFTER_S)},
            )
        self.taken[owner] = self.taken.get(owner, 0) + 1
        try:
            yield
        finally:
            self.taken[owner] -= 1
            if not self.taken[owner]:
                del self.taken[owner]


@attrs.frozen
class Room:
    """How many bytes the next upload may take, and why fewer than the size limit
    (None: the size limit itself is the bound)."""

    limit: int
    short: ApiError | None
    audio_room_s: float = math.inf
    """Seconds of audio the owner's quota has left."""


def _free_bytes(folder: Path) -> int:
    return shutil.disk_usage(private_dir(folder)).free


async def upload_room(db: Database, config: Config, owner: int, max_upload: int) -> Room:
    """The room for `owner`'s next upload; 507 at once when there is none.

    Uploads of one owner in progress at the same time are each measured against the
    same room, so together they may pass the quota by at most the uploads at once.
    Cancellation: a plain query and a stat; nothing to undo.
    """
    stored = await stored_bytes(db, owner)
    # Hours of audio are known only once normalized (the normalize step holds each
    # record to what is left, and stops it with `audio_quota` past it): an upload is
    # refused here only when nothing is left.
    audio_s = await audio_seconds(db, owner)
    audio_room_s = config.owner_max_audio_hours * 3600 - audio_s
    if audio_room_s <= 0:
        raise ApiError(
            507,
            f"your recordings hold {audio_s / 3600:.2f} hours of audio, your quota of "
            f"{config.owner_max_audio_hours:g} hours; no more audio fits",
        )
    quota = ApiError(
        507,
        f"your recordings take {stored} bytes of your quota of "
        f"{config.owner_max_bytes}; this upload does not fit",
    )
    disk = ApiError(507, DISK_FULL, {"Retry-After": str(DISK_RETRY_AFTER_S)})
    bounds = [(config.owner_max_bytes - stored, quota)]
    folder = blobs_of(config).upload_folder
    if folder is not None:
        free = await trio.to_thread.run_sync(_free_bytes, folder) - config.min_free_bytes
        bounds.append((free, disk))
    limit, short = max_upload, None
    for room, why in bounds:
        if room <= 0:
            raise why
        if room < limit:
            limit, short = room, why
    return Room(limit, short, audio_room_s)


async def audio_fits(room: Room, ref: str) -> None:
    """507 when the received upload at `ref` says it is longer than the owner's quota
    of audio has left, before its record commits (the file then goes). Only a file on
    this host is probed, and only its container's word is taken (no decoding): an
    object in an object store, a length the container does not tell, or one that lies,
    is held to the quota by its normalization (stop `audio_quota`).

    Cancellation: the probe (a header read) finishes in its thread; nothing to undo.
    """
    if not ref.startswith("/") or math.isinf(room.audio_room_s):
        return
    seconds = await trio.to_thread.run_sync(probed_seconds, Path(ref))
    if seconds is not None and seconds > room.audio_room_s + 1:
        raise ApiError(
            507,
            f"the recording is {seconds:.0f} s of audio; your quota of hours of audio has "
            f"{room.audio_room_s:.0f} s left",
        )


@contextlib.contextmanager
def room_refusals(room: Room | None, owner: int) -> Iterator[None]:
    """Around receiving an upload into `room`: a 413 that the owner's quota or the
    disk's room caused (not the size limit) is that 507 instead, and the disk filling
    up while writing is 507."""
    try:
        yield
    except UploadRefused as e:
        if e.status == 413 and room is not None and room.short is not None:
            raise room.short from None
        raise
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        event(logging.ERROR, "upload_disk_full", owner=owner, error=str(e))
        raise ApiError(507, DISK_FULL, {"Retry-After": str(DISK_RETRY_AFTER_S)}) from None
