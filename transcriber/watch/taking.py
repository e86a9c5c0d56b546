"""Taking one whole file of a watched folder: its content claimed for its owner in the
database (one row per owner and sha256 — a rename, a restart or another daemon on the
same folder finds it taken), then made a record through the one intake (`via: watch`,
the owner's bounds, the content's hash as the Idempotency-Key), then the claim marked
with the record.

What a kill leaves at each point: before the claim, nothing (the next scan reads the
file again); between the claim and the record's commit, a claim whose lease runs out
(CLAIM_S), after which any daemon takes the file over; between the commit and marking
the claim, a record and a claim — the taker's accept names the same record (the same
key), so the file still makes one; after that, a take waiting for its transcript
(transcriber.watch.scanning writes it when the record is done, whichever daemon)."""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable

import attrs
import trio

from actors.log import event
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import (
    Conflicted,
    Described,
    Limits,
    Refused,
    Sink,
    TooLarge,
    Unconfirmed,
    accept,
)
from transcriber.storage.blobs import Blobs
from transcriber.watch.folder import Entry

CLAIM_S = 600.0
"""How long a daemon holds a file it is taking before another may take it over: reading
2 GiB (the default size limit) into the store at 10 MB/s takes about 200 s."""

VIA = "watch"


class FileChanged(Exception):
    """The file's bytes were not the ones claimed (it grew or changed while read)."""


@attrs.frozen
class Watch:
    id: int
    owner_id: int
    folder: str
    formats: tuple[str, ...]


@attrs.frozen
class Taken:
    """What became of one whole file: `record` made (or named), `refused` with the
    intake's words, `later` (the service could not take it now: after `retry_after`),
    or `already` taken (by its content)."""

    outcome: str
    recording_id: uuid.UUID | None = None
    message: str | None = None
    retry_after: float | None = None


ALREADY = Taken("already")

Reader = Callable[[Callable[[bytes], Awaitable[None]]], Awaitable[None]]
"""Streams a listed file's bytes, chunk by chunk, into the function it is given;
FileChanged when they are no longer the listed ones, OSError when they cannot be read."""


def idempotency_key(sha256: bytes) -> str:
    return f"watch:{sha256.hex()}"


async def take(
    db: Database,
    blobs: Blobs,
    config: Config,
    watch: Watch,
    entry: Entry,
    sha256: bytes,
    read: Reader,
    *,
    now: dt.datetime | None = None,
) -> Taken:
    """Claim `entry` (of content `sha256`) for the watch's owner and make its record of
    the bytes `read` streams (a file's, an object's: transcriber.watch.places).
    ALREADY when the content is taken; `refused` (the claim let go) when the intake
    refuses it. FileChanged (the claim let go) when its bytes changed while read;
    OSError when it could not be read (the claim let go).

    Cancellation: before the record's commit, the claim is let go; the commit itself is
    shielded (see `accept`); a cancel after it leaves the claim to run out, and whoever
    takes it over gets the same record.
    """
    row = await db.fetchrow(
        "watch_claim",
        watch.owner_id,
        sha256,
        watch.id,
        watch.folder,
        entry.name,
        entry.size,
        entry.mtime_ns,
        CLAIM_S,
        now,
    )
    if row is None:
        return ALREADY
    token, name = row["claim_token"], row["name"]

    async def copy(sink: Sink) -> Described:
        digest = hashlib.sha256()

        async def put(chunk: bytes) -> None:
            digest.update(chunk)
            await sink.write(chunk)

        await read(put)
        if digest.digest() != sha256:
            raise FileChanged(entry.name)
        # The name it was first taken by: a claim taken over after a rename asks the
        # same request, so the intake names the first record.
        return Described(name, None, None)

    try:
        accepted = await accept(
            db,
            blobs,
            watch.owner_id,
            copy,
            via=VIA,
            limits=Limits.of(config),
            key=idempotency_key(sha256),
        )
    except Refused as e:
        await _release(db, watch, sha256, token)
        if e.retry_after is not None or isinstance(e, (Unconfirmed, Conflicted)):
            # The service's trouble (its disk full, the database slow), not the file's:
            # tried again later, without a note the owner would have to remove.
            return Taken("later", message=e.message, retry_after=e.retry_after or 60)
        return Taken("refused", message=e.message)
    except BaseException:
        with trio.CancelScope(shield=True), trio.move_on_after(10):
            await _release(db, watch, sha256, token)
        raise
    if await db.fetchrow("watch_accepted", watch.owner_id, sha256, token, accepted.id) is None:
        event(logging.INFO, "watch_claim_taken_over", watch=watch.id, recording=accepted.id)
    event(
        logging.INFO,
        "watch_taken",
        watch=watch.id,
        recording=accepted.id,
        created=accepted.created,
        size=accepted.size,
    )
    return Taken("record", accepted.id)


async def _release(db: Database, watch: Watch, sha256: bytes, token: uuid.UUID) -> None:
    """The claim let go: its content is not taken. Cancellation: one statement."""
    try:
        await db.execute("watch_release", watch.owner_id, sha256, token)
    except Exception as e:  # the database is away: the claim runs out by itself
        event(logging.WARNING, "watch_release_failed", watch=watch.id, error=str(e))


def too_large(config: Config, entry: Entry) -> TooLarge | None:
    """The size limit of uploads, told before a byte is read."""
    if entry.size > config.max_upload_bytes:
        return TooLarge(f"the upload is larger than {config.max_upload_bytes} bytes")
    return None
