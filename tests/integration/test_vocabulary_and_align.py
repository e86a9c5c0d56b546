"""A vocabulary the recognizer hears (capability `recognition`) and the owner's own text
aligned to the speech (capability `subtitles`): on the API's upload, in the database's
check, on the cards, through a remote recognizer, and with the bundled model on real
speech — the English sample, and an espeak-ng clip of the held-out set of
transcriber/bench/vocabulary.py (the hotwords' form was chosen on the other set)."""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import trio

from actors import Wakeup, Worker
from tests.helpers.api_clients import count_recordings, upload, uploaded
from tests.helpers.pg_pipeline import noop
from tests.integration.test_remote import VERBOSE, FakeOpenAI, normalized_records
from transcriber.audio.alignment import HEARD, UNPLACED
from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.remote import RemoteRecognizer
from transcriber.bench.vocabulary import HELD_OUT, make_clip
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.options import RecognitionOptions
from transcriber.pipeline.audio_steps import audio_steps, remote_step
from transcriber.pipeline.oneshot import transcribe_file
from transcriber.pipeline.operator import card as operator_card
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.step_table import step_table
from transcriber.subtitles import check, cues
from transcriber.subtitles.profiles import PROFILES

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


async def stored_options(db: Database, rid: str) -> Any:
    return await db.run(
        lambda con: con.fetchval("SELECT options FROM recordings WHERE id = $1", uuid.UUID(rid))
    )


@pytest.mark.scenario("recognition", "A vocabulary past its bounds is refused")
async def test_a_vocabulary_past_its_bounds_is_refused(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    before = await count_recordings(db)
    for vocabulary in (
        ", ".join(f"term{i}" for i in range(51)),
        "x" * 61,
        ", ".join("y" * 60 for _ in range(11)),
    ):
        r = await upload(as_ann, vocabulary=vocabulary)
        assert r.status_code == 422, r.text
        assert "vocabulary" in r.text
    assert await count_recordings(db) == before

    card = await uploaded(as_ann, vocabulary="ComfyUI,\n Siobhan Okonkwo ,")
    assert card["vocabulary"] == ["ComfyUI", "Siobhan Okonkwo"]
    assert card["task"] == "transcribe"
    assert (await stored_options(db, card["id"]))["vocabulary"] == ["ComfyUI", "Siobhan Okonkwo"]
    assert (await as_ann.get(f"/v1/recordings/{card['id']}")).json()["vocabulary"] == [
        "ComfyUI",
        "Siobhan Okonkwo",
    ]
    # The operator's card: the record, not the owner's words.
    seen = await operator_card(db, uuid.UUID(card["id"]))
    assert seen is not None and "vocabulary" not in seen

    for bad, check_name in (
        ({"vocabulary": "ComfyUI"}, "options_vocabulary"),
        ({"vocabulary": [1, 2]}, "options_vocabulary"),
        ({"task": "align"}, "options_align_text"),
        ({"text": "Hello."}, "options_align_text"),
    ):
        with pytest.raises(asyncpg.CheckViolationError, match=check_name):
            await db.run(
                lambda con, bad=bad: con.execute(
                    "UPDATE recordings SET options = $2 WHERE id = $1", uuid.UUID(card["id"]), bad
                )
            )


@pytest.mark.scenario(
    "subtitles", "The text to align is bounded and comes only with the task align"
)
async def test_the_text_to_align_is_bounded_and_needs_the_task(
    db: Database, as_ann: httpx.AsyncClient, db_url: str, tmp_path: Path
) -> None:
    before = await count_recordings(db)
    for fields in (
        {"task": "align"},
        {"text": "Hello there."},
        {"task": "align", "text": "x " * 100_000 + "y"},
        {"task": "align", "text": "Hello\x00there."},
    ):
        r = await upload(as_ann, **fields)
        assert r.status_code == 422, (fields.keys(), r.text)
        assert "text" in r.json()["error"], r.text
    assert await count_recordings(db) == before

    text = "Hello there. General Kenobi!\nYou are a bold one."
    card = await uploaded(as_ann, task="align", text=text)
    assert card["task"] == "align"
    assert await stored_options(db, card["id"]) == {"task": "align", "text": text}

    from tests.helpers.cli_process import cli

    script = tmp_path / "script.txt"
    script.write_text("Hello there.")
    done = await cli(
        db_url, "submit", str(SAMPLES / "en.ogg"), "--align", str(script), "--task", "translate",
        home=str(tmp_path / "home"),
    )  # fmt: skip
    assert done.returncode == 2 and "--align" in done.stderr


@pytest.mark.scenario(
    "recognition",
    "The service's vocabulary applies to a record without one, and a remote recognizer "
    "gets it as its prompt",
)
async def test_the_services_vocabulary_and_a_remote_recognizers_prompt(
    db: Database, owner_id: int, tmp_path: Path
) -> None:
    import wave

    wav = tmp_path / "a.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * 16000)
    _, own = await normalized_records(db, owner_id, wav, 2)
    asked = RecognitionOptions(vocabulary=["Kenobi", "Skywalker"], prompt="Star Wars")
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET options = $2 WHERE id = $1", own, asked.to_json()
        )
    )
    with FakeOpenAI([(200, VERBOSE), (200, VERBOSE)]) as server:
        config = Config(recognizer_url=server.url, vocabulary=("ComfyUI", "Okonkwo"))
        steps = step_table(
            normalize=noop, recognize=remote_step(config, RemoteRecognizer(server.url))
        )
        worker = Worker("w", PgQueue(db, steps), steps, Wakeup())
        assert await worker.work_once()
        assert await worker.work_once()
    prompts = [r["fields"]["prompt"].decode() for r in server.requests]
    assert prompts == ["ComfyUI, Okonkwo.", "Kenobi, Skywalker. Star Wars"]


