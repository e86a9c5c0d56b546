"""How long a watched folder waits for its transcripts: from a file's last byte to its
transcript beside it, over the recognition's own time (a real `serve`, the bundled
model, one worker). A benchmark: `pytest -m benchmark tests/integration/test_watch_latency.py`;
the figures go to stdout and to `watch-latency.json` in the test's folder."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers.generated_audio import SAMPLES, long_speech_wav
from tests.helpers.serve_process import serve_process
from transcriber.db.database import Database
from transcriber.owners import add_owner
from transcriber.watch.watches import add_watch

SETTINGS = {"short": ("1", "2"), "default": ("10", "20")}
"""(TRANSCRIBER_WATCH_SCAN_S, TRANSCRIBER_WATCH_QUIET_S) of each run."""


async def milestones(db: Database, name: str) -> dict[str, Any]:
    """When the record of file `name` was accepted, normalized and transcribed (the
    database's clock, as epoch seconds)."""
    rows = await db.run(
        lambda c: c.fetch(
            "SELECT j.kind, j.milestone, extract(epoch FROM j.at) AS at"
            " FROM journal j JOIN recordings r ON r.id = j.recording_id"
            " WHERE r.filename = $1 ORDER BY j.at",
            name,
        )
    )
    at: dict[str, Any] = {}
    for r in rows:
        key = "accepted" if r["kind"] == "accepted" else r["milestone"]
        at.setdefault(key, float(r["at"]))
    return at


@pytest.mark.benchmark
@pytest.mark.parametrize("setting", list(SETTINGS))
async def test_watch_latency(
    db: Database, db_url: str, tmp_path: Path, model_dir: Path, setting: str
) -> None:
    await add_owner(db, "ann")
    folder = tmp_path / "recorder"
    folder.mkdir()
    await add_watch(db, "ann", str(folder), ("txt", "srt"))
    sources = {
        "en.ogg": (SAMPLES / "en.ogg").read_bytes(),
        "ru.ogg": (SAMPLES / "ru.ogg").read_bytes(),
    }
    long_wav = tmp_path / "long.wav"
    long_speech_wav(long_wav, windows=2)
    sources["long.wav"] = long_wav.read_bytes()
    scan_s, quiet_s = SETTINGS[setting]
    env = {"watch_scan_s": scan_s, "watch_quiet_s": quiet_s, "model": str(model_dir)}
    figures = []
    async with serve_process(db_url, tmp_path / "home", "--workers", "1", **env):
        for name, data in sources.items():  # one at a time: each file's own latency
            path = folder / name
            with open(path, "wb") as f:
                f.write(data)
            last_byte = time.time()
            written = folder / f"{path.stem}.srt"
            with trio.fail_after(600):
                while not written.exists():
                    await trio.sleep(0.02)
            beside = time.time()
            at = await milestones(db, name)
            recognition = at["transcribed"] - at["normalized"]
            figures.append(
                {
                    "file": name,
                    "last_byte_to_transcript_s": round(beside - last_byte, 2),
                    "last_byte_to_accepted_s": round(at["accepted"] - last_byte, 2),
                    "normalize_s": round(at["normalized"] - at["accepted"], 2),
                    "recognition_s": round(recognition, 2),
                    "transcribed_to_written_s": round(beside - at["transcribed"], 2),
                    "over_recognition": round((beside - last_byte) / recognition, 2),
                }
            )
    (tmp_path / "watch-latency.json").write_text(json.dumps(figures, indent=2))
    print(f"\nwatch latency, scan {scan_s} s, quiet {quiet_s} s:")
    for f in figures:
        print(json.dumps(f))
    assert all(f["last_byte_to_transcript_s"] > float(quiet_s) for f in figures)
