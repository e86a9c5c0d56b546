"""Recognition in child processes, one per worker slot, kept warm with the model loaded.

The native engine cannot hurt the daemon from there: a crash or an out-of-memory kill
of a child ends only the attempt it was working on ("recognizer process died: signal
9"), and the next attempt gets a fresh child. Children run at a lower CPU priority
(TRANSCRIBER_RECOGNIZER_NICE) than the daemon, so the API and the queue answer at once
while recognitions keep every core busy.

The protocol is JSON lines: the parent writes one request a line to the child's stdin;
the child answers on its own copy of stdout (fd 1 itself is pointed at stderr, so
nothing the engine prints can corrupt the protocol) with `progress` and `draft` lines (a
recognized segment's text as it comes), then one
`transcript` or `error` line. A request with `diarize` asks who spoke instead
(transcriber.audio.speakers, its network loaded on first use): answered by one
`diarization` or `error` line. The child first says `ready` (or `error` when its model
does not load). It exits when its stdin closes (the daemon ended) or its parent is gone.

    python -m transcriber.audio.processes '<spec json>'
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import attrs

from actors.log import event
from transcriber.audio.devices import device_for
from transcriber.audio.models import ResolvedModel, resolve_model
from transcriber.audio.recognize import Transcript, WhisperRecognizer
from transcriber.audio.speakers import Diarization, Turn
from transcriber.audio.speakers_model import WeightsMissing
from transcriber.audio.threads import Control, Stopped
from transcriber.config import Config
from transcriber.options import RecognitionOptions
from transcriber.speaker_options import SpeakersOption

REPORT_EVERY_S = 0.25


class RecognizerDied(Exception):
    """The child ended in the middle of an attempt (a native crash, an OOM kill)."""


class RecognitionFailed(Exception):
    """The child reported an error (the model would not load, the audio could not be
    read): its message is the child's own."""


@attrs.frozen
class ChildSpec:
    """What a child needs to load its model: sent as its one argument."""

    model_path: str
    model_name: str
    device: str
    compute_type: str
    cpu_threads: int
    decoding: str
    batch_size: int
    nice: int

    @classmethod
    def of(cls, config: Config, model: ResolvedModel) -> ChildSpec:
        choice = device_for(config)
        return cls(
            str(model.path),
            model.name,
            choice.device,
            choice.compute_type,
            config.cpu_threads,
            config.decoding,
            config.batch_size,
            config.recognizer_nice,
        )