@pytest.mark.scenario("recognition", "Told a name, the recognizer writes it right")
async def test_told_a_name_the_recognizer_writes_it_right(
    db: Database, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer
) -> None:
    # Held out: the hotwords' form was chosen on the other set (bench-subtitles).
    clip = HELD_OUT[4]
    wav = make_clip(clip.text, tmp_path / "clip.wav")
    config = Config(home=tmp_path, model=str(model_dir))
    steps = audio_steps(config, warm_recognizer)
    with trio.fail_after(240):
        plain = await transcribe_file(db, config, steps, wav, language="en")
        told = await transcribe_file(
            db, config, steps, wav, language="en",
            options=RecognitionOptions(vocabulary=clip.terms),
        )  # fmt: skip
    assert plain.transcript is not None and told.transcript is not None
    assert not any(term in plain.transcript["text"] for term in clip.terms), plain.transcript
    assert all(term in told.transcript["text"] for term in clip.terms), told.transcript
    assert (await stored_options(db, told.card["id"]))["vocabulary"] == list(clip.terms)


@pytest.mark.scenario("subtitles", "The owner's text becomes the transcript, each word timed")
async def test_the_owners_text_becomes_the_transcript(
    db: Database, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer
) -> None:
    reference = (SAMPLES / "en.txt").read_text().strip()
    # A word the recognizer writes otherwise, and a sentence nobody said.
    text = reference.replace("engineers", "ingeneers") + " Thank you all for coming today."
    config = Config(home=tmp_path, model=str(model_dir))
    steps = audio_steps(config, warm_recognizer)
    with trio.fail_after(240):
        recognized = await transcribe_file(db, config, steps, SAMPLES / "en.ogg", language="en")
        aligned = await transcribe_file(
            db, config, steps, SAMPLES / "en.ogg", language="en",
            options=RecognitionOptions(task="align", text=text),
        )  # fmt: skip
    assert recognized.transcript is not None and aligned.transcript is not None
    segments = aligned.transcript["segments"]
    words = [w for s in segments for w in s["words"]]
    assert [w["word"].strip() for w in words] == text.split()
    assert [w for s in segments for w in s["text"].split()] == text.split()
    assert all(a["start"] <= b["start"] for a, b in itertools.pairwise(words))
    # Each word heard starts where a word of the recognizer's own starts (its twin: the
    # same word, or "meeting" for its "meetings").
    own = [w["start"] for s in recognized.transcript["segments"] for w in s["words"]]
    for w in words:
        if w["timing"] == HEARD:
            assert min(abs(w["start"] - t) for t in own) <= 0.2, (w, recognized.transcript)
    assert sum(w["timing"] == HEARD for w in words) >= len(reference.split()) - 3
    assert [w["timing"] for w in words[-6:]] == [UNPLACED] * 6
    for profile in PROFILES.values():
        parsed = check.parse(cues.render("srt", segments, profile))
        assert [w for c in parsed for line in c.lines for w in line.split()] == text.split()
