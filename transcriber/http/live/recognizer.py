"""Recognizing a committed turn: its 24 kHz audio resampled to Whisper's 16 kHz and
decoded by faster-whisper in a worker thread, on one model loaded once in the serving
process (on first use) and shared by every session, one decode at a time.

A first version: the daemon's recognizers run in child processes
(`transcriber.audio.processes`), so a native crash there ends one recognition; here it
would end the server. The DESIGN's live decoder is a child process of its own; this one
runs where the socket is, and a session that falls behind waits its turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import trio

from transcriber.audio.recognize import WhisperRecognizer
from transcriber.config import Config

WHISPER_RATE = 16_000

Decode = Callable[[np.ndarray, str | None, str | None], str]
"""A turn's float32 samples at 16 kHz, its language hint and prompt → its text; runs in
a worker thread."""


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


def whisper_decode(config: Config) -> Decode:
    """The service's own model (`TRANSCRIBER_MODEL`, else the bundled base), greedy
    decoding with the language and prompt of the session."""
    recognizer = WhisperRecognizer(config)

    def decode(samples: np.ndarray, language: str | None, prompt: str | None) -> str:
        model: Any = recognizer.model()
        pieces, _ = model.transcribe(
            samples,
            language=language,
            initial_prompt=prompt,
            beam_size=1,
            vad_filter=False,
            condition_on_previous_text=False,
        )
        return " ".join(piece.text.strip() for piece in pieces if piece.text.strip())

    return decode


class LiveRecognizer:
    """Turns recognized one at a time (the CPU holds one decode well; two at once only
    slow each other down)."""

    def __init__(self, decode: Decode):
        self.decode = decode
        self.lock = trio.Lock()

    async def text(self, pcm: bytes, rate: int, language: str | None, prompt: str | None) -> str:
        """Cancellation: a cancelled wait gives up its place; a decode already running
        finishes in its thread (abandoned), its text unused."""
        samples = to_whisper(pcm, rate)
        async with self.lock:
            return await trio.to_thread.run_sync(
                self.decode, samples, language, prompt, abandon_on_cancel=True
            )
