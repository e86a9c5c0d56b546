"""The live benchmark: clients of the real `openai` SDK stream recordings to a real
`transcriber serve` at real-time pace (100 ms messages, server VAD), for each policy of
live text side by side in one run (LocalAgreement-2, and the whole turn at its end).

    transcriber bench-live [--sessions 1 --sessions 2 --sessions 3] [--minutes M]
                           [--policy agreement --policy whole] [--material espeak]
                           [--batch]

The clients are the `openai` SDK of the dev extra (`pip install -e '.[dev]'`).

Per material (samples/en.ogg, samples/ru.ogg, three espeak-ng paragraphs), one session
alone: word latency — from a word's end in the audio (word times of a batch transcript
of the same audio: beam 5, as the pipeline decodes) to the first delta that brings the
live text to it — p50/p95; live WER against the reference text and against the batch
transcript; the server's CPU seconds (daemon and live decoder) per audio second. Then
N sessions at once on the espeak paragraph: held in real time when no session fell
behind (no `live_transcription_stopped`) and each turn completed within 5 s of its
audio. With `--minutes`, one session that long, its delay per minute; with `--batch`,
batch recognition's time alone and while 1 and 2 sessions stream
(`transcriber.bench.live_long`). The machine may be shared: the numbers say what it
gave, not what it can.
"""

from __future__ import annotations

import asyncio
import base64
import difflib
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path
from typing import Any

import av

from transcriber.audio.recognize import WhisperRecognizer, bundled_model
from transcriber.bench import plain_asyncio
from transcriber.bench.api_latency import Server, percentile
from transcriber.bench.recognition import SAMPLES
from transcriber.config import Config
from transcriber.wer import word_error_rate, words

RATE = 24_000
STEP_S = 0.1
HELD_S = 5.0
"""A turn completed later than this after its audio was sent is not real time."""

ESPEAK_TEXT = (
    "The library opens at nine in the morning. Students come early to find a quiet "
    "place to work. On Fridays the reading room closes at six. "
    "Last winter the heating failed twice, and the staff moved the books to the "
    "basement. Nobody lost a page. "
    "This year the council will pay for new windows and a better roof. "
    "The work starts in April and should be finished before the summer."
)


def pcm_of(path: Path, lead_s: float = 0.5, tail_s: float = 2.0) -> bytes:
    """A recording as the protocol's audio (16-bit mono at 24 kHz), with silence before
    it and after it (the VAD hears the last turn end)."""
    out = bytearray(b"\0\0" * int(lead_s * RATE))
    with av.open(str(path)) as container:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        for frame in container.decode(audio=0):
            for converted in resampler.resample(frame):
                out += converted.to_ndarray().astype("<i2").tobytes()
        for converted in resampler.resample(None):
            out += converted.to_ndarray().astype("<i2").tobytes()
    return bytes(out + b"\0\0" * int(tail_s * RATE))


HELD_OUT_TEXT = (
    "My grandmother kept bees behind the old mill for almost forty years. "
    "Every spring she counted the hives and wrote the numbers in a green notebook. "
    "The honey was dark in the autumn and pale in June. "
    "When the river flooded, she carried the boxes up the hill on her own. "
    "Her neighbours still talk about the summer the swarm settled on the church bell."
)
"""A paragraph no option was tuned on, spoken by another voice (en-gb, faster)."""

JUDGE_TEXT = (
    "The ferry to the island leaves the harbor at half past seven, and on windy days "
    "the captain decides whether the crossing is safe. Most passengers are farmers "
    "carrying eggs, cheese and vegetables to the market, where the stalls stay open "
    "until the church clock strikes one. In the evening the boat brings back tools, "
    "letters and newspapers, and the children run down to the pier to see who came home."
)
"""`espeak-c`, frozen on 3 December 2026 before the trim options were tuned, to judge
them once: long sentences with commas in one VAD turn of 22.6 s (as `espeak-b`, so the
buffer must be trimmed inside it), spoken by a voice and at a rate no other material
has (en-us-nyc, 170 wpm)."""


