"""A session's live text: its turns followed one after another, each by passes over its
growing buffer (LocalAgreement-2, `transcriber.audio.agreement`) that send the words two
passes agree on as deltas, and one last pass when the turn ends (the client's commit or
the VAD's silence) that completes it.

Fair under load: a pass waits its turn at the one live decoder behind every other
session's. After each pass the stream measures the audio that arrived and was not yet
passed over (compute and waiting over audio time, summed over the stretch since the
buffer was last heard whole): past `behind_s` it takes slow steps (fewer passes, each
over more audio); past `give_up_s` even so it tells the client (`error`,
`live_transcription_stopped`) and each turn from then on is `failed`; the session goes
on as a recording only, its audio kept as any other's. A decoder that dies ends the
live text the same way."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from transcriber.audio.agreement import Agreement, Word, joined
from transcriber.http.live import events
from transcriber.http.live.recognizer import LiveRecognizer, to_whisper
from transcriber.http.live.turns import BYTES_PER_S, RATE, LiveLimits

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Awaitable[None]]

LIVE = "live"
SLOW = "slow"
STOPPED = "stopped"


class Turn:
    """One turn's audio since its buffer was last trimmed, as it arrives."""

    def __init__(self, item: str, language: str | None, prompt: str | None, base: int = 0):
        self.item = item
        self.base = base
        """The session's live audio (bytes) before this turn's."""
        self.language = language
        self.prompt = prompt
        self.pcm = bytearray()
        self.heard = 0
        """Bytes of the turn's audio received so far (counted whole: sums of 0.1 s in
        floating point fall short of the step)."""
        self.closed = False
        self.seconds = 0.0
        self.changed = trio.Event()

    @property
    def heard_s(self) -> float:
        return self.heard / BYTES_PER_S

    def add(self, pcm: bytes, keep: bool = True) -> None:
        if keep:
            self.pcm += pcm
        self.heard += len(pcm)
        self.changed.set()

    def close(self) -> None:
        self.closed = True
        self.seconds = self.heard_s
        self.changed.set()

    async def changes(self) -> None:
        await self.changed.wait()
        self.changed = trio.Event()


