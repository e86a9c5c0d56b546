"""A live session as a record of its owner from its first second (DESIGN: "Live
sessions are records from their first second").

`start` makes the record at the milestone `live` (journaled `accepted`, `via: live`),
which no step starts from, so no worker claims it while the session runs; its audio goes
into the store as it arrives (transcriber.live.audio); the daemon serving the socket
holds a lease on the session (a token and an expiry, renewed every third of
TRANSCRIBER_LIVE_LEASE_S, as a claim's) and every write it makes is fenced by the token.
The completed turns' text is kept on the session as the live draft. When the session
ends, `LiveRecord.end` completes the audio into one WAV and moves the record on to
`received` (journaled `live_ended`): the pipeline transcribes it like an upload, and
its transcript replaces the draft. A session that sent no audio leaves nothing: its
record is deleted, journaled.

A daemon that dies mid-session stops renewing: once the lease has run out, any daemon's
sweep (`keep_finishing`) takes the session over with a new token and ends it the same
way, journaled `live_ended` with `taken_over` (why a session ended: `endings`). The
first daemon, if it was only cut off, finds its token gone at its next renewal and
closes the socket."""

from __future__ import annotations

import logging
import math
import random
import sys
import uuid
from typing import Any, NoReturn

import attrs
import trio

from actors.log import event
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import Limits
from transcriber.intake.room import room_for
from transcriber.live import endings
from transcriber.live.audio import FLUSH_S, HEADER_BYTES, LiveAudio, completed, open_live_audio
from transcriber.options import RecognitionOptions
from transcriber.records.deletion import remove_bytes
from transcriber.storage.blobs import Blobs
from transcriber.storage.configured import blobs_of

FILENAME = "live.wav"
MAX_TEXT_CHARS = 200_000
"""The live draft's bound: four hours of fast speech is about 150 000 characters."""
TAKE_BATCH = 20
SWEEP_JITTER = 0.5


class LeaseLost(Exception):
    """The session is no longer this daemon's: its lease was taken over, the session
    ended, or its record was deleted."""


