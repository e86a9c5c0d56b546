"""A live session's passes over its buffer: the 24 kHz audio resampled to Whisper's
16 kHz and decoded by the live decoder (`transcriber.audio.live`: a child process with
the model loaded once, ahead of batch recognition on the CPU), one pass at a time for
every session of the daemon, in the order asked (trio's lock is fair: no session waits
behind another's two passes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import trio

from transcriber.audio.agreement import Word
from transcriber.audio.live import LiveDecoder
from transcriber.config import Config

WHISPER_RATE = 16_000

Decode = Callable[..., "Sequence[Word] | str"]
"""A buffer's float32 samples at 16 kHz, the language hint and prompt (and, when the
decoder has `short_context`, `context_pad_s`: `transcriber.audio.live.LiveDecoder`) → its words
(times from the buffer's start), or a text (a fake's: its words spread over the buffer);
runs in a worker thread."""


def to_whisper(pcm: bytes, rate: int) -> np.ndarray:
    """16-bit little-endian PCM at `rate` as float32 samples at 16 kHz, by linear
    interpolation (speech has little above 8 kHz, which a 24 kHz source could alias)."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if rate == WHISPER_RATE or samples.size == 0:
        return samples
    count = round(samples.size * WHISPER_RATE / rate)
    positions = np.arange(count, dtype=np.float64) * (rate / WHISPER_RATE)
    resampled: np.ndarray = np.interp(positions, np.arange(samples.size), samples)
    return resampled.astype(np.float32)


def whisper_decode(config: Config) -> LiveDecoder:
    """The service's own model (`TRANSCRIBER_MODEL`, else the bundled base) in the live
    child, started on the first pass."""
    return LiveDecoder(config)


def spread(text: str, seconds: float) -> list[Word]:
    """A text's words spread evenly over `seconds` (a decoder without word times)."""
    pieces = text.split()
    step = seconds / max(len(pieces), 1)
    return [Word(i * step, (i + 1) * step, f" {p}") for i, p in enumerate(pieces)]


class LiveRecognizer:
    """Passes decoded one at a time (the CPU holds one decode well; two at once only
    slow each other down)."""

    def __init__(self, decode: Decode):
        self.decode = decode
        self.lock = trio.Lock()

    async def warm(self) -> None:
        """Start the decoder's child and load its model, if it has one and has not
        (a session's first words then wait for no model). Cancellation: the load goes
        on in its thread and is used by the next pass."""
        warm = getattr(self.decode, "warm", None)
        if warm is not None:
            await trio.to_thread.run_sync(warm, abandon_on_cancel=True)

    async def words(
        self,
        samples: np.ndarray,
        language: str | None,
        prompt: str | None,
        context_pad_s: float | None = None,
    ) -> list[Word]:
        """Cancellation: a cancelled wait gives up its place; a pass already running
        finishes in its thread (abandoned), its words unused."""
        # A decoder that cuts the encoder's window says so (the live child); a fake's
        # text is the same whatever window it is given.
        short = getattr(self.decode, "short_context", False)
        extra = (context_pad_s,) if short else ()
        async with self.lock:
            found = await trio.to_thread.run_sync(
                self.decode, samples, language, prompt, *extra, abandon_on_cancel=True
            )
        if isinstance(found, str):
            return spread(found, samples.size / WHISPER_RATE)
        return list(found)

    async def text(self, pcm: bytes, rate: int, language: str | None, prompt: str | None) -> str:
        """A whole buffer's text at once (the whole-turn policy bench-live compares)."""
        words = await self.words(to_whisper(pcm, rate), language, prompt)
        return "".join(w.text for w in words).strip()
