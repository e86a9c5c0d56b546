"""The bounds on what normalization may write, on a real database with real decoders:
a small upload may not become a huge audio file (implausible sample rates and
size-to-duration ratios stop the record), the owner's hours of audio are a quota, the
disk's reserve holds while the audio is written, and recognition's run limit stays
within reason for the longest recording accepted."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from actors import StepTable, Wakeup, Worker
from tests.helpers import generated_audio
from tests.helpers.api_clients import client, count_recordings, store_files
from tests.helpers.pg_pipeline import noop, state
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.intake import accept_file
from transcriber.milestones import RECEIVED
from transcriber.owners import add_owner
from transcriber.pipeline import operator
from transcriber.pipeline.audio_steps import audio_steps, normalize_step
from transcriber.pipeline.operator import card
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.step_table import step_table
from transcriber.storage.local import LocalBlobs

MiB = 1 << 20


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("audio", title)


async def normalize(db: Database, config: Config, rid: Any) -> dict[str, Any]:
    """One normalize step of one worker of the real pipeline; the record's card after it.
    (Only normalization: a record normalized before is not recognized meanwhile.)"""
    steps = StepTable(
        {RECEIVED: step_table(normalize=normalize_step(config), recognize=noop).steps[RECEIVED]}
    )
    assert await Worker("w", PgQueue(db, steps), steps, Wakeup()).work_once()
    c = await card(db, rid)
    assert c is not None
    return c


async def accept_and_normalize(
    db: Database, owner_id: int, config: Config, path: Path
) -> tuple[Any, dict[str, Any]]:
    rid = await accept_file(db, config, path, owner_id)
    return rid, await normalize(db, config, rid)


def audio_files(config: Config) -> list[Path]:
    folder = LocalBlobs(config.home).audio
    return sorted(folder.iterdir()) if folder.exists() else []


async def assert_stopped(
    db: Database, config: Config, rid: Any, c: dict[str, Any], reason: str, error: str
) -> None:
    """Stopped at `received` with `reason` (not failed: no retry is due), the error
    naming the bound, and no audio left behind."""
    assert c["milestone"] == "received"
    assert c["stopped"] is not None, c
    assert (c["stopped"]["reason"], error in c["stopped"]["error"]) == (reason, True), c
    assert (await state(db, rid))["retry_at"] is None
    assert [p for p in audio_files(config) if p.name.startswith(str(rid))] == []


# --- Implausible audio ----------------------------------------------------------------------


@scenario("An implausible sample rate stops with implausible_rate")
@pytest.mark.parametrize("rate", [1, 3999, 768000], ids=["1-hz", "under-4-khz", "768-khz"])
async def test_implausible_sample_rate(
    db: Database, owner_id: int, tmp_path: Path, rate: int
) -> None:
    config = Config(home=tmp_path / "home")
    # The file at 1 Hz: an hour in 3,644 bytes; the others two seconds.
    path = generated_audio.wav_at_rate(tmp_path, rate, 3600.0 if rate == 1 else 2.0)
    rid, c = await accept_and_normalize(db, owner_id, config, path)
    await assert_stopped(db, config, rid, c, "implausible_rate", f"{rate} Hz")
    assert c["duration_s"] is None
    assert "sample rate" in c["stopped"]["message"]


async def test_the_rates_real_recordings_use_pass(
    db: Database, owner_id: int, tmp_path: Path
) -> None:
    """The floor and the ceiling themselves are accepted (telephony is 8 kHz)."""
    config = Config(home=tmp_path / "home")
    for rate in (4000, 8000, 384000):
        _, c = await accept_and_normalize(
            db, owner_id, config, generated_audio.wav_at_rate(tmp_path, rate, 2.0)
        )
        assert (c["milestone"], c["stopped"]) == ("normalized", None), c
        assert c["duration_s"] == pytest.approx(2.0, abs=0.01)


@scenario("A file far too small for its audio stops with implausible_duration")
@pytest.mark.parametrize("known_length", [True, False], ids=["length-known", "length-unknown"])
async def test_amplifying_file_stops(
    db: Database, owner_id: int, tmp_path: Path, known_length: bool
) -> None:
    config = Config(home=tmp_path / "home")
    # Ten minutes of silence in about 10 KB: 19 MB once normalized.
    path = generated_audio.flac_of_silence(tmp_path, 600.0, known_length=known_length)
    assert path.stat().st_size < 12_000
    rid, c = await accept_and_normalize(db, owner_id, config, path)
    await assert_stopped(db, config, rid, c, "implausible_duration", "bytes carry at most")
    # Refused before decoding when the container tells the length, else as soon as the
    # decoded audio passes what the bytes allow (30 s + 1 s for each 32 bytes).
    expected = "600s of audio" if known_length else "more than"
    assert expected in c["stopped"]["error"]


# --- The owner's hours of audio ---------------------------------------------------------------


@scenario("Audio past the owner's audio quota stops with audio_quota and resumes once it fits")
async def test_audio_quota_at_normalization(db: Database, owner_id: int, tmp_path: Path) -> None:
    config = Config(home=tmp_path / "home", owner_max_audio_hours=8 / 3600)  # 8 s
    first, c = await accept_and_normalize(
        db, owner_id, config, generated_audio.good_file(tmp_path, "wav", 5.0)
    )
    assert c["milestone"] == "normalized"
    # 5 of 8 s used: a 5 s recording does not fit. Its length is known up front...
    known, c = await accept_and_normalize(
        db, owner_id, config, generated_audio.good_file(tmp_path, "flac", 5.0)
    )
    await assert_stopped(db, config, known, c, "audio_quota", "3s of audio left")
    assert "quota" in c["stopped"]["message"]
    # ...or found while decoding, when the container does not say it.
    unknown = generated_audio.flac_without_length(generated_audio.good_file(tmp_path, "flac", 5.0))
    streamed, c = await accept_and_normalize(db, owner_id, config, unknown)
    await assert_stopped(db, config, streamed, c, "audio_quota", "more than 3s")
    assert audio_files(config) == [Path((await state(db, first))["audio_path"])]
    # Another owner's audio is theirs alone: bob's first recording fits.
    bob = await add_owner(db, "bob")
    _, c = await accept_and_normalize(
        db, bob.id, config, generated_audio.good_file(tmp_path, "wav", 5.0)
    )
    assert c["milestone"] == "normalized"
    # Once there is room (here: the operator gave a larger quota), a resume normalizes it.
    roomier = attrs.evolve(config, owner_max_audio_hours=1.0)
    await operator.resume(db, known, by="test")
    c = await normalize(db, roomier, known)
    assert (c["milestone"], c["stopped"]) == ("normalized", None)
    assert c["duration_s"] == pytest.approx(5.0, abs=0.05)


@scenario("An upload past the owner's audio quota is refused with 507")
async def test_upload_past_the_audio_quota_is_refused(db: Database, tmp_path: Path) -> None:
    config = Config(home=tmp_path / "home", owner_max_audio_hours=8 / 3600)  # 8 s
    ann = await add_owner(db, "ann")
    ben = await add_owner(db, "ben")
    _, c = await accept_and_normalize(
        db, ann.id, config, generated_audio.good_file(tmp_path, "wav", 5.0)
    )
    assert c["milestone"] == "normalized"

    def wav(seconds: float) -> bytes:
        return generated_audio.good_file(tmp_path, "wav", seconds).read_bytes()

    async def post(as_: httpx.AsyncClient, data: bytes, openai: bool = False) -> httpx.Response:
        if openai:
            return await as_.post(
                "/v1/audio/transcriptions",
                files={"file": ("a.wav", data, "audio/wav")},
                data={"model": "whisper-1"},
            )
        return await as_.post("/v1/recordings", content=data, headers={"Content-Type": "audio/wav"})

    async with (
        serving(create_app(db, config)) as url,
        client(url, ann) as as_ann,
        client(url, ben) as as_ben,
    ):
        # 3 s left: a recording whose container says 5 s is refused before its record
        # commits, on both doors, and its file goes.
        for openai in (False, True):
            refused = await post(as_ann, wav(5.0), openai)
            assert refused.status_code == 507, refused.text
            error = refused.json()["error"]
            assert "3 s left" in (error["message"] if openai else error)
        assert await count_recordings(db) == 1
        assert len(store_files(config)) == 1
        # 3 s fit; once they are normalized nothing is left, and any upload is refused.
        fits = await post(as_ann, wav(3.0))
        assert fits.status_code == 201, fits.text
        c = await normalize(db, config, uuid.UUID(fits.json()["id"]))
        assert c["milestone"] == "normalized"
        used_up = await post(as_ann, wav(1.0))
        assert used_up.status_code == 507, used_up.text
        assert "hours of audio" in used_up.json()["error"]
        # Another owner's quota is their own.
        accepted = await post(as_ben, wav(5.0))
        assert accepted.status_code == 201, accepted.text


# --- The disk's reserve -----------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs for the home, so the free space is this test's alone."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def free_bytes(folder: Path) -> int:
    return shutil.disk_usage(folder).free


@scenario("Normalized audio keeps the disk's reserve")
@pytest.mark.parametrize("when", ["before", "while"])
async def test_normalized_audio_keeps_the_disk_reserve(
    db: Database, owner_id: int, tmp_path: Path, small_disk: Path, when: str
) -> None:
    # Two minutes at 8 kHz: 1.9 MB uploaded, 3.8 MB once normalized.
    source = generated_audio.wav_at_rate(tmp_path, 8000, 120.0)
    config = Config(home=small_disk / "home", min_free_bytes=0)
    rid = await accept_file(db, config, source, owner_id)
    free = free_bytes(small_disk)
    # "before": the disk is at its reserve already; "while": 2 MiB of room, less than
    # the audio needs, so the writer meets the reserve in the middle.
    reserve = free + 1 if when == "before" else free - 2 * MiB
    c = await normalize(db, attrs.evolve(config, min_free_bytes=reserve), rid)

    # The attempt failed (space may come back): retried later, not stopped.
    assert (c["milestone"], c["stopped"]) == ("received", None), c
    row = await state(db, rid)
    assert row["retry_at"] is not None and row["attempts"] == 1
    failed = [e for e in await db.fetch("ops_journal", rid, 100) if e["kind"] == "attempt_failed"]
    error = failed[0]["detail"]["error"]
    assert "TRANSCRIBER_MIN_FREE_BYTES" in error
    # Before: not one byte was written; while: cut before the chunk that would cross.
    assert "more would leave" in error and (" 0 more" in error) == (when == "before"), error
    assert audio_files(config) == []  # the partial file is gone
    assert free_bytes(small_disk) >= min(free, reserve)  # never below the reserve
    # Room again (no reserve): the next attempt, once due, normalizes it.
    await db.run(
        lambda con: con.execute("UPDATE recordings SET retry_at = NULL WHERE id = $1", rid)
    )
    c = await normalize(db, config, rid)
    assert (c["milestone"], c["stopped"]) == ("normalized", None)


# --- Recognition's run limit ----------------------------------------------------------------


@pytest.mark.scenario("pipeline", "The run limit of the longest recording accepted stays in reason")
def test_run_limit_of_the_longest_recording() -> None:
    config = Config()
    steps = audio_steps(attrs.evolve(config, recognizer_url="http://127.0.0.1:1"))
    recognize = steps.steps["normalized"]
    longest = recognize.run_limit.seconds(config.max_duration_s)
    # 900 s + 3 s a second of audio: 12.25 h for 4 h, where 10 s a second gave 40 h.
    assert longest == pytest.approx(900 + 3 * 4 * 3600)
    assert longest < recognize.time_limit_s / 4
