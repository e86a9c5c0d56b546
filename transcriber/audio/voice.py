"""Where speech starts and stops in a live stream: OpenAI's `server_vad` (a threshold on
the probability of speech, the audio kept before speech starts, the silence that ends a
turn), over 32 ms windows of 16 kHz audio.

Two judges of a window: `SileroVoice`, the Silero VAD that faster-whisper ships as ONNX
(what batch recognition cuts speech with), and `EnergyVoice`, the window's loudness
against a floor that follows the quiet. bench-live measures both; Silero is the default
(the energy judge takes breath and noise for speech and ends no turn in a noisy room).

Pure state apart from the model; the live face feeds it each append."""

from __future__ import annotations

from typing import Any, Protocol

import attrs
import numpy as np

WINDOW = 512
"""Samples a window at 16 kHz (32 ms): Silero's own."""
RATE = 16_000


class Judge(Protocol):
    def __call__(self, windows: np.ndarray) -> np.ndarray:
        """(n, WINDOW) float32 samples → n probabilities of speech."""
        ...


class SileroVoice:
    """faster-whisper's Silero (v6, ONNX, one thread), loaded once and shared: it keeps
    no state between calls."""

    def __init__(self) -> None:
        from faster_whisper.vad import get_vad_model

        self.model: Any = get_vad_model()

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        # Each call's first window sees a silent context: at 100 ms appends, one window
        # in three, which moves its probability by a few hundredths at most.
        out = np.asarray(self.model(windows.reshape(-1).copy())).reshape(-1)
        return out.astype(np.float32)


class EnergyVoice:
    """A window's loudness over the quiet: the floor follows the quietest windows (fast
    down, slowly up), and 15 dB over it is a probability of one half."""

    def __init__(self) -> None:
        self.floor_db = -60.0

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        out = np.empty(len(windows), dtype=np.float32)
        for i, w in enumerate(windows):
            db = 10 * np.log10(float(np.mean(w * w)) + 1e-10)
            rise = self.floor_db + 0.02 * (db - self.floor_db)
            self.floor_db = max(db if db < self.floor_db else rise, -70.0)
            out[i] = 1.0 / (1.0 + np.exp(-(db - self.floor_db - 15.0) / 3.0))
        return out


@attrs.frozen
class ServerVad:
    """OpenAI's `turn_detection: {type: server_vad, …}`, with its defaults."""

    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500

    def described(self) -> dict[str, Any]:
        return {
            "type": "server_vad",
            "threshold": self.threshold,
            "prefix_padding_ms": self.prefix_padding_ms,
            "silence_duration_ms": self.silence_duration_ms,
        }


@attrs.frozen
class Started:
    """Speech started at `at_ms` of the session's audio (the prefix padding included)."""

    at_ms: int


@attrs.frozen
class Stopped:
    """Speech stopped at `at_ms`: the turn ends there (its trailing silence heard)."""

    at_ms: int


@attrs.define
class TurnDetector:
    """Feeds 16 kHz audio in, says where speech starts and stops (in milliseconds of the
    session's audio)."""

    vad: ServerVad
    judge: Judge
    carry: np.ndarray = attrs.field(factory=lambda: np.zeros(0, np.float32))
    heard: int = 0
    """Samples judged so far."""
    speaking: bool = False
    quiet: int = 0
    """Samples of non-speech since the last speech, while speaking."""

    def feed(self, samples: np.ndarray) -> list[Started | Stopped]:
        audio = np.concatenate([self.carry, samples.astype(np.float32)])
        whole = len(audio) // WINDOW * WINDOW
        self.carry = audio[whole:]
        if not whole:
            return []
        probabilities = self.judge(audio[:whole].reshape(-1, WINDOW))
        found: list[Started | Stopped] = []
        silence = self.vad.silence_duration_ms * RATE // 1000
        for p in probabilities:
            self.heard += WINDOW
            if p >= self.vad.threshold:
                if not self.speaking:
                    self.speaking = True
                    start = self.heard - WINDOW - self.vad.prefix_padding_ms * RATE // 1000
                    found.append(Started(max(0, start) * 1000 // RATE))
                self.quiet = 0
            elif self.speaking:
                self.quiet += WINDOW
                if self.quiet >= silence:
                    self.speaking = False
                    self.quiet = 0
                    found.append(Stopped(self.heard * 1000 // RATE))
        return found
