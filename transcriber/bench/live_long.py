"""bench-live's long parts: one session streamed for many minutes (does its delay grow?),
and batch recognition's time while live sessions stream (what live costs the pipeline).

The long session's audio is made at run time from the materials (the samples and the
espeak-ng paragraphs one after another, again and again), nothing of it kept; its words'
ends in the audio are the materials' batch word times moved by where each copy starts.
Per minute of audio: word latency p50/p95 of the words that end in it; how far behind
real time the live text is at the minute's end (the minute's end less the end of the
last word the client had been sent by then, so a word's wait for confirmation counts);
the turns committed in it and how long their completion took after the commit.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

from transcriber.bench.api_latency import percentile
from transcriber.wer import words as words_of

RATE = 24_000


def concatenated(found: list[dict[str, Any]], minutes: float) -> dict[str, Any]:
    """The materials one after another until `minutes`: one long recording, with the
    batch words of each copy moved to where it starts."""
    pcm = bytearray()
    batch: list[tuple[float, str]] = []
    names: list[str] = []
    copies: list[tuple[float, float, list[tuple[float, str]]]] = []
    while len(pcm) < minutes * 60 * RATE * 2:
        for material in found:
            offset = len(pcm) / RATE / 2
            pcm += material["pcm"]
            moved = [(end + offset, word) for end, word in material["batch"]]
            batch += moved
            copies.append((offset, len(pcm) / RATE / 2, moved))
            names.append(material["name"])
            if len(pcm) >= minutes * 60 * RATE * 2:
                break
    return {
        "name": f"{len(names)} recordings ({', '.join(sorted(set(names)))})",
        "pcm": bytes(pcm),
        "batch": batch,
        "copies": copies,
        "language": found[0]["language"],
    }


LATE_S = 20.0
"""A copy's words are looked for among the deltas that came while it was streamed and
this long after."""


def matched_by_copy(
    live: list[tuple[float, str]], copies: list[tuple[float, float, list[tuple[float, str]]]]
) -> list[tuple[float, float]]:
    """(arrival, end) of each word matched, each copy matched with the deltas that came
    while it was streamed and `LATE_S` after: one matching of the whole would pair a word
    with its namesake in another copy of the same paragraph. A delta seen by two copies
    is the one it comes soonest after; none comes before its word ends."""
    best: dict[int, tuple[float, float]] = {}
    for start, end, words in copies:
        near = [i for i, (at, _) in enumerate(live) if start <= at < end + LATE_S]
        keys = [k for _, w in words for k in (words_of(w)[:1] or [""])]
        matcher = difflib.SequenceMatcher(a=[live[i][1] for i in near], b=keys, autojunk=False)
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                i, ends = near[block.a + k], words[block.b + k][0]
                arrival = live[i][0]
                if arrival >= ends - 0.5 and (
                    i not in best or arrival - ends < best[i][0] - best[i][1]
                ):
                    best[i] = (arrival, ends)
    return sorted(best.values())


def per_minute(
    got: dict[str, Any],
    copies: list[tuple[float, float, list[tuple[float, str]]]],
    audio_s: float,
) -> list[dict[str, Any]]:
    """The long session's delay, minute by minute of its audio (see the module)."""
    pairs = matched_by_copy(got["live"], copies)
    rows = []
    minute = 0
    while minute * 60 < audio_s:
        start, end = minute * 60.0, min((minute + 1) * 60.0, audio_s)
        lat = sorted(a - e for a, e in pairs if start <= e < end)
        heard = [e for a, e in pairs if a <= end]
        turns = [(c, d) for c, d in got["turn_times"] if start <= c < end]
        rows.append(
            {
                "minute": minute + 1,
                "words": len(lat),
                "p50_s": round(percentile(lat, 50), 2) if lat else None,
                "p95_s": round(percentile(lat, 95), 2) if lat else None,
                "behind_at_end_s": round(end - max(heard), 2) if heard else None,
                "turns": len(turns),
                "completion_p50_s": round(percentile(sorted(d - c for c, d in turns), 50), 2)
                if turns
                else None,
                "completion_max_s": round(max(d - c for c, d in turns), 2) if turns else None,
            }
        )
        minute += 1
    return rows