class _Child:
    """One child process, seen from the parent; used by one thread at a time."""

    def __init__(self, spec: ChildSpec):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "transcriber.audio.processes", json.dumps(attrs.asdict(spec))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.ready: dict[str, Any] | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: the next read says how

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RecognizerDied(self.death())
        message: dict[str, Any] = json.loads(line)
        return message

    def death(self) -> str:
        code = self.proc.wait()
        self.close()
        if code < 0:
            return f"recognizer process died: signal {-code}"
        return f"recognizer process exited with code {code}"

    def kill(self) -> None:
        """From any thread: ends the child at once; its reader sees the end of its
        output."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def close(self) -> None:
        self.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()


def _close_all(children: list[_Child]) -> None:
    while children:
        children.pop().close()


class ProcessRecognizer:
    """The recognizer the service uses: each call borrows a warm child (or starts one),
    and gives it back when the child answered. Shared by the workers; as many children
    as recognitions run at once."""

    def __init__(self, config: Config):
        self.config = config
        self._lock = threading.Lock()
        self._idle: list[_Child] = []
        self._spec: ChildSpec | None = None
        self.started = 0
        """Children started so far (a restart after a crash counts)."""
        weakref.finalize(self, _close_all, self._idle)

    def spec(self) -> ChildSpec:
        """Resolves the model (joining or fetching it on first use) and the device once.
        Blocking."""
        with self._lock:
            if self._spec is None:
                self._spec = ChildSpec.of(self.config, resolve_model(self.config))
                event(
                    logging.INFO,
                    "recognizer_chosen",
                    model=self._spec.model_name,
                    path=self._spec.model_path,
                    device=self._spec.device,
                    compute_type=self._spec.compute_type,
                    decoding=self._spec.decoding,
                    batch_size=self._spec.batch_size,
                    cpu_threads=self._spec.cpu_threads,
                )
            return self._spec

    @property
    def name(self) -> str:
        return self.spec().model_name

    def warm(self, n: int, *, wait: bool = True) -> None:
        """Start `n` children, and wait until their models are loaded unless `wait` is
        false: then they load meanwhile, and a recognition that takes one before it is
        ready waits for it there. Blocking."""
        children = [self._start() for _ in range(n)]
        if wait:
            for child in children:
                self._await_ready(child, None)
        with self._lock:
            self._idle.extend(children)

    def close(self) -> None:
        with self._lock:
            _close_all(self._idle)

    def idle_pids(self) -> list[int]:
        with self._lock:
            return [c.pid for c in self._idle]

    def transcribe(
        self,
        audio: Path,
        duration_s: float,
        language: str | None,
        control: Control | None = None,
        options: RecognitionOptions = RecognitionOptions(),
    ) -> Transcript:
        """Blocking, in a worker thread. A stop of `control` kills the child at once (the
        model reloads in a fresh one for the next attempt: about a second for base),
        so the CPU is free within moments."""
        answer = self._ask(
            {
                "audio": str(audio),
                "duration_s": duration_s,
                "language": language,
                "options": options.to_json(),
            },
            "transcript",
            control,
        )
        return Transcript.from_json(answer)

    def diarize(
        self,
        audio: Path,
        duration_s: float,
        speakers: SpeakersOption,
        control: Control | None = None,
    ) -> Diarization:
        """Who spoke when in `audio`, in a child as recognition is (a crash ends only this
        attempt; a stop kills the child). Raises WeightsMissing when the speaker model's
        package is not installed. Blocking, in a worker thread."""
        answer = self._ask(
            {
                "diarize": {
                    "audio": str(audio),
                    "duration_s": duration_s,
                    "speakers": speakers.text,
                }
            },
            "diarization",
            control,
        )
        return Diarization(
            [Turn(*t) for t in answer["turns"]],
            answer["speakers"],
            answer["speech_s"],
            {int(k): v for k, v in answer.get("voices", {}).items()},
        )

    def _ask(self, request: dict[str, Any], key: str, control: Control | None) -> Any:
        control = control or Control()
        child = self._take(control)
        control.on_stop(child.kill)
        try:
            self._await_ready(child, control)
            child.send(request)
            while True:
                answer = self._read(child, control)
                if "progress" in answer:
                    control.report(answer["progress"])
                elif "draft" in answer:
                    control.draft(answer["draft"])
                elif key in answer:
                    self._give_back(child)
                    return answer[key]
                else:
                    self._give_back(child)
                    if answer.get("missing_weights"):
                        raise WeightsMissing(answer["error"])
                    raise RecognitionFailed(answer["error"])
        except BaseException:
            if child.proc.returncode is None and child not in self._idle:
                child.close()
            raise

    def _take(self, control: Control) -> _Child:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        control.check()
        return self._start()

    def _start(self) -> _Child:
        child = _Child(self.spec())
        self.started += 1
        return child

    def _give_back(self, child: _Child) -> None:
        with self._lock:
            self._idle.append(child)

    def _await_ready(self, child: _Child, control: Control | None) -> None:
        if child.ready is not None:
            return
        answer = self._read(child, control)
        if "ready" not in answer:
            child.close()
            raise RecognitionFailed(answer.get("error", f"unexpected answer {answer!r}"))
        child.ready = answer["ready"]
        event(logging.INFO, "recognizer_ready", pid=child.pid, **child.ready)

    @staticmethod
    def _read(child: _Child, control: Control | None) -> dict[str, Any]:
        try:
            return child.read()
        except RecognizerDied:
            if control is not None and control.stopped:
                raise Stopped from None  # killed on purpose
            raise


# --- The child ---------------------------------------------------------------------------


class _Reporter(Control):
    """The child's control: progress goes to the parent at most every REPORT_EVERY_S,
    each draft (a recognized segment's text) as it comes."""

    def __init__(self, send: Any):
        super().__init__()
        self._send = send
        self._last = 0.0

    def report(self, fraction: float) -> None:
        now = time.monotonic()
        if now - self._last >= REPORT_EVERY_S:
            self._last = now
            self._send({"progress": fraction})

    def draft(self, text: str) -> None:
        # At once: a segment is a few seconds of speech at least, and a batch's segments
        # come together at its end (a throttle would hold them until the next batch).
        self._send({"draft": text})


def _exit_when_orphaned(parent: int) -> None:
    """A child whose daemon was killed must not recognize on for nobody."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def child_channel(nice: int) -> Callable[[dict[str, Any]], None]:
    """A child's start: its priority lowered by `nice`, fd 1 kept for the protocol and
    pointed at stderr (nothing the engine prints can corrupt a line), a watch that ends
    it when its parent is gone; the function that sends one protocol line."""
    if nice:
        os.nice(nice)
    out: IO[str] = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message, ensure_ascii=False) + "\n")
        out.flush()

    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    return send


def child_main(argv: list[str]) -> int:
    spec = ChildSpec(**json.loads(argv[1]))
    send = child_channel(spec.nice)
    config = Config(
        cpu_threads=spec.cpu_threads, decoding=spec.decoding, batch_size=spec.batch_size
    )
    recognizer = WhisperRecognizer(
        config, model_path=spec.model_path, device=spec.device, compute_type=spec.compute_type
    )
    recognizer.name = spec.model_name
    try:
        recognizer.model()
    except Exception as e:
        send({"error": f"{type(e).__name__}: {e}"})
        return 1
    send(
        {
            "ready": {
                "model": spec.model_name,
                "device": spec.device,
                "compute_type": spec.compute_type,
                "nice": os.nice(0),
            }
        }
    )
    diarizer = _Diarizer(spec.cpu_threads)
    for line in sys.stdin:
        request = json.loads(line)
        if "diarize" in request:
            diarizer.answer(request["diarize"], send)
            continue
        try:
            transcript = recognizer.transcribe(
                Path(request["audio"]),
                request["duration_s"],
                request["language"],
                _Reporter(send),
                RecognitionOptions.from_json(request["options"]),
            )
        except Exception as e:
            send({"error": f"{type(e).__name__}: {e}"})
        else:
            send({"transcript": transcript.to_json()})
    return 0


class _Diarizer:
    """The child's speaker model, loaded on the first diarization it is asked for."""

    def __init__(self, threads: int) -> None:
        self._net: Any = None
        self._threads = threads

    def answer(self, request: dict[str, Any], send: Any) -> None:
        from transcriber.audio.speakers import diarize
        from transcriber.audio.speakers_model import CamPlusPlus

        try:
            if self._net is None:
                self._net = CamPlusPlus.load()
            result = diarize(
                Path(request["audio"]),
                SpeakersOption.parse(request["speakers"]),
                request["duration_s"],
                _Reporter(send),
                self._net,
                self._threads,
            )
        except WeightsMissing as e:
            send({"error": str(e), "missing_weights": True})
        except Exception as e:
            send({"error": f"{type(e).__name__}: {e}"})
        else:
            send(
                {
                    "diarization": {
                        "turns": [[t.start, t.end, t.speaker] for t in result.turns],
                        "speakers": result.speakers,
                        "speech_s": result.speech_s,
                        "voices": {str(k): v for k, v in result.voices.items()},
                    }
                }
            )


if __name__ == "__main__":
    sys.exit(child_main(sys.argv))
