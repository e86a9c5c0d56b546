"""The recognition capability: options per recording, words in the segments, the
translate task, the recognizer's own process, model names and devices.

Real-model tests are few (each costs seconds of CPU on this machine) and share the
bundled model's folder."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import asyncpg
import pytest
import trio

from actors import Wakeup, Worker
from tests.audio_files import ROOT, SAMPLES
from tests.pipeline_helpers import noop
from transcriber.config import Config
from transcriber.db import Database
from transcriber.milestones import step_table
from transcriber.oneshot import transcribe_file
from transcriber.options import BadOptions, RecognitionOptions
from transcriber.pipeline import audio_steps
from transcriber.queue import PgQueue
from transcriber.store import accept_file


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("recognition", title)


# --- Options --------------------------------------------------------------------------------

@scenario("Options are stored with the recording and read by the recognize step")
async def test_options_reach_the_recognize_step(db: Database, owner_id: int,
                                                tmp_path: Path) -> None:
    seen: list[dict] = []

    async def recognize(job, progress):  # type: ignore[no-untyped-def]
        seen.append(job.inputs["options"])

    steps = step_table(normalize=noop, recognize=recognize)
    chosen = RecognitionOptions(task="translate", prompt="Kubernetes, Postgres", temperature=0.3)
    sample = SAMPLES / "en.ogg"
    await accept_file(db, Config(home=tmp_path), sample, owner_id, options=chosen)
    await accept_file(db, Config(home=tmp_path), sample, owner_id)
    worker = Worker("w", PgQueue(db, steps), steps, Wakeup())
    for _ in range(4):  # normalize, then recognize, each record
        assert await worker.work_once()
    assert [RecognitionOptions.from_json(o) for o in seen] == [chosen, RecognitionOptions()]
    assert seen == [{"task": "translate", "prompt": "Kubernetes, Postgres", "temperature": 0.3},
                    {}]


@scenario("Options no recognizer could use are refused")
async def test_unusable_options_are_refused(db: Database, owner_id: int,
                                            tmp_path: Path) -> None:
    for bad, named in [(dict(task="summarize"), "task"), (dict(temperature=2), "temperature"),
                       (dict(prompt=3), "prompt")]:
        with pytest.raises(BadOptions, match=named):
            RecognitionOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(BadOptions, match="unknown recognition options: voice"):
        RecognitionOptions.from_json({"voice": "x"})
    # The database refuses them too, whoever writes them.
    for bad in [{"task": "summarize"}, {"temperature": 2}, {"prompt": 3}, {"temperature": "hot"}]:
        with pytest.raises(asyncpg.CheckViolationError):
            await db.fetchval("accept", owner_id, "a.wav", 1, "/x", None, None, bad)
    assert await db.fetch("recordings_of_owner", owner_id, None, None, 10) == []
    # And the command line, before anything is stored.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env["TRANSCRIBER_HOME"] = str(tmp_path / "home")
    result = subprocess.run([sys.executable, "-m", "transcriber", "transcribe",
                             str(SAMPLES / "en.ogg"), "--task", "summarize"], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "task must be one of transcribe, translate, not 'summarize'" in result.stderr
    assert not (tmp_path / "home").exists()


# --- Translate ------------------------------------------------------------------------------

@scenario("Russian speech is translated to English text")
async def test_russian_is_translated_to_english(db: Database, tmp_path: Path,
                                                model_dir: Path) -> None:
    config = Config(home=tmp_path, model=str(model_dir))
    with trio.fail_after(180):
        done = await transcribe_file(db, config, audio_steps(config), SAMPLES / "ru.ogg",
                                     language="ru", options=RecognitionOptions(task="translate"))
    assert done.card["done"], done.card
    t = done.transcript
    assert t is not None
    letters = [ch for ch in t["text"] if ch.isalpha()]
    latin = [ch for ch in letters if "LATIN" in unicodedata.name(ch, "")]
    assert len(letters) > 20 and len(latin) == len(letters), t["text"]
    common = {"the", "we", "a", "to", "is", "of", "and", "this", "new", "will", "are"}
    assert common & set(t["text"].lower().split()), t["text"]