def espeak(text: str, path: Path, voice: str = "en-us", speed: int = 150) -> Path:
    """Sentences spoken by espeak-ng with a pause between them (turns for the VAD)."""
    pieces = []
    for n, sentence in enumerate(s.strip() for s in text.split(". ") if s.strip()):
        part = path.with_suffix(f".{n}.wav")
        subprocess.run(
            [
                "espeak-ng",
                "-v",
                voice,
                "-s",
                str(speed),
                "-w",
                str(part),
                sentence.rstrip(".") + ".",
            ],
            check=True,
            capture_output=True,
        )
        pieces.append(str(part))
    subprocess.run(["sox", *pieces, "-r", str(RATE), "-c", "1", "-b", "16", str(path)], check=True)
    return path


def batch_words(pcm: bytes, model: str, language: str) -> list[tuple[float, str]]:
    """(end, word) of a batch transcript of the streamed audio (beam 5, word times)."""
    recognizer = WhisperRecognizer(Config(model=model, decoding="sequential", cpu_threads=2))
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "a.wav"
        with wave.open(str(wav), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(pcm)
        resampled = Path(tmp) / "b.wav"
        subprocess.run(["sox", str(wav), "-r", "16000", str(resampled)], check=True)
        transcript = recognizer.transcribe(resampled, len(pcm) / RATE / 2, language)
    return [(w["end"], w["word"]) for s in transcript.segments for w in s["words"]]


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and its live children (the live decoder)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        me = int(stat.parent.name)
        if me == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def stream(url: str, token: str, pcm: bytes, language: str) -> dict[str, Any]:
    """One SDK client: the audio at real-time pace; every delta's arrival time."""
    # The SDK is the dev extra's (the service never imports it): loaded by name.
    openai: Any = importlib.import_module("openai")

    client = openai.AsyncOpenAI(api_key=token, base_url=f"{url}/v1", max_retries=0)
    items: list[str] = []
    deltas: dict[str, list[tuple[float, str]]] = {}
    completed: dict[str, tuple[float, str]] = {}
    committed_at: dict[str, float] = {}
    errors: list[str] = []
    async with client.realtime.connect(extra_query={"intent": "transcription"}) as connection:
        await connection.recv()
        await connection.session.update(
            session={
                "type": "transcription",
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": RATE},
                        "transcription": {"model": "whisper-1", "language": language},
                        "turn_detection": {"type": "server_vad", "silence_duration_ms": 500},
                    }
                },
            }
        )
        loop = asyncio.get_running_loop()
        start = loop.time()
        step = int(RATE * STEP_S) * 2
        sent = asyncio.Event()
        sent_at: list[float] = []

        async def send() -> None:
            for n, at in enumerate(range(0, len(pcm), step)):
                await asyncio.sleep(max(0.0, start + n * STEP_S - loop.time()))
                chunk = base64.b64encode(pcm[at : at + step]).decode()
                await connection.input_audio_buffer.append(audio=chunk)
            sent_at.append(loop.time())
            sent.set()

        sender = asyncio.create_task(send())
        while True:
            try:
                event = await asyncio.wait_for(connection.recv(), 1.0)
            except TimeoutError:
                # Done when every turn that started was committed and completed (a server
                # behind its audio commits the last one late), or a minute after the audio.
                settled = len(committed_at) == len(items) and len(completed) == len(committed_at)
                if sent.is_set() and (settled or loop.time() - sent_at[0] > 60.0):
                    break
                continue
            now = loop.time() - start
            kind = event.type
            if kind == "input_audio_buffer.speech_started":
                items.append(event.item_id)
            elif kind == "input_audio_buffer.committed":
                committed_at[event.item_id] = now
            elif kind == "conversation.item.input_audio_transcription.delta":
                deltas.setdefault(event.item_id, []).append((now, event.delta))
            elif kind.endswith(".completed"):
                completed[event.item_id] = (now, event.transcript)
            elif kind.endswith(".failed"):
                completed[event.item_id] = (now, "")
            elif kind == "error":
                errors.append(event.error.code or "")
        await sender
    live: list[tuple[float, str]] = []  # (arrival, word) in order
    for item in items:
        text = ""
        for at, piece in deltas.get(item, []):
            before = len(words(text))
            text += piece
            live += [(at, w) for w in words(text)[before:]]
    late = [completed[i][0] - committed_at[i] for i in committed_at if i in completed]
    return {
        "turn_times": sorted(
            (committed_at[i], completed[i][0]) for i in committed_at if i in completed
        ),
        "live": live,
        "text": " ".join(completed[i][1] for i in items if i in completed),
        "errors": errors,
        "turns": len(committed_at),
        "late_s": max(late, default=0.0),
        "lates": late,
    }