class Stream:
    """The session's turns in order (a channel its one task reads), and its pace."""

    def __init__(self, recognizer: LiveRecognizer, limits: LiveLimits, send: Send):
        self.recognizer = recognizer
        self.limits = limits
        self.send = send
        self.state = LIVE
        # Unbounded in count, bounded in audio: `add` stops the live text when the audio
        # waiting for passes passes twice `give_up_s`, and keeps none after that.
        self.sender, self.receiver = trio.open_memory_channel[Turn](math.inf)
        self.current: Turn | None = None
        self.added = 0
        """Bytes of the session's live audio so far (the turns', not the VAD's quiet)."""
        self.covered = 0
        """Bytes of it that the last pass heard, those of the turns before its own too."""
        self.passes = 0
        self.pass_s = 0.0
        """Seconds the session's passes took, waiting included (bench-live reads it)."""

    def open(self, item: str, language: str | None, prompt: str | None) -> Turn:
        """The turn `item`, opened at its first audio."""
        if self.current is None or self.current.item != item:
            self.current = Turn(item, language, prompt, self.added)
            self.sender.send_nowait(self.current)
        return self.current

    @property
    def behind_s(self) -> float:
        """The live audio no pass has heard yet: compute and waiting over audio time,
        summed since the passes last kept up."""
        return (self.added - self.covered) / BYTES_PER_S

    async def add(self, item: str, language: str | None, prompt: str | None, pcm: bytes) -> None:
        # A session that stopped its live text keeps no audio for it.
        self.open(item, language, prompt).add(pcm, keep=self.state != STOPPED)
        self.added += len(pcm)
        if (
            self.limits.pace.passes
            and self.state != STOPPED
            and self.behind_s > 2 * self.limits.give_up_s
        ):
            # A pass that does not come back (a decoder stuck) holds no backlog either.
            await self.stop(f"the live text fell {self.behind_s:.0f} s behind the audio")

    def close(self, item: str, language: str | None, prompt: str | None) -> None:
        self.open(item, language, prompt).close()
        self.current = None

    def drop(self) -> None:
        """The turn being spoken is cleared: no text of it, finished or not."""
        if self.current is not None:
            self.covered = max(self.covered, self.current.base + self.current.heard)
            self.current.pcm = bytearray()
            self.current.item = ""
            self.current.close()
            self.current = None

    async def run(self) -> None:
        """Follow each turn until the session ends. Cancellation: a pass running is
        abandoned with it (`LiveRecognizer.words`)."""
        try:
            await self.recognizer.warm()
        except Exception:
            log.exception("the live decoder did not start")  # the first pass says so
        async for turn in self.receiver:
            await self.follow(turn)

    async def follow(self, turn: Turn) -> None:
        pace = self.limits.pace
        agreement = pace.agreement()
        passed_s = 0.0
        """The turn's audio up to the end of the last pass."""
        sent = ""
        took_s = 0.0
        """The last pass's time, waiting for the decoder included."""
        while pace.passes and self.state != STOPPED:
            step = pace.step_s if took_s <= pace.step_s else pace.busy_step_s
            if self.state != LIVE:
                step = self.limits.slow_step_s
            while not turn.closed and turn.heard_s - passed_s < step - 1e-9:
                await turn.changes()
            if turn.closed:
                break
            upto = turn.heard_s
            buffer_s = len(turn.pcm) / BYTES_PER_S
            started = trio.current_time()
            words = await self.words(turn, agreement)
            if words is None:
                break
            took_s = trio.current_time() - started
            passed_s = upto
            self.covered = max(self.covered, turn.base + round(upto * BYTES_PER_S))
            if pace.margin_s is None:
                agreement.insert(words)
            else:
                agreement.insert_heard(words, buffer_s, pace.margin_s)
            sent = await self.deltas(turn, agreement, sent)
            buffer_s = len(turn.pcm) / BYTES_PER_S
            cut = agreement.trim_at(buffer_s) or agreement.overflow(buffer_s)
            if cut:
                del turn.pcm[: int(cut * RATE) * 2]
                agreement.trimmed(cut)
                sent = await self.deltas(turn, agreement, sent)
            await self.pace()
        while not turn.closed:
            await turn.changes()
        if not turn.item:
            return  # cleared
        if not turn.pcm and self.state != STOPPED:
            await self.send(events.completed(turn.item, sent, turn.seconds))
            return
        if self.state == STOPPED:
            await self.send(events.failed(turn.item, "live transcription stopped: see the error"))
            return
        words = await self.words(turn, agreement)
        if words is None:
            await self.send(events.failed(turn.item, "live transcription stopped: see the error"))
            return
        self.covered = max(self.covered, turn.base + turn.heard)
        agreement.finish(words)
        sent = await self.deltas(turn, agreement, sent)
        await self.send(events.completed(turn.item, sent, turn.seconds))
        await self.pace()

    async def words(self, turn: Turn, agreement: Agreement) -> list[Word] | None:
        """A pass over the turn's buffer; None when the decoder failed (the live text
        stops)."""
        prompt = " ".join(p for p in (turn.prompt, agreement.prompt()) if p) or None
        started = trio.current_time()
        try:
            found = await self.recognizer.words(
                to_whisper(bytes(turn.pcm), RATE),
                turn.language,
                prompt,
                self.limits.pace.context_pad_s,
            )
        except Exception:
            log.exception("a live pass failed")
            await self.stop("the live decoder failed")
            return None
        self.passes += 1
        self.pass_s += trio.current_time() - started
        return found

    async def deltas(self, turn: Turn, agreement: Agreement, sent: str) -> str:
        """A delta of the words confirmed since `sent`; the turn's text sent so far."""
        text = joined(agreement.confirmed)
        if turn.item and text != sent and text.startswith(sent):
            await self.send(events.delta(turn.item, text[len(sent) :]))
            return text
        return sent

    async def pace(self) -> None:
        behind_s = self.behind_s
        if self.state == LIVE and behind_s > self.limits.behind_s:
            log.info("a live session fell %.1f s behind: slow steps", behind_s)
            self.state = SLOW
        elif self.state == SLOW and behind_s > self.limits.give_up_s:
            await self.stop(f"the live text fell {behind_s:.0f} s behind the audio")
        elif self.state == SLOW and behind_s < self.limits.behind_s / 2:
            self.state = LIVE

    async def stop(self, why: str) -> None:
        if self.state == STOPPED:
            return
        self.state = STOPPED
        await self.send(
            events.error(
                "live_transcription_stopped",
                f"{why}: the session goes on as a recording only; its audio is kept and "
                "transcribed when it ends",
                kind="server_error",
            )
        )