@attrs.define(eq=False)
class LiveRecord:
    """A running session's record, held by this daemon."""

    db: Database
    blobs: Blobs
    id: uuid.UUID
    token: uuid.UUID
    audio: LiveAudio
    rate: int
    lease_s: float
    room_s: float = math.inf
    """Seconds of audio the owner's quota had left at the session's start (bytes kept and
    hours of audio, whichever is fewer): the session ends there (`endings.QUOTA`);
    measured again while it runs (`room`)."""
    quota: Quota | None = None
    ended: bool = False
    due: trio.Event = attrs.field(factory=trio.Event)
    """Set when a second of audio waits for its flush."""

    async def write(self, pcm: bytes) -> None:
        """The samples appended to the session's audio, durable within FLUSH_S of audio
        or of time (with `keep_flushing` running). Raises StorageError (DiskReserve
        too): the audio before it stays kept. Cancellation: a write or a flush in
        progress finishes in its thread."""
        await self.audio.write(pcm)
        second = FLUSH_S * self.rate * 2
        unflushed = self.audio.written - self.audio.durable
        if unflushed >= 2 * second:
            # The store fell behind (or a client sends faster than real time): the
            # append waits for it, so neither memory nor what a kill loses grows.
            await self.audio.flush()
        elif unflushed >= second:
            self.due.set()

    async def add_text(self, text: str) -> None:
        """A completed turn's text added to the live draft; LeaseLost if the session is
        no longer this daemon's. Cancellation: one statement, committed or not."""
        text = text.strip()
        if not text:
            return
        if await self.db.fetchval("live_text", self.id, self.token, text, MAX_TEXT_CHARS) is None:
            raise LeaseLost(str(self.id))

    async def configure(self, language: str | None, prompt: str | None) -> None:
        """The session's language hint and prompt, on its record at once (a daemon that
        takes the session over ends it with them); LeaseLost if the session is no
        longer this daemon's. Cancellation: one statement, committed or not."""
        found = await self.db.fetchval(
            "live_configure", self.id, self.token, language, _options(prompt)
        )
        if found is None:
            raise LeaseLost(str(self.id))

    async def renew(self, now: Any = None) -> None:
        """The lease renewed, with the audio durable so far; LeaseLost when it is gone.
        Cancellation: one statement, committed or not."""
        renewed = await self.db.fetchval(
            "live_renew", self.id, self.token, self.lease_s, self.audio.durable, now
        )
        if renewed is None:
            raise LeaseLost(str(self.id))

    async def hold(self) -> None:
        """Renew the lease every third of it until cancelled; returns when the lease is
        lost (its renewal refused, or none got through for a whole lease: another
        daemon may have taken the session over). Cancellation: ends it, between
        renewals or inside one (committed or not)."""
        every = self.lease_s / 3
        held_until = trio.current_time() + self.lease_s
        while True:
            await trio.sleep(every)
            try:
                await self.renew()
            except LeaseLost:
                return
            except Exception as e:  # the database away for a moment
                event(logging.WARNING, "live_renew_failed", id=self.id, error=str(e))
                if trio.current_time() >= held_until:
                    return
            else:
                held_until = trio.current_time() + self.lease_s

    async def keep_flushing(self) -> None:
        """Flush the audio every FLUSH_S until cancelled, apart from the appends: an
        fsync or a chunk's PUT that stalls (seen up to 1.6 s on a loaded disk) never
        holds the socket's reading up. Raises StorageError when the store refuses (the
        session then ends, kept up to the last flush). Cancellation: ends it between
        flushes, or after the flush in progress (its thread runs to its end)."""
        while True:
            with trio.move_on_after(FLUSH_S):
                await self.due.wait()
            self.due = trio.Event()
            await self.audio.flush()

    async def room(self) -> float:
        """Seconds of audio the session may hold in all, as the owner's quota stands now
        (their other records, uploads meanwhile too); the start's room without a quota.
        Cancellation: a plain read."""
        if self.quota is None:
            return self.room_s
        return await self.quota.room(self.db, self.id)

    async def exists(self) -> bool:
        """Whether the session's record is still there: a lease lost with its record
        gone was its owner's deletion, not another daemon's taking it over.
        Cancellation: a plain read."""
        return await self.db.fetchval("live_record_exists", self.id) is not None

    async def abandon(self) -> None:
        """The session lost (LeaseLost): its audio let go, for its new holder to end; or,
        when its record was deleted, what this daemon wrote after the deletion removed
        the audio removed too. Raises StorageError, or the database's errors (the
        deletion's bytes then stay where the deletion left them).
        Cancellation: the removal is shielded (`Blobs.remove`)."""
        self.ended = True
        self.audio.release()
        if await self.db.fetchval("live_record_exists", self.id) is None:
            await self.blobs.remove(self.audio.ref)

    async def end(
        self, reason: str, language: str | None = None, prompt: str | None = None
    ) -> uuid.UUID | None:
        """The session ended: its audio flushed and completed, its record at `received`
        (its id), or deleted when it holds no audio (None); with the language and prompt
        the session ended with. LeaseLost when the session is no longer this daemon's.
        Raises StorageError when the store cannot complete it: the lease then runs out
        and a sweep finishes it.

        Cancellation: the caller shields it (a client's going away must not cancel
        it); cancelled anyway, the lease runs out and a sweep finishes it."""
        self.ended = True
        await self.audio.aclose()
        return await finish(
            self.db,
            self.blobs,
            self.id,
            self.token,
            self.audio.ref,
            self.rate,
            {"reason": reason},
            language,
            _options(prompt),
        )


@attrs.frozen
class Quota:
    """An owner's quota as a session measures its room against it."""

    owner: int
    max_bytes: int
    max_audio_s: float
    rate: int

    async def room(self, db: Database, record_id: uuid.UUID) -> float:
        """Seconds of audio session `record_id` may hold in all: what the owner's other
        records leave of their bytes (its WAV's header counted) and of their hours,
        whichever is fewer. Cancellation: a plain read."""
        row = await db.fetchrow("live_owner_room", self.owner, record_id)
        assert row is not None  # an aggregate: always one row
        stored, audio_s = int(row["stored_bytes"]), float(row["audio_s"])
        by_bytes = (self.max_bytes - stored - HEADER_BYTES) / (self.rate * 2)
        return max(0.0, min(self.max_audio_s - audio_s, by_bytes))


def _options(prompt: str | None) -> dict[str, Any] | None:
    """The record's recognition options of a session with `prompt` (None: defaults)."""
    options = RecognitionOptions(prompt=prompt)
    return None if options == RecognitionOptions() else options.to_json()


async def start(db: Database, config: Config, owner: int, rate: int, now: Any = None) -> LiveRecord:
    """A new session's record of `owner` at `live`, its audio's place in the store, this
    daemon's lease on it, and the room the owner's quota leaves it. Raises NoRoom when
    the owner's quota (or the disk's reserve) has no room, StorageError when the store
    cannot take the audio.

    Cancellation: before the record's commit nothing stays (the audio's place is
    removed); the commit itself is one statement."""
    blobs = blobs_of(config)
    # An upload's size bound is not a session's (TRANSCRIBER_MAX_DURATION_S is); the
    # owner's quota and the disk's reserve are.
    await room_for(db, blobs, owner, Limits.of(config, max_bytes=sys.maxsize))
    quota = Quota(owner, config.owner_max_bytes, config.owner_max_audio_hours * 3600, rate)
    record_id, token = uuid.uuid4(), uuid.uuid4()
    room_s = await quota.room(db, record_id)
    audio = await open_live_audio(blobs, record_id, rate)
    try:
        await db.fetchval(
            "live_start",
            record_id,
            owner,
            FILENAME,
            audio.ref,
            None,
            None,
            token,
            config.live_lease_s,
            rate,
            now,
        )
    except BaseException:
        with trio.CancelScope(shield=True):
            await audio.discard()
        raise
    event(logging.INFO, "live_started", id=record_id, owner=owner)
    return LiveRecord(db, blobs, record_id, token, audio, rate, config.live_lease_s, room_s, quota)


