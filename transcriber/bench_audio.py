"""The audio benchmark: the service end to end against raw faster-whisper on the same
file in the same run, the real-time factor, and the peak memory of a long recording.

    transcriber bench-audio --minutes 5 --long-minutes 60

The audio is made here (the English sample and pauses, repeated), never committed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np

from transcriber.normalize import RATE, decode_to_wav
from transcriber.recognize import TEMPERATURES, bundled_model

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "en.ogg"


def make_audio(dest: Path, minutes: float) -> float:
    """`minutes` of speech (the sample, then 2 s of quiet, again and again) as FLAC."""
    speech_wav = dest.with_suffix(".sample.wav")
    decode_to_wav(SAMPLE, speech_wav, max_duration_s=3600)
    import wave
    with wave.open(str(speech_wav), "rb") as w:
        speech = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    speech_wav.unlink()
    unit = np.concatenate([speech, np.zeros(2 * RATE, dtype=np.int16)])
    total = int(minutes * 60 * RATE)
    out = av.open(str(dest), "w", format="flac")
    stream = out.add_stream("flac", rate=RATE, layout="mono")
    written = 0
    while written < total:
        piece = unit[: total - written]
        frame = av.AudioFrame.from_ndarray(piece.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        for packet in stream.encode(frame):
            out.mux(packet)
        written += len(piece)
    for packet in stream.encode(None):
        out.mux(packet)
    out.close()
    return written / RATE


RAW = """
import sys, time
from faster_whisper import WhisperModel
t0 = time.perf_counter()
model = WhisperModel(sys.argv[1], device="cpu", compute_type="int8", cpu_threads=1,
                     local_files_only=True)
segments, info = model.transcribe(sys.argv[2], beam_size=5, temperature=%r,
                                  condition_on_previous_text=False, vad_filter=False)
n = sum(1 for _ in segments)
print(time.perf_counter() - t0, n)
""" % (list(TEMPERATURES),)


def measured(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run `args` under a small wrapper process that reports the child's peak RSS."""
    wrapper = ("import resource, subprocess, sys, time, json\n"
               "t0 = time.perf_counter()\n"
               "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "wall = time.perf_counter() - t0\n"
               "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
               "print(json.dumps({'rc': p.returncode, 'wall': wall, 'rss': rss,"
               " 'out': p.stdout, 'err': p.stderr[-2000:]}))\n")
    proc = subprocess.run([sys.executable, "-c", wrapper, *args], env=env,
                          capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{' '.join(args[:4])} failed: {result['err']}")
    return result["wall"], result["rss"], result["out"]


def main(minutes: float = 5.0, long_minutes: float = 60.0) -> int:
    work = Path(tempfile.mkdtemp(prefix="transcriber-bench-audio-"))
    work.chmod(0o755)  # the embedded database's own user must reach the home inside
    models = bundled_model(work / "models")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env.update(TRANSCRIBER_HOME=str(work / "home"), TRANSCRIBER_MODEL=str(models))
    report: dict[str, float] = {}

    if minutes > 0:
        short = work / "short.flac"
        duration = make_audio(short, minutes)
        print(f"audio: {duration:.0f}s of speech and pauses", flush=True)
        # Warm the embedded database and the page cache so both sides start alike.
        measured([sys.executable, "-m", "transcriber", "migrate"], env)
        raw_wall, raw_rss, _ = measured([sys.executable, "-c", RAW, str(models), str(short)], env)
        svc_wall, svc_rss, text = measured(
            [sys.executable, "-m", "transcriber", "transcribe", str(short)], env)
        report.update(audio_s=duration, raw_s=raw_wall, service_s=svc_wall,
                      ratio=svc_wall / raw_wall, service_rtf=svc_wall / duration,
                      raw_rtf=raw_wall / duration, raw_rss_mib=raw_rss, service_rss_mib=svc_rss,
                      words=len(text.split()))
        print(f"raw faster-whisper {raw_wall:.1f}s, service end to end {svc_wall:.1f}s, "
              f"ratio {svc_wall / raw_wall:.3f}, real-time factor {svc_wall / duration:.3f} "
              f"(raw {raw_wall / duration:.3f})", flush=True)

    if long_minutes > 0:
        long = work / "long.flac"
        long_s = make_audio(long, long_minutes)
        wall, rss, text = measured(
            [sys.executable, "-m", "transcriber", "transcribe", str(long)], env)
        report.update(long_audio_s=long_s, long_service_s=wall, long_rtf=wall / long_s,
                      long_peak_rss_mib=rss, long_words=len(text.split()))
        print(f"{long_s / 60:.0f} min recording: {wall:.0f}s end to end "
              f"(real-time factor {wall / long_s:.3f}), peak RSS {rss:.0f} MiB", flush=True)
    print(json.dumps(report))
    out = Path(f"/tmp/transcriber-bench-audio-{time.strftime('%Y%m%d-%H%M%S')}.json")
    out.write_text(json.dumps(report, indent=1))
    return 0