def matched(
    live: list[tuple[float, str]], batch: list[tuple[float, str]]
) -> list[tuple[float, float]]:
    """(arrival, end in the audio) of each batch word matched in the live text."""
    batch_keys = [k for _, w in batch for k in (words(w)[:1] or [""])]
    matcher = difflib.SequenceMatcher(a=[w for _, w in live], b=batch_keys, autojunk=False)
    out = []
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            out.append((live[block.a + k][0], batch[block.b + k][0]))
    return out


def latencies(live: list[tuple[float, str]], batch: list[tuple[float, str]]) -> list[float]:
    """For each batch word matched in the live text: its arrival less its end."""
    return [arrival - end for arrival, end in matched(live, batch)]


def one_pass_s(model: str, pcm: bytes) -> float:
    """The median time of a live pass over 10 s, now: what the machine gives a session
    (the word latency of LocalAgreement-2 is about two passes and a step)."""
    from transcriber.audio.live import LiveDecoder
    from transcriber.http.live.recognizer import to_whisper

    decoder = LiveDecoder(Config(model=model))
    samples = to_whisper(pcm, RATE)[: 16000 * 10]
    try:
        decoder.warm()
        times = []
        for _ in range(3):
            started = time.perf_counter()
            decoder.decode(samples, "en", None)
            times.append(time.perf_counter() - started)
    finally:
        decoder.close()
    return sorted(times)[1]


def materials(work: Path, names: list[str] | None = None) -> list[dict[str, Any]]:
    """The recordings streamed, those of `names` (all: None). `espeak` is the one the
    live policies are tuned on; `en.ogg` and `espeak-b` judged the first ones and were
    seen since; `espeak-c` judges the trim options."""
    found = [
        {
            "name": "en.ogg",
            "pcm": pcm_of(SAMPLES / "en.ogg"),
            "language": "en",
            "reference": (SAMPLES / "en.txt").read_text(),
        },
        {
            "name": "ru.ogg",
            "pcm": pcm_of(SAMPLES / "ru.ogg"),
            "language": "ru",
            "reference": (SAMPLES / "ru.txt").read_text(),
        },
    ]
    try:
        wav = espeak(ESPEAK_TEXT, work / "espeak.wav")
        held_out = espeak(HELD_OUT_TEXT, work / "espeak-b.wav", "en-gb", 165)
        judge = espeak(JUDGE_TEXT, work / "espeak-c.wav", "en-us-nyc", 170)
    except (OSError, subprocess.CalledProcessError):
        print("espeak-ng or sox missing: the espeak material is left out", file=sys.stderr)
    else:
        found.append(
            {"name": "espeak", "pcm": pcm_of(wav), "language": "en", "reference": ESPEAK_TEXT}
        )
        found.append(
            {
                "name": "espeak-b",
                "pcm": pcm_of(held_out),
                "language": "en",
                "reference": HELD_OUT_TEXT,
            }
        )
        found.append(
            {"name": "espeak-c", "pcm": pcm_of(judge), "language": "en", "reference": JUDGE_TEXT}
        )
    return [m for m in found if names is None or m["name"] in names]


