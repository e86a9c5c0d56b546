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

import attrs
import trio

from actors.log import event
from transcriber.live import LeaseLost, LiveRecord
from transcriber.storage.blobs import StorageError

log = logging.getLogger(__name__)


@attrs.define(eq=False)
class Kept:
    """A running session's record, as the socket's session uses it. `scope` is
    cancelled when the session must end from this side (`why`: the error event's code
    and message)."""

    record: LiveRecord
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    why: tuple[str, str] | None = None

    @property
    def id(self) -> uuid.UUID:
        return self.record.id

    @property
    def lost(self) -> bool:
        return self.why is not None and self.why[0] == "session_lost"

    def stop(self, code: str, message: str) -> None:
        if self.why is None:
            self.why = (code, message)
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
            self.lose()
        except Exception as e:
            event(logging.WARNING, "live_text_failed", id=self.id, error=str(e))

    async def configure(self, language: str | None, prompt: str | None) -> None:
        """The session's hint and prompt on its record. A database that does not answer
        leaves them to the session's end (a daemon that takes it over then lacks them).
        Cancellation: one statement, committed or not."""
        try:
            await self.record.configure(language, prompt)
        except LeaseLost:
            self.lose()
        except Exception as e:
            event(logging.WARNING, "live_configure_failed", id=self.id, error=str(e))

    def lose(self) -> None:
        self.stop(
            "session_lost",
            "this session's record is no longer held by this server (deleted, or taken "
            "over after a lost lease): the session ends",
        )

    async def hold(self) -> None:
        """The lease renewed until cancelled; the session stopped once it is lost."""
        await self.record.hold()
        self.lose()

    async def keep_flushing(self) -> None:
        """The audio flushed each second until cancelled; the session stopped when the
        store refuses it."""
        try:
            await self.record.keep_flushing()
        except StorageError as e:
            self.refused(e)

    def refused(self, e: StorageError) -> None:
        event(logging.ERROR, "live_audio_refused", id=self.id, error=str(e))
        self.stop(
            "storage_unavailable",
            "the server cannot store more of this session's audio: the session ends, "
            "kept up to here",
        )


__all__ = ["Kept"]
