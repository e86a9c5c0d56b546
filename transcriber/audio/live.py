"""The live decoder: one child process with the model loaded once, shared by every live
session of the daemon, one decode at a time.

Like recognition's children (`transcriber.audio.processes`) a native crash or an
out-of-memory kill ends the child, not the daemon: the pass that was running fails
(`DecoderDied`), the session it served carries on as a recording only, and the next
pass of any session starts a fresh child. Unlike them it is not niced: live passes come
before batch recognition on the CPU (the batch children run at
TRANSCRIBER_RECOGNIZER_NICE).

A pass is greedy (beam 1) with word times, over at most the live buffer (≤ 30 s, see
`transcriber.audio.agreement`). Whisper's encoder is given the buffer and `context_pad_s`
of padding, not the 30 s window it was trained on (CTranslate2 takes any length): the
encoder is most of a pass and costs the window, not the speech, so a 5 s buffer costs a
sixth. Without the padding Whisper repeats itself at the end; bench-live measured 1 s
and more to keep its words (docs/benchmarks/live.md). The protocol is JSON lines, as
recognition's: the request carries the 16 kHz audio as base64 of 16-bit samples; the
answer is `words` ([start, end, text], seconds from the buffer's start) or `error`.

    python -m transcriber.audio.live '<spec json>'
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import subprocess
import sys
import threading
import weakref
from typing import Any

import attrs
import numpy as np

from transcriber.audio.agreement import Word
from transcriber.audio.models import resolve_model
from transcriber.audio.processes import ChildSpec, child_channel
from transcriber.audio.recognize import WhisperRecognizer
from transcriber.config import Config


class DecoderDied(Exception):
    """The live child ended in the middle of a pass."""


class DecodeFailed(Exception):
    """The child answered an error (its model would not load)."""


class LiveDecoder:
    """The parent's side: `decode` blocks (a worker thread calls it); one pass at a time
    (the caller keeps the order fair, `transcriber.http.live.recognizer`)."""

    short_context = True
    """`decode` takes `context_pad_s` (`transcriber.http.live.recognizer`)."""

    def __init__(self, config: Config):
        self.config = config
        self._spec: ChildSpec | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self.started = 0
        self._running: list[subprocess.Popen[str]] = []
        # A decoder dropped without close (a test's app) leaves no child behind.
        weakref.finalize(self, _kill_all, self._running)

    def spec(self) -> ChildSpec:
        if self._spec is None:
            chosen = ChildSpec.of(self.config, resolve_model(self.config))
            self._spec = attrs.evolve(chosen, nice=0)
        return self._spec

    def warm(self) -> None:
        """Start the child and wait for its model (about a second for base), unless it
        runs already."""
        with self._lock:
            self._child()

    def _child(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "transcriber.audio.live", json.dumps(attrs.asdict(self.spec()))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.started += 1
        self._running[:] = [self._proc]
        ready = self._read(self._proc)
        if "ready" not in ready:
            self._end()
            raise DecodeFailed(ready.get("error", f"unexpected answer {ready!r}"))
        return self._proc

    def _read(self, proc: subprocess.Popen[str]) -> dict[str, Any]:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            self._end()
            raise DecoderDied(
                f"live decoder died: signal {-code}" if code < 0 else f"live decoder exited {code}"
            )
        answer: dict[str, Any] = json.loads(line)
        return answer

    def decode(
        self,
        samples: np.ndarray,
        language: str | None,
        prompt: str | None,
        context_pad_s: float | None = None,
    ) -> list[Word]:
        """`context_pad_s`: the encoder sees the buffer and this much padding (None: the
        whole 30 s window)."""
        pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        request = {
            "pcm": base64.b64encode(pcm).decode(),
            "language": language,
            "prompt": prompt,
            "context_pad_s": context_pad_s,
        }
        with self._lock:
            proc = self._child()
            assert proc.stdin is not None
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except BrokenPipeError:
                pass  # it died: the read says how
            answer = self._read(proc)
        if "words" not in answer:
            raise DecodeFailed(answer.get("error", "no words"))
        return [Word(*w) for w in answer["words"]]

    __call__ = decode

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _end(self) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        self._proc = None
        self._running.clear()

    def close(self) -> None:
        with self._lock:
            self._end()


def _kill_all(running: list[subprocess.Popen[str]]) -> None:
    for proc in running:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()


# --- The child ---------------------------------------------------------------------------


FRAMES_PER_S = 100
"""Whisper's mel frames per second of audio."""
WINDOW_FRAMES = 3000


class ShortContext:
    """The model's encoder cut to the frames a pass asks for: faster-whisper pads every
    window to 30 s before encoding it, and the encoder's cost is the window's."""

    def __init__(self, model: Any):
        self.frames: int | None = None
        self._encode = model.encode
        model.encode = self.encode

    def encode(self, features: np.ndarray) -> Any:
        if self.frames is not None and features.shape[-1] > self.frames:
            features = np.ascontiguousarray(features[..., : self.frames])
        return self._encode(features)

    def frames_for(self, samples: np.ndarray, pad_s: float | None) -> int | None:
        if pad_s is None:
            return None
        return min(WINDOW_FRAMES, math.ceil((samples.size / 16_000 + pad_s) * FRAMES_PER_S))


def words_of(
    model: Any,
    samples: np.ndarray,
    language: str | None,
    prompt: str | None,
    context: ShortContext | None = None,
    context_pad_s: float | None = None,
) -> list[list[Any]]:
    if context is not None:
        context.frames = context.frames_for(samples, context_pad_s)
    pieces, _ = model.transcribe(
        samples,
        language=language,
        initial_prompt=prompt or None,
        beam_size=1,
        temperature=0.0,
        word_timestamps=True,
        vad_filter=False,
        condition_on_previous_text=False,
    )
    return [
        [round(w.start, 3), round(w.end, 3), w.word]
        for piece in pieces
        for w in piece.words or ()
        if w.word.strip()
    ]


def child_main(argv: list[str]) -> int:
    spec = ChildSpec(**json.loads(argv[1]))
    send = child_channel(spec.nice)
    config = Config(cpu_threads=spec.cpu_threads, decoding="sequential")
    recognizer = WhisperRecognizer(
        config, model_path=spec.model_path, device=spec.device, compute_type=spec.compute_type
    )
    try:
        model = recognizer.model()
    except Exception as e:
        send({"error": f"{type(e).__name__}: {e}"})
        return 1
    context = ShortContext(model)
    send({"ready": {"model": spec.model_name, "nice": os.nice(0)}})
    for line in sys.stdin:
        request = json.loads(line)
        try:
            pcm = base64.b64decode(request["pcm"])
            samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
            words = words_of(
                model,
                samples,
                request["language"],
                request["prompt"],
                context,
                request.get("context_pad_s"),
            )
        except Exception as e:
            send({"error": f"{type(e).__name__}: {e}"})
        else:
            send({"words": words})
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv))
