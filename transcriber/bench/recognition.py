"""The audio benchmark, in one run on the same generated files: raw faster-whisper
(sequential, and batched with its VAD) against the service end to end, each with its
seconds, real-time factor and word error rate (and the raw runs' word error rates with the
speech laid out with other pauses); the queue's throughput on several files
submitted at once; and the peak memory of the whole service on a long recording.

    transcriber bench-audio --minutes 5 --queue-files 6 --long-minutes 60

The recognition settings (TRANSCRIBER_CPU_THREADS, _BATCH_SIZE, _DECODING, _WORKERS,
_RECOGNIZER_NICE) are taken from the environment, the same for the raw runs and the
service; the raw runs get the recognizer's nice value too, so both sides meet the same
competition for the cores. The audio is made here (the English sample and pauses,
again and again; the reference text likewise), never committed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import numpy as np

from transcriber.audio.normalize import RATE, decode_to_wav
from transcriber.audio.recognize import TEMPERATURES, bundled_model
from transcriber.config import Config
from transcriber.wer import word_error_rate

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
KNOBS = ("CPU_THREADS", "BATCH_SIZE", "DECODING", "WORKERS", "RECOGNIZER_NICE")
"""Settings passed on to the service, from this process's environment."""


def make_audio(
    dest: Path, minutes: float, pauses_s: tuple[float, ...] = (2.0,)
) -> tuple[float, str]:
    """About `minutes` of speech as FLAC (the sample, then a pause — the next of
    `pauses_s` in turn — a whole number of times); returns the duration and the text
    spoken."""
    speech_wav = dest.with_suffix(".sample.wav")
    decode_to_wav(SAMPLES / "en.ogg", speech_wav, max_duration_s=3600)
    import wave

    with wave.open(str(speech_wav), "rb") as w:
        speech = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    speech_wav.unlink()
    mean_unit = len(speech) + RATE * sum(pauses_s) / len(pauses_s)
    times = max(1, round(minutes * 60 * RATE / mean_unit))
    out = av.open(str(dest), "w", format="flac")
    stream = out.add_stream("flac", rate=RATE, layout="mono")
    samples = 0
    for i in range(times):
        pause = np.zeros(round(pauses_s[i % len(pauses_s)] * RATE), dtype=np.int16)
        unit = np.concatenate([speech, pause])
        samples += len(unit)
        frame = av.AudioFrame.from_ndarray(unit.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        for packet in stream.encode(frame):
            out.mux(packet)
    for packet in stream.encode(None):
        out.mux(packet)
    out.close()
    reference = " ".join([(SAMPLES / "en.txt").read_text().strip()] * times)
    return samples / RATE, reference


OTHER_PAUSES = {
    "0.3 s pauses": (0.3,),
    "pauses of 0.2-3 s": tuple(round(x, 2) for x in np.random.default_rng(1).uniform(0.2, 3.0, 12)),
}
"""Other ways to lay the same speech out, for the word error rates alone: how the VAD
cuts the speech, and so the batched decoding's errors, depends on the pauses."""


TEMPS = list(TEMPERATURES)
RAW = f"""
import json, os, sys, time
os.nice(int(sys.argv[6]))
from faster_whisper import BatchedInferencePipeline, WhisperModel
model = WhisperModel(sys.argv[1], device="cpu", compute_type="int8", cpu_threads=int(sys.argv[4]),
                     local_files_only=True)
common = dict(beam_size=5, word_timestamps=True, condition_on_previous_text=False)
if sys.argv[3] == "sequential":
    segments, info = model.transcribe(
        sys.argv[2], temperature={TEMPS!r}, vad_filter=False, **common)
else:
    segments, info = BatchedInferencePipeline(model).transcribe(
        sys.argv[2], batch_size=int(sys.argv[5]), temperature={TEMPS!r}, **common)
print(json.dumps(" ".join(s.text.strip() for s in segments)))
"""


TICK = os.sysconf("SC_CLK_TCK")


class Tree:
    """A process and its descendants but the database server, sampled: the peak of
    their summed resident memory, and the CPU seconds each used (its last sample)."""

    def __init__(self, root: int):
        self.root = root
        self.peak_mib = 0.0
        self._cpu: dict[int, float] = {}

    @property
    def cpu_s(self) -> float:
        return sum(self._cpu.values())

    def sample(self) -> None:
        total, todo = 0, [self.root]
        while todo:
            pid = todo.pop()
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"postgres" in f.read().split(b"\0")[0]:
                        continue
                with open(f"/proc/{pid}/status") as f:
                    total += next(
                        (int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0
                    )
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                self._cpu[pid] = (int(fields[11]) + int(fields[12])) / TICK
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as f:
                        todo.extend(int(c) for c in f.read().split())
            except (FileNotFoundError, ProcessLookupError):
                continue
        self.peak_mib = max(self.peak_mib, total / 1024)


def measured(args: list[str], env: dict[str, str]) -> tuple[float, Tree, str]:
    """Run `args`; its wall time, its process tree sampled every 0.1 s, and its stdout."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True)
        tree = Tree(proc.pid)
        while proc.poll() is None:
            tree.sample()
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:4])} failed: {err.read()[-2000:]}")
        return wall, tree, out.read()


def transcriber(*args: str) -> list[str]:
    return [sys.executable, "-m", "transcriber", *args]


def queue_throughput(files: list[Path], env: dict[str, str]) -> tuple[float, Tree]:
    """Submit `files` at once to a running daemon (`serve --no-api`); the wall seconds
    until every one is transcribed, and the daemon's tree meanwhile."""
    daemon = subprocess.Popen(
        transcriber("serve", "--no-api"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        t0 = time.perf_counter()
        submit = subprocess.Popen(
            transcriber("submit", *map(str, files), "--wait"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        tree = Tree(daemon.pid)
        while submit.poll() is None:
            tree.sample()
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        out, err = submit.communicate()
        if submit.returncode != 0 or out.count("transcribed") != len(files):
            raise RuntimeError(f"submit --wait: {out}{err[-2000:]}")
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=120)
    return wall, tree


def main(
    minutes: float = 5.0,
    long_minutes: float = 60.0,
    queue_files: int = 6,
    queue_minutes: float = 5.0,
) -> int:
    work = Path(tempfile.mkdtemp(prefix="transcriber-bench-audio-"))
    try:
        return run(work, minutes, long_minutes, queue_files, queue_minutes)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the audio, the model, the database


def run(
    work: Path, minutes: float, long_minutes: float, queue_files: int, queue_minutes: float
) -> int:
    work.chmod(0o755)  # the embedded database's own user must reach the home inside
    models = bundled_model(work / "models")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TRANSCRIBER_") or k[len("TRANSCRIBER_") :] in KNOBS
    }
    env.update(TRANSCRIBER_HOME=str(work / "home"), TRANSCRIBER_MODEL=str(models))
    config = Config.from_env(env)
    load = os.getloadavg()[0]
    print(
        f"settings: cpu_threads={config.cpu_threads} batch_size={config.batch_size} "
        f"decoding={config.decoding} workers={env.get('TRANSCRIBER_WORKERS', '2')} "
        f"nice={config.recognizer_nice}; load average {load:.1f} on {os.cpu_count()} cores",
        flush=True,
    )
    report: dict[str, Any] = {
        "load_before": load,
        "cpu_threads": config.cpu_threads,
        "batch_size": config.batch_size,
        "decoding": config.decoding,
    }

    if minutes > 0:
        short = work / "short.flac"
        duration, reference = make_audio(short, minutes)
        print(f"audio: {duration:.0f}s of speech and pauses", flush=True)
        subprocess.run(transcriber("migrate"), env=env, check=True, capture_output=True)
        raw = [sys.executable, "-c", RAW, str(models), str(short)]
        knobs = [str(config.cpu_threads), str(config.batch_size), str(config.recognizer_nice)]
        runs: dict[str, tuple[list[str], Callable[[str], Any]]] = {
            "raw sequential": ([*raw, "sequential", *knobs], json.loads),
            "raw batched": ([*raw, "batched", *knobs], json.loads),
            "service": (transcriber("transcribe", str(short)), str),
        }
        print(f"{'':16} {'seconds':>8} {'RTF':>7} {'WER':>7} {'CPU s':>7} {'peak MiB':>9}")
        for label, (args, parse) in runs.items():
            wall, tree, out = measured(args, env)
            wer = word_error_rate(reference, parse(out))
            report[label] = {
                "s": wall,
                "rtf": wall / duration,
                "wer": wer,
                "cpu_s": tree.cpu_s,
                "rss_mib": tree.peak_mib,
            }
            print(
                f"{label:16} {wall:8.1f} {wall / duration:7.3f} {wer:7.1%} "
                f"{tree.cpu_s:7.1f} {tree.peak_mib:9.0f}",
                flush=True,
            )
        service, batched = report["service"], report["raw batched"]
        assert isinstance(service, dict) and isinstance(batched, dict)
        print(f"service / raw batched: {service['s'] / batched['s']:.3f}", flush=True)
        for label, pauses in OTHER_PAUSES.items():
            other = work / "other.flac"
            _, reference = make_audio(other, minutes / 2, pauses)
            wers = {
                how: word_error_rate(
                    reference, json.loads(measured([*raw[:-1], str(other), how, *knobs], env)[2])
                )
                for how in ("sequential", "batched")
            }
            report[f"wer, {label}"] = wers
            print(
                f"WER with {label}: raw sequential {wers['sequential']:.1%}, "
                f"raw batched {wers['batched']:.1%}",
                flush=True,
            )

    if queue_files > 0:
        one, _ = make_audio(work / "queue-0.flac", queue_minutes)
        files = [work / "queue-0.flac"]
        for i in range(1, queue_files):
            files.append(work / f"queue-{i}.flac")
            files[-1].write_bytes(files[0].read_bytes())
        wall, tree = queue_throughput(files, env)
        audio_min = one * queue_files / 60
        report["queue"] = {
            "files": queue_files,
            "audio_min": audio_min,
            "s": wall,
            "audio_min_per_min": audio_min / (wall / 60),
            "cpu_s_per_audio_min": tree.cpu_s / audio_min,
            "rss_mib": tree.peak_mib,
        }
        print(
            f"queue: {queue_files} files of {one / 60:.1f} min at once: {wall:.0f}s, "
            f"{audio_min / (wall / 60):.1f} audio minutes per minute, "
            f"{tree.cpu_s / audio_min:.1f} CPU s per audio minute, "
            f"daemon peak {tree.peak_mib:.0f} MiB",
            flush=True,
        )

    if long_minutes > 0:
        long = work / "long.flac"
        long_s, reference = make_audio(long, long_minutes)
        wall, tree, text = measured(transcriber("transcribe", str(long)), env)
        rss = tree.peak_mib
        report["long"] = {
            "audio_s": long_s,
            "s": wall,
            "rtf": wall / long_s,
            "rss_mib": rss,
            "cpu_s": tree.cpu_s,
            "wer": word_error_rate(reference, text),
        }
        print(
            f"{long_s / 60:.0f} min recording: {wall:.0f}s end to end "
            f"(real-time factor {wall / long_s:.3f}), peak RSS {rss:.0f} MiB "
            f"(the service and its recognizer), WER {report['long']['wer']:.1%}",
            flush=True,
        )
    report["load_after"] = os.getloadavg()[0]
    print(json.dumps(report))
    saved = Path(f"/tmp/transcriber-bench-audio-{time.strftime('%Y%m%d-%H%M%S')}.json")
    saved.write_text(json.dumps(report, indent=1))
    return 0