async def long_session(
    url: str, token: str, found: list[dict[str, Any]], minutes: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One session of `minutes` of audio at real-time pace: its summary and its minutes."""
    from transcriber.bench.live import stream

    material = concatenated(found, minutes)
    audio_s = len(material["pcm"]) / RATE / 2
    await asyncio.sleep(2.0)  # the sessions before leave
    got = await stream(url, token, material["pcm"], material["language"])
    minutes_rows = per_minute(got, material["copies"], audio_s)
    lates = got["lates"]
    summary = {
        "material": material["name"],
        "audio_s": round(audio_s, 1),
        "turns": got["turns"],
        "errors": got["errors"],
        "completion_max_s": round(max(lates, default=0.0), 2),
    }
    return summary, minutes_rows


BATCH_CHILD = """
import sys, time
from pathlib import Path
from transcriber.audio.recognize import WhisperRecognizer
from transcriber.config import Config
config = Config.from_env()
recognizer = WhisperRecognizer(config)
recognizer.model()
started = time.perf_counter()
recognizer.transcribe(Path(sys.argv[1]), float(sys.argv[2]), "en")
print(time.perf_counter() - started)
"""
"""The batch recognizer as the pipeline's recognize step makes it (the daemon's config:
batched decoding, niced as TRANSCRIBER_RECOGNIZER_NICE), timed over one recording once
its model is loaded."""


def batch_seconds(env: dict[str, str], wav: Path, audio_s: float) -> float:
    nice = int(env.get("TRANSCRIBER_RECOGNIZER_NICE") or 10)
    done = subprocess.run(
        [sys.executable, "-c", BATCH_CHILD, str(wav), str(audio_s)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.nice(nice),
    )
    return float(done.stdout.strip().splitlines()[-1])


def wav_of(pcm: bytes, path: Path) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm)
    return path


async def batch_under_live(
    url: str, tokens: list[str], found: list[dict[str, Any]], env: dict[str, str], policy: str
) -> list[dict[str, Any]]:
    """One batch recognition of samples/en.ogg (four times over: a minute) alone, then
    while 1 and 2 live sessions stream (the longest material, twice over, so they
    outlast it): its time and its ratio to the time alone."""
    from transcriber.bench.live import stream

    upload = next(m for m in found if m["name"] == "en.ogg")
    live = max(found, key=lambda m: len(m["pcm"]))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-live-batch-") as tmp:
        pcm = upload["pcm"] * 4
        wav = wav_of(pcm, Path(tmp) / "upload.wav")
        audio_s = len(pcm) / RATE / 2
        alone = await asyncio.to_thread(batch_seconds, env, wav, audio_s)
        rows.append(
            {"policy": policy, "live_sessions": 0, "batch_s": round(alone, 2), "ratio": 1.0}
        )
        for n in (1, 2):
            await asyncio.sleep(2.0)
            sessions = [
                asyncio.create_task(stream(url, tokens[i], live["pcm"] * 2, live["language"]))
                for i in range(n)
            ]
            await asyncio.sleep(3.0)  # the sessions are under way
            started = time.monotonic()
            took = await asyncio.to_thread(batch_seconds, env, wav, audio_s)
            wall = time.monotonic() - started
            results = await asyncio.gather(*sessions, return_exceptions=True)
            errors = sorted(
                {e for r in results if isinstance(r, dict) for e in r["errors"]}
                | {repr(r) for r in results if not isinstance(r, dict)}
            )
            rows.append(
                {
                    "policy": policy,
                    "live_sessions": n,
                    "batch_s": round(took, 2),
                    "ratio": round(took / alone, 2),
                    "wall_s": round(wall, 1),
                    "errors": errors,
                }
            )
            print(rows[-1], file=sys.stderr)
    return rows
