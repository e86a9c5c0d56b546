"""Accepting a recording, whichever door it comes by: the owner's room is measured, the
bytes go durably into the store, and the record commits at `received` with its
`accepted` event — once per request, however often it is sent."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import attrs
import trio

from transcriber.db.database import Database
from transcriber.intake.refusals import Conflicted, KeyReused, Unconfirmed
from transcriber.intake.room import Limits, audio_fits, room_for, room_refusals
from transcriber.intake.sink import Described, Sink
from transcriber.records.settings import owner_settings, with_defaults
from transcriber.storage.blobs import Blobs, Incoming

ACCEPT_TIMEOUT_S = 30.0

Fill = Callable[[Sink], Awaitable[Described]]
"""A door's part: write the recording's bytes into the sink, say what it is."""


@attrs.frozen
class Accepted:
    """The record of a recording: made now (`created`), or the first one of the same
    request; `size` is the bytes received."""

    id: uuid.UUID
    created: bool
    size: int


async def accept(
    db: Database,
    blobs: Blobs,
    owner: int,
    fill: Fill,
    *,
    via: str,
    limits: Limits | None = None,
    key: str | None = None,
    dedupe: bool = True,
) -> Accepted:
    """The record of `owner`'s recording that `fill` writes into the store, committed
    at `received` and journaled `accepted` with `via`, the door it came by.

    `limits`: the bounds of the door (None: none, as on the command line) — the owner's
    quota and the disk's room are measured before anything is read (NoRoom), the bytes
    bounded as they come (TooLarge, or NoRoom when the quota or the disk set the bound),
    and the audio's length checked before the commit (TooLong). `key`, the owner's
    Idempotency-Key: used before by the same request (the same fingerprint: what
    `fill` said, the size and the bytes), the first record, its body only compared, not
    stored; by another, KeyReused. Without a key and with `dedupe`, the same request
    that made a record before names that one: a client's retry after a 5xx, a timeout
    or a cut connection never makes a second.

    The bytes are durable (fsynced, or the object complete) before the record commits.
    Cancellation: before the commit nothing is kept; the commit runs shielded (with a
    deadline), so a shutdown never leaves it unknown whether the record committed; if
    it still is unknown (Unconfirmed, or the connection broke), the file stays and the
    startup sweep decides.
    """
    first = None if key is None else await _by_key(db, owner, key)
    if first is not None:
        replay = Sink(None, None if limits is None else limits.max_bytes)
        if not _same_request(first, replay.fingerprint(await fill(replay))):
            raise _key_reused(str(key))
        return Accepted(first["id"], False, replay.size)
    room = None if limits is None else await room_for(db, blobs, owner, limits)
    refusals = contextlib.nullcontext() if room is None else room_refusals(room, owner)
    with refusals:
        async with blobs.incoming() as into:
            sink = Sink(into, None if room is None else room.limit)
            told = await fill(sink)
            await into.finish()
            if room is not None:
                await audio_fits(room, into.ref)
            fingerprint = sink.fingerprint(told) if dedupe or key is not None else None
            # The owner's defaults fill in what the request did not say, after its
            # fingerprint: the same request sent again is the same whatever the settings.
            language, options, used = with_defaults(
                await owner_settings(db, owner), told.language, told.options
            )
            told = attrs.evolve(told, language=language, options=options)
            return await _commit(db, owner, into, told, key, fingerprint, via, used)


COMMIT_ATTEMPTS = 3
"""How often the record is inserted when the first record of the same request goes
(deleted by its owner) between a conflict and its read: each time the conflict is gone,
so the next insert makes the record — unless yet another same request beat it again."""


async def _commit(
    db: Database,
    owner: int,
    into: Incoming,
    told: Described,
    key: str | None,
    fingerprint: bytes | None,
    via: str,
    used: tuple[str, ...] = (),
) -> Accepted:
    """Commit the record of the received `into`; the first one instead when `key` was
    used meanwhile by the same request (KeyReused by another), or without a key the
    same request (`fingerprint`) made a record before. When that first record is
    deleted between the conflict and its read, this request makes a record of its own
    (Conflicted if the race repeats past COMMIT_ATTEMPTS)."""
    for _ in range(COMMIT_ATTEMPTS):
        rid = await _insert(db, owner, into, told, key, fingerprint, via, used)
        if rid is not None:
            into.keep()
            return Accepted(rid, True, into.size)
        # Another recording with this key, or without one the same request, committed
        # first: it is named instead and this file goes.
        if key is None:
            assert fingerprint is not None  # without either nothing conflicts
            first = await db.fetchrow("recording_by_fingerprint", owner, fingerprint)
        else:
            first = await _by_key(db, owner, key)
        if first is not None:
            if key is not None and not _same_request(first, fingerprint):
                raise _key_reused(key)
            return Accepted(first["id"], False, into.size)
        # The conflict was real when the insert ran, and the row is gone now: its owner
        # deleted it in between (the deletion commits apart from this statement, so
        # READ COMMITTED lets it land there). Nothing holds the key or the fingerprint
        # any longer: insert again.
    raise Conflicted(
        "the first record of this same request was being deleted while this one came "
        "in; send it again",
    )


async def _insert(
    db: Database,
    owner: int,
    into: Incoming,
    told: Described,
    key: str | None,
    fingerprint: bytes | None,
    via: str,
    used: tuple[str, ...] = (),
) -> uuid.UUID | None:
    """The id of the record inserted for `into` (`used`: the owner's settings that
    filled in its options), or None when its key or fingerprint
    conflicts with a record committed first.

    Cancellation: shielded with a deadline; a cancel or a broken connection keeps the
    file (the startup sweep decides), an unconfirmed commit is Unconfirmed.
    """
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + ACCEPT_TIMEOUT_S
        try:
            rid: uuid.UUID | None = await db.fetchval(
                "accept_upload",
                owner,
                told.filename,
                into.size,
                into.ref,
                told.language,
                told.title,
                key,
                told.options.to_json(),
                fingerprint,
                via,
                list(used),
            )
        except asyncpg.PostgresError:
            raise  # refused by the database: surely no record; the file goes
        except BaseException:
            into.keep()
            raise
    if scope.cancelled_caught:
        into.keep()
        raise Unconfirmed("the database did not confirm the upload in time")
    return rid


async def _by_key(db: Database, owner: int, key: str) -> Any:
    """The owner's record made with Idempotency-Key `key` (`id`, and the `fingerprint`
    of its request), or None. Cancellation: a plain read."""
    return await db.fetchrow("recording_by_key", owner, key)


def _same_request(first: Any, fingerprint: bytes | None) -> bool:
    """Whether a request with `fingerprint` repeats the first one of its key (`first`, a
    `recording_by_key` row). A record made before fingerprints were kept counts as the
    same."""
    return first["fingerprint"] is None or bytes(first["fingerprint"]) == fingerprint


def _key_reused(key: str) -> KeyReused:
    return KeyReused(
        f"the Idempotency-Key {key!r} was used before with a different "
        "request (title, language, task, prompt, filename or content); "
        "send a new recording with a new key",
    )
