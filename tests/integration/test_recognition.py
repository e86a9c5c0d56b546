"""The recognition capability: options per recording, words in the segments, the
translate task, the recognizer's own process, model names and devices.

Real-model tests are few (each costs seconds of CPU on this machine) and share the
bundled model's folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import unicodedata
from pathlib import Path

import asyncpg
import attrs
import pytest
import trio

from actors import Backoff, StepTable, Wakeup, Worker
from tests.audio_files import ROOT, SAMPLES
from tests.pipeline_helpers import noop
from transcriber.cards import card
from transcriber.config import Config
from transcriber.db import Database
from transcriber.milestones import step_table
from transcriber.oneshot import transcribe_file
from transcriber.options import BadOptions, RecognitionOptions
from transcriber.pipeline import audio_steps
from transcriber.queue import PgQueue
from transcriber.recognizer_process import ProcessRecognizer
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
    await accept_file(db, tmp_path, sample, owner_id, options=chosen)
    await accept_file(db, tmp_path, sample, owner_id)
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
async def test_russian_is_translated_to_english(db: Database, tmp_path: Path, model_dir: Path,
                                                warm_recognizer: ProcessRecognizer) -> None:
    config = Config(home=tmp_path, model=str(model_dir))
    with trio.fail_after(180):
        done = await transcribe_file(db, config, audio_steps(config, warm_recognizer),
                                     SAMPLES / "ru.ogg",
                                     language="ru", options=RecognitionOptions(task="translate"))
    assert done.card["done"], done.card
    t = done.transcript
    assert t is not None
    letters = [ch for ch in t["text"] if ch.isalpha()]
    latin = [ch for ch in letters if "LATIN" in unicodedata.name(ch, "")]
    assert len(letters) > 20 and len(latin) == len(letters), t["text"]
    common = {"the", "we", "a", "to", "is", "of", "and", "this", "new", "will", "are"}
    assert common & set(t["text"].lower().split()), t["text"]


# --- The recognizer's own process ------------------------------------------------------------

@scenario("A crash of the recognizer process fails only that attempt")
async def test_recognizer_crash_fails_only_the_attempt(
        db: Database, owner_id: int, tmp_path: Path, model_dir: Path,
        warm_recognizer: ProcessRecognizer) -> None:
    config = Config(home=tmp_path, model=str(model_dir))
    real = audio_steps(config, warm_recognizer)
    steps = StepTable({m: attrs.evolve(s, backoff=Backoff(base_s=0.001, cap_s=0.001))
                       for m, s in real.steps.items()})
    rid = await accept_file(db, config.uploads, SAMPLES / "en.ogg", owner_id)
    worker = Worker("w", PgQueue(db, steps), steps, Wakeup())
    assert await worker.work_once()  # normalized
    if not warm_recognizer.idle_pids():
        warm_recognizer.warm(1)
    [child] = warm_recognizer.idle_pids()
    started = warm_recognizer.started
    os.kill(child, signal.SIGKILL)  # as the kernel's OOM killer would

    with trio.fail_after(120):
        assert await worker.work_once()  # the attempt with the dead child
        while not (await card(db, rid))["done"]:
            if not await worker.work_once():
                await trio.sleep(0.002)  # the retry pause is 1 ms
    failed = [e for e in await db.fetch("journal_after", 0, rid, 100)
              if e["kind"] == "attempt_failed"]
    assert [e["detail"]["error"] for e in failed] == [
        "RecognizerDied: recognizer process died: signal 9"]
    assert warm_recognizer.started == started + 1  # a fresh child took the next attempt
    assert "march" in (await db.fetchrow("transcript", rid))["text"].lower()


@scenario("Recognition runs at a lower CPU priority than the daemon")
def test_recognizer_runs_niced(warm_recognizer: ProcessRecognizer) -> None:
    if not warm_recognizer.idle_pids():
        warm_recognizer.warm(1)
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    for pid in warm_recognizer.idle_pids():
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, ours + 10)


# --- Decoding -------------------------------------------------------------------------------

@scenario("Sequential decoding stays available as a setting")
def test_sequential_decoding_is_a_setting(tmp_path: Path, model_dir: Path) -> None:
    from transcriber.normalize import decode_to_wav
    from transcriber.recognize import WhisperRecognizer

    wav = tmp_path / "en.wav"
    duration = decode_to_wav(SAMPLES / "en.ogg", wav, max_duration_s=60)
    got = WhisperRecognizer(Config(model=str(model_dir), decoding="sequential")).transcribe(
        wav, duration, "en")
    assert "quarterly meetings started early in the morning" in got.text
    assert all(s["words"] for s in got.segments)
    with pytest.raises(ValueError, match="batched, sequential, not 'beam'"):
        WhisperRecognizer(Config(decoding="beam"))
