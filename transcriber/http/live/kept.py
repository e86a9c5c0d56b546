"""A live session kept from its first second: the socket's side of its record
(transcriber.live). Before `session.created` the session is a record of its owner at
`live` (its id is the session's `record_id`); each append goes into the store as it
arrives; each completed turn's text is added to the record's live draft; the lease is
renewed while the socket lives. When the socket closes, however it closes, the record
is ended here and enters the pipeline; when this daemon loses the session (its lease
taken over, its record deleted) or the store refuses the audio, the socket is told and
closed."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

import attrs
import trio

from actors.log import event
from transcriber.live import LeaseLost, LiveRecord, endings
from transcriber.storage.blobs import StorageError

log = logging.getLogger(__name__)


@attrs.frozen
class Stop:
    """Why the session ends from this side: the `error` event's code and message, and
    the end's reason (`transcriber.live.endings`)."""

    code: str
    message: str
    reason: str


SESSION_LOST = Stop(
    "session_lost",
    "this session's record is no longer held by this server (taken over after a lost "
    "lease): the session ends, and the server that took it over keeps its audio",
    endings.LOST,
)
SESSION_DELETED = Stop(
    "session_deleted",
    "this session's record was deleted by its owner: the session ends, and its audio is not kept",
    endings.DELETED,
)
REVOKED = Stop(
    "invalid_api_key",
    "the token or page session this session was opened with no longer works (revoked, "
    "replaced or signed out): the session ends, and its audio is kept",
    endings.REVOKED,
)
STORAGE = Stop(
    "storage_unavailable",
    "the server cannot store more of this session's audio: the session ends, kept up to here",
    endings.STORAGE,
)


@attrs.define(eq=False)
class Kept:
    """A running session's record, as the socket's session uses it. `scope` is
    cancelled when the session must end from this side (`why`)."""

    record: LiveRecord
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    why: Stop | None = None

    @property
    def id(self) -> uuid.UUID:
        return self.record.id

    @property
    def gone(self) -> bool:
        """The session is no longer this daemon's to end (taken over, or deleted)."""
        return self.why is not None and self.why.reason in (endings.LOST, endings.DELETED)

    def stop(self, why: Stop) -> None:
        if self.why is None:
            self.why = why
        self.scope.cancel()

    async def write(self, pcm: bytes) -> None:
        """Cancellation: a write in progress finishes in its thread."""
        if self.why is not None:
            return
        try:
            await self.record.write(pcm)
        except StorageError as e:
            self.refused(e)

    async def text(self, transcript: str) -> None:
        """A completed turn's text into the live draft. A database that does not answer
        loses this turn's draft only (the final transcript has it).
        Cancellation: one statement, committed or not."""
        try:
            await self.record.add_text(transcript)
        except LeaseLost:
            await self.lose()
        except Exception as e:
            event(logging.WARNING, "live_text_failed", id=self.id, error=str(e))

    async def configure(self, language: str | None, prompt: str | None) -> None:
        """The session's hint and prompt on its record. A database that does not answer
        leaves them to the session's end (a daemon that takes it over then lacks them).
        Cancellation: one statement, committed or not."""
        try:
            await self.record.configure(language, prompt)
        except LeaseLost:
            await self.lose()
        except Exception as e:
            event(logging.WARNING, "live_configure_failed", id=self.id, error=str(e))

    async def lose(self) -> None:
        """The lease is gone: the session stopped, as deleted when its record is gone,
        else as taken over (a database that does not answer: taken over, the safe
        side: this daemon then writes nothing and removes nothing).
        Cancellation: a plain read."""
        try:
            deleted = not await self.record.exists()
        except Exception as e:
            event(logging.WARNING, "live_exists_failed", id=self.id, error=str(e))
            deleted = False
        event(logging.WARNING, "live_session_lost", id=self.id, deleted=deleted)
        self.stop(SESSION_DELETED if deleted else SESSION_LOST)

    async def hold(self) -> None:
        """The lease renewed until cancelled; the session stopped once it is lost."""
        await self.record.hold()
        await self.lose()

    async def watch(
        self, allowed: Callable[[], Awaitable[bool]], fit: Callable[[float], None]
    ) -> None:
        """As often as the lease is renewed, until cancelled: whether the credential the
        session was opened with still works — the session stopped (`revoked`, kept)
        once it does not — and the room the owner's quota leaves it now, given to `fit`
        (uploads of the owner meanwhile shrink it; the next append past it ends the
        session). A database that does not answer is asked again at the next round.
        Cancellation: between rounds, or inside one (plain reads)."""
        while True:
            await trio.sleep(self.record.lease_s / 3)
            try:
                still = await allowed()
                room = await self.record.room()
            except Exception as e:
                event(logging.WARNING, "live_caller_check_failed", id=self.id, error=str(e))
                continue
            if not still:
                event(logging.WARNING, "live_caller_revoked", id=self.id)
                self.stop(REVOKED)
                return
            fit(room)

    async def keep_flushing(self) -> None:
        """The audio flushed each second until cancelled; the session stopped when the
        store refuses it."""
        try:
            await self.record.keep_flushing()
        except StorageError as e:
            self.refused(e)

    def refused(self, e: StorageError) -> None:
        event(logging.ERROR, "live_audio_refused", id=self.id, error=str(e))
        self.stop(STORAGE)


__all__ = ["Kept", "Stop"]