async def run_policy(
    policy: str,
    env: dict[str, str],
    tokens: list[str],
    found: list[dict[str, Any]],
    sessions: list[int],
    minutes: float = 0.0,
    batch: bool = False,
    extra: dict[str, list[Any]] | None = None,
) -> list[dict[str, Any]]:
    """Each material alone, then N sessions at once (of N owners: an owner's bound is
    two); with `minutes`, one session that long (`transcriber.bench.live_long`): its
    delay minute by minute; with `batch`, a batch recognition's time alone and while
    live sessions stream. Those two add their rows to `extra`."""
    from transcriber.bench import live_long

    extra = {} if extra is None else extra
    token = tokens[0]
    server = Server({**env, "TRANSCRIBER_LIVE_POLICY": policy}, workers=0)
    rows: list[dict[str, Any]] = []
    try:
        await asyncio.to_thread(_ready, server)
        # The decoder's model loads on the first pass: one short session first.
        await stream(server.url, token, found[0]["pcm"][: RATE * 2 * 3], "en")
        for material in found:
            cpu = tree_cpu_s(server.proc.pid)
            got = await stream(server.url, token, material["pcm"], material["language"])
            cpu = tree_cpu_s(server.proc.pid) - cpu
            pairs = matched(got["live"], material["batch"])
            lat = sorted(arrival - end for arrival, end in pairs)
            batch_text = "".join(w for _, w in material["batch"])
            at = dict(material["batch"])
            rows.append(
                {
                    "policy": policy,
                    "material": material["name"],
                    "sessions": 1,
                    "audio_s": round(len(material["pcm"]) / RATE / 2, 1),
                    "p50_s": round(percentile(lat, 50), 2) if lat else None,
                    "p95_s": round(percentile(lat, 95), 2) if lat else None,
                    "wer_ref": round(word_error_rate(material["reference"], got["text"]), 3),
                    "wer_batch": round(word_error_rate(batch_text, got["text"]), 3),
                    "batch_wer_ref": round(word_error_rate(material["reference"], batch_text), 3),
                    "cpu_per_audio_s": round(cpu / (len(material["pcm"]) / RATE / 2), 3),
                    "errors": got["errors"],
                    # Printed with the row (stderr), not in the table: what the WER counts,
                    # and the latest words (latency, end in the audio, word).
                    "text": got["text"],
                    "slowest": sorted(
                        ((round(a - e, 2), round(e, 2), at[e].strip()) for a, e in pairs),
                        reverse=True,
                    )[:6],
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
        longest = max(found, key=lambda m: len(m["pcm"]))
        for n in sessions:
            if n < 2:
                continue
            await asyncio.sleep(2.0)  # the sessions before leave
            cpu = tree_cpu_s(server.proc.pid)
            many = await asyncio.gather(
                *(
                    stream(server.url, tokens[i], longest["pcm"], longest["language"])
                    for i in range(n)
                ),
                return_exceptions=True,
            )
            cpu = tree_cpu_s(server.proc.pid) - cpu
            ok = [m for m in many if isinstance(m, dict)]
            lat = sorted(x for m in ok for x in latencies(m["live"], longest["batch"]))
            held = len(ok) == n and all(not m["errors"] and m["late_s"] <= HELD_S for m in ok)
            rows.append(
                {
                    "policy": policy,
                    "material": longest["name"],
                    "sessions": n,
                    "audio_s": round(len(longest["pcm"]) / RATE / 2, 1),
                    "p50_s": round(percentile(lat, 50), 2) if lat else None,
                    "p95_s": round(percentile(lat, 95), 2) if lat else None,
                    "wer_ref": round(
                        max(word_error_rate(longest["reference"], m["text"]) for m in ok), 3
                    )
                    if ok
                    else None,
                    "cpu_per_audio_s": round(cpu / (n * len(longest["pcm"]) / RATE / 2), 3),
                    "held": held,
                    "late_s": round(max((m["late_s"] for m in ok), default=0.0), 2),
                    "errors": sorted({e for m in ok for e in m["errors"]})
                    + [repr(m) for m in many if not isinstance(m, dict)],
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
        if batch and len(tokens) >= 2:
            try:
                extra.setdefault("batch", []).extend(
                    await live_long.batch_under_live(server.url, tokens, found, env, policy)
                )
            except (StopIteration, subprocess.CalledProcessError, ValueError) as e:
                # (en.ogg not among the materials, the recognizer failed): said, and the
                # long session still runs.
                print(f"the batch measurement failed: {e!r}", file=sys.stderr)
        if minutes > 0:
            cpu = tree_cpu_s(server.proc.pid)
            summary, per_minute = await live_long.long_session(server.url, token, found, minutes)
            cpu = tree_cpu_s(server.proc.pid) - cpu
            summary["cpu_per_audio_s"] = round(cpu / summary["audio_s"], 3)
            extra.setdefault("long", []).append({"policy": policy, **summary})
            extra.setdefault("minutes", []).extend({"policy": policy, **m} for m in per_minute)
            for row in [extra["long"][-1], *per_minute]:
                print(json.dumps(row), file=sys.stderr)
    finally:
        server.stop()
    return rows


def _ready(server: Server) -> None:
    import trio

    trio.run(server.ready)


def table(rows: list[dict[str, Any]], keys: list[str] | None = None) -> str:
    keys = keys or [
        "policy",
        "material",
        "sessions",
        "audio_s",
        "p50_s",
        "p95_s",
        "wer_ref",
        "wer_batch",
        "batch_wer_ref",
        "cpu_per_audio_s",
        "held",
        "late_s",
        "errors",
    ]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(str(row.get(k, "")) for k in keys) + " |")
    return "\n".join(lines)


def main(
    sessions: list[int],
    policies: list[str],
    minutes: float = 0.0,
    names: list[str] | None = None,
    batch: bool = False,
) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        work = Path(tmp)
        model = str(bundled_model(work / "models"))
        found = materials(work, names)
        if not found:
            print(f"no material of {names}", file=sys.stderr)
            return 2
        for material in found:
            material["batch"] = batch_words(material["pcm"], model, material["language"])
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
        env.update(
            TRANSCRIBER_HOME=str(work / "home"),
            TRANSCRIBER_MODEL=model,
            # One spare place: the sessions of a run may still be leaving the server
            # when the next run's connect.
            TRANSCRIBER_LIVE_MAX_SESSIONS=str(max(sessions) + 1),
        )
        tokens = [
            subprocess.run(
                [sys.executable, "-m", "transcriber", "owner", "add", f"bench{n}"],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .split()[-1]
            for n in range(max([*sessions, 2 if batch else 1]))
        ]
        rows: list[dict[str, Any]] = []
        extra: dict[str, list[Any]] = {}
        started = time.monotonic()
        before = one_pass_s(model, found[0]["pcm"])
        for policy in policies:
            rows += plain_asyncio.run(
                run_policy(policy, env, tokens, found, sessions, minutes, batch, extra)
            )
        after = one_pass_s(model, found[0]["pcm"])
        print(table(rows))
        for name, found_rows in extra.items():
            keys = list(dict.fromkeys(k for row in found_rows for k in row))
            print(f"\n{name}:\n" + table(found_rows, keys))
        print(
            f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end, "
            f"{time.monotonic() - started:.0f} s; one live pass over 10 s took "
            f"{before:.2f} s before the sessions, {after:.2f} s after them"
        )
    return 0