async def finish(
    db: Database,
    blobs: Blobs,
    record_id: uuid.UUID,
    token: uuid.UUID,
    ref: str,
    rate: int,
    detail: dict[str, Any],
    language: str | None = None,
    options: dict[str, Any] | None = None,
) -> uuid.UUID | None:
    """End session `record_id` held with `token`: its audio at `ref` completed and its
    record moved on to `received`, or deleted when it holds no audio. LeaseLost when the
    token is no longer the session's. Cancellation: see `LiveRecord.end`."""
    async with completed(blobs, ref, rate) as done:
        if done.samples == 0:
            rows = await db.fetch("live_empty", record_id, token, {"by": "live", **detail})
            if not rows:
                raise LeaseLost(str(record_id))
            await remove_bytes(db, blobs, rows)
            event(logging.INFO, "live_empty", id=record_id)
            return None
        seconds = done.samples / (rate * 2)
        ended = await db.fetchval(
            "live_end",
            record_id,
            token,
            done.ref,
            done.size,
            {**detail, "audio_s": round(seconds, 3)},
            language,
            options,
        )
        if ended is None:
            raise LeaseLost(str(record_id))
        done.keep()
    if done.chunks_removed:
        await db.execute("live_chunks_removed", record_id)
    event(logging.INFO, "live_ended", id=record_id, audio_s=round(seconds, 3), **detail)
    return record_id


async def finish_expired(
    db: Database, blobs: Blobs, lease_s: float, now: Any = None
) -> list[uuid.UUID]:
    """Every running session whose lease ran out (its daemon died, or lost the
    database for a whole lease), taken over and ended: the ids of the records that
    entered the pipeline. A session another daemon takes first is not this one's; one
    whose store is away is left (its new lease runs out, and a later round tries).

    Cancellation: between sessions or inside one (its lease then runs out again)."""
    done: list[uuid.UUID] = []
    while rows := await db.fetch("live_take_expired", lease_s, now, TAKE_BATCH):
        for r in rows:
            try:
                rid = await finish(
                    db,
                    blobs,
                    r["recording_id"],
                    r["token"],
                    r["audio_ref"],
                    r["rate"],
                    {"reason": endings.TAKEN_OVER, "taken_over": True},
                )
            except LeaseLost:
                continue
            except Exception as e:
                event(logging.WARNING, "live_finish_failed", id=r["recording_id"], error=str(e))
                continue
            if rid is not None:
                done.append(rid)
        if len(rows) < TAKE_BATCH:
            break
    return done


async def remove_chunks_left(db: Database, blobs: Blobs, before: Any = None) -> int:
    """The chunk objects of ended sessions whose daemon died between storing the whole
    and removing them; how many sessions' were removed. Raises StorageError.
    Cancellation: between sessions or inside one (removing again is harmless)."""
    rows = await db.fetch("live_chunks_left", before, TAKE_BATCH)
    for r in rows:
        await blobs.remove(r["audio_ref"])
        await db.execute("live_chunks_removed", r["recording_id"])
    return len(rows)


async def keep_finishing(
    db: Database,
    store: Blobs,
    lease_s: float,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """The daemon's sweep of sessions whose daemon died: `finish_expired` at once
    (`task_status.started` after it), then every half lease, jittered. Every daemon
    runs it, with or without the API or workers. A round that fails (the database
    away) is logged and tried again at the next.

    Cancellation: ends it between rounds or inside one, as `finish_expired` says."""
    every = max(lease_s / 2, 0.1)
    while True:
        try:
            finished = await finish_expired(db, store, lease_s)
            await remove_chunks_left(db, store)
        except Exception as e:  # the next round tries again
            event(logging.WARNING, "live_sweep_failed", error=str(e))
        else:
            if finished:
                event(logging.WARNING, "live_taken_over", records=len(finished))
        task_status.started()
        task_status = trio.TASK_STATUS_IGNORED
        await trio.sleep(every * random.uniform(1 - SWEEP_JITTER, 1 + SWEEP_JITTER))
