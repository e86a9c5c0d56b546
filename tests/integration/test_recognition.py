"""The recognition capability: options per recording, words in the segments, the
translate task, the recognizer's own process, model names and devices.

Real-model tests are few (each costs seconds of CPU on this machine) and share the
bundled model's folder."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import unicodedata
import wave
from pathlib import Path

import asyncpg
import attrs
import httpx
import pytest
import trio

from actors import Backoff, StepTable, Wakeup, Worker
from tests.helpers.generated_audio import ROOT, SAMPLES
from tests.helpers.pg_pipeline import noop
from tests.helpers.serve_process import serve_process
from transcriber.audio.devices import (
    DeviceChoice,
    DeviceUnavailable,
    choose_device,
    recognizer_info,
)
from transcriber.audio.models import ResolvedModel, resolve_model
from transcriber.audio.normalize import decode_to_wav
from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.recognize import ModelUnavailable
from transcriber.audio.threads import Control
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.options import BadOptions, RecognitionOptions
from transcriber.owners import add_owner
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.oneshot import transcribe_file
from transcriber.pipeline.operator import card
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.prometheus import render_metrics
from transcriber.pipeline.step_table import step_table


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("recognition", title)


# --- Options --------------------------------------------------------------------------------


@scenario("Options are stored with the recording and read by the recognize step")
async def test_options_reach_the_recognize_step(
    db: Database, owner_id: int, tmp_path: Path
) -> None:
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
    # Stored as every way in stores them: the task always (as the API's uploads do).
    assert seen == [
        {"task": "translate", "prompt": "Kubernetes, Postgres", "temperature": 0.3},
        {"task": "transcribe"},
    ]


@scenario("Options no recognizer could use are refused")
async def test_unusable_options_are_refused(db: Database, owner_id: int, tmp_path: Path) -> None:
    for bad, named in [
        ({"task": "summarize"}, "task"),
        ({"temperature": 2}, "temperature"),
        ({"prompt": 3}, "prompt"),
    ]:
        with pytest.raises(BadOptions, match=named):
            RecognitionOptions(**bad)  # type: ignore[arg-type]
    with pytest.raises(BadOptions, match="unknown recognition options: voice"):
        RecognitionOptions.from_json({"voice": "x"})
    # The database refuses them too, whoever writes them.
    unusable = [
        {"task": "summarize"},
        {"temperature": 2},
        {"prompt": 3},
        {"temperature": "hot"},
        {"speakers": "many"},
    ]
    for bad in unusable:
        with pytest.raises(asyncpg.CheckViolationError):
            await db.fetchval("accept", owner_id, "a.wav", 1, "/x", None, None, bad)
    assert await db.fetch("recordings_of_owner", owner_id, None, None, 10) == []
    # Checked wherever the column is written (a domain's check), an update included.
    rid = await db.fetchval("accept", owner_id, "a.wav", 1, "/x", None, None, None)
    with pytest.raises(asyncpg.CheckViolationError):
        await db.run(
            lambda con: con.execute(
                'UPDATE recordings SET options = \'{"task": "summarize"}\' WHERE id = $1', rid
            )
        )
    # And the command line, before anything is stored.
    result = cli(tmp_path / "home", "transcribe", str(SAMPLES / "en.ogg"), "--task", "summarize")
    assert result.returncode == 2
    assert "task must be one of transcribe, translate, align, not 'summarize'" in result.stderr
    assert not (tmp_path / "home").exists()


# --- Translate ------------------------------------------------------------------------------


@scenario("Russian speech is translated to English text")
async def test_russian_is_translated_to_english(
    db: Database, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer
) -> None:
    config = Config(home=tmp_path, model=str(model_dir))
    with trio.fail_after(180):
        done = await transcribe_file(
            db,
            config,
            audio_steps(config, warm_recognizer),
            SAMPLES / "ru.ogg",
            language="ru",
            options=RecognitionOptions(task="translate"),
        )
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
    db: Database, owner_id: int, tmp_path: Path, model_dir: Path, warm_recognizer: ProcessRecognizer
) -> None:
    config = Config(home=tmp_path, model=str(model_dir))
    real = audio_steps(config, warm_recognizer)
    steps = StepTable(
        {
            m: attrs.evolve(s, backoff=Backoff(base_s=0.001, cap_s=0.001))
            for m, s in real.steps.items()
        }
    )
    rid = await accept_file(db, config, SAMPLES / "en.ogg", owner_id)
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
    failed = [e for e in await db.fetch("ops_journal", rid, 100) if e["kind"] == "attempt_failed"]
    assert [e["detail"]["error"] for e in failed] == [
        "RecognizerDied: recognizer process died: signal 9"
    ]
    assert warm_recognizer.started == started + 1  # a fresh child took the next attempt
    assert "march" in (await db.fetchrow("transcript", rid))["text"].lower()


def recognizer_children(pid: int) -> set[int]:
    """The recognizer processes `pid` started, from any of its threads."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"transcriber.audio.processes" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.add(int(child))
    return found


@scenario("The daemon starts its recognizer children as it starts")
async def test_serve_starts_its_recognizer_children(
    db: Database, db_url: str, tmp_path: Path, model_dir: Path
) -> None:
    owner = await add_owner(db, "warm")
    async with serve_process(
        db_url, tmp_path / "home", "--workers", "2", model=str(model_dir)
    ) as service:
        warm = recognizer_children(service.proc.pid)
        assert len(warm) == 2
        async with httpx.AsyncClient(
            base_url=service.url, headers={"Authorization": f"Bearer {owner.token}"}
        ) as c:
            with open(SAMPLES / "en.ogg", "rb") as f:
                answer = await c.post("/v1/recordings", files={"file": ("en.ogg", f)})
            assert answer.status_code == 201, answer.text
            with trio.fail_after(180):  # another process's work: nothing to wait on but it
                while (await c.get(answer.headers["Location"])).json()[
                    "milestone"
                ] != "transcribed":
                    await trio.sleep(0.1)
        assert recognizer_children(service.proc.pid) == warm


@scenario("Recognition runs at a lower CPU priority than the daemon")
def test_recognizer_runs_niced(warm_recognizer: ProcessRecognizer) -> None:
    if not warm_recognizer.idle_pids():
        warm_recognizer.warm(1)
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    for pid in warm_recognizer.idle_pids():
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, ours + 10)


@pytest.mark.scenario("openai", "A streamed transcription sends text as it is recognized")
def test_a_child_sends_each_segment_as_it_is_heard(
    warm_recognizer: ProcessRecognizer, tmp_path: Path
) -> None:
    en, twice = tmp_path / "en.wav", tmp_path / "twice.wav"
    decode_to_wav(SAMPLES / "en.ogg", en, max_duration_s=60)
    with wave.open(str(en), "rb") as r, wave.open(str(twice), "wb") as w:
        w.setparams(r.getparams())
        speech = r.readframes(r.getnframes())
        w.writeframes(speech + b"\0\0" * 2 * r.getframerate() + speech)  # a pause: two
    control = Control()
    transcript = warm_recognizer.transcribe(twice, 26.0, "en", control)
    assert len(transcript.segments) > 1
    assert control.take_drafts() == [s["text"] for s in transcript.segments]


# --- Decoding -------------------------------------------------------------------------------


@scenario("Sequential decoding stays available as a setting")
def test_sequential_decoding_is_a_setting(tmp_path: Path, model_dir: Path) -> None:
    from transcriber.audio.normalize import decode_to_wav
    from transcriber.audio.recognize import WhisperRecognizer

    wav = tmp_path / "en.wav"
    duration = decode_to_wav(SAMPLES / "en.ogg", wav, max_duration_s=60)
    got = WhisperRecognizer(Config(model=str(model_dir), decoding="sequential")).transcribe(
        wav, duration, "en"
    )
    assert "quarterly meetings started early in the morning" in got.text
    assert all(s["words"] for s in got.segments)
    with pytest.raises(ValueError, match="batched, sequential, not 'beam'"):
        WhisperRecognizer(Config(decoding="beam"))


# --- Models and devices ----------------------------------------------------------------------


@scenario("A fetched model is private to the service's user")
def test_a_fetched_model_is_private(tmp_path: Path) -> None:
    def fetch(name: str, dest: Path) -> None:  # writes as a download does, with the umask
        (dest / "sub").mkdir()
        for f in ("model.bin", "config.json", "sub/tokenizer.json"):
            (dest / f).write_bytes(b"x")

    old = os.umask(0)
    try:
        config = Config(home=tmp_path / "home", model="tiny")
        found = resolve_model(config, fetch=fetch)
    finally:
        os.umask(old)
    assert found == ResolvedModel(config.models / "tiny", "tiny")
    for path in [found.path, *found.path.rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path
    assert config.models.stat().st_mode & 0o777 == 0o700


def offline(name: str, dest: Path) -> None:
    raise ConnectionError("no network")


def as_fetched(model_dir: Path, dest: Path) -> None:
    """A model folder laid out as faster-whisper's fetch leaves it (hard links: the
    bundled model's files under another name)."""
    shutil.copytree(model_dir, dest, copy_function=os.link)
    (dest / ".cache" / "huggingface").mkdir(parents=True)


@scenario("A model name loads from the home's models folder without network")
def test_model_by_name_offline(tmp_path: Path, model_dir: Path) -> None:
    from transcriber.audio.normalize import decode_to_wav

    config = Config(home=tmp_path, model="tiny", batch_size=2)
    as_fetched(model_dir, config.models / "tiny")
    assert resolve_model(config, fetch=offline) == ResolvedModel(config.models / "tiny", "tiny")
    wav = tmp_path / "en.wav"
    duration = decode_to_wav(SAMPLES / "en.ogg", wav, max_duration_s=60)
    recognizer = ProcessRecognizer(config)
    try:
        got = recognizer.transcribe(wav, duration, "en")
    finally:
        recognizer.close()
    assert got.model == "tiny" and "quarterly" in got.text


@scenario("A missing named model offline is one clear line")
def test_missing_named_model_offline(tmp_path: Path) -> None:
    config = Config(home=tmp_path, model="small")
    with pytest.raises(ModelUnavailable) as refused:
        resolve_model(config, fetch=offline)
    line = str(refused.value)
    assert "\n" not in line
    assert f"not in {config.models / 'small'}" in line and "TRANSCRIBER_MODEL" in line
    assert list(config.models.iterdir()) == []  # no partial folder
    with pytest.raises(ModelUnavailable, match="neither a model folder nor a faster-whisper"):
        resolve_model(Config(home=tmp_path, model="enormous-v9"), fetch=offline)
    # The command line, with faster-whisper's own fetch made to find no network.
    result = cli(
        tmp_path,
        "transcribe",
        str(SAMPLES / "en.ogg"),
        TRANSCRIBER_MODEL="small",
        HF_HUB_OFFLINE="1",
    )
    assert result.returncode == 2  # the environment's failure, as every other
    [said] = result.stderr.strip().splitlines()
    assert said.startswith(f"transcriber: model 'small' is not in {config.models / 'small'}")
    assert said.endswith("set TRANSCRIBER_MODEL to its folder")


@scenario("The models command lists what is present")
def test_models_command(tmp_path: Path, model_dir: Path) -> None:
    config = Config(home=tmp_path)
    as_fetched(model_dir, config.models / "whisper-base")
    as_fetched(model_dir, config.models / "tiny")
    result = cli(tmp_path, "models", TRANSCRIBER_MODEL="tiny")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["tiny", "148", "MB", "(in", "use)"]
    assert lines[1].split() == ["whisper-base", "148", "MB"]


@scenario("The device is chosen from what CTranslate2 sees")
def test_device_choice() -> None:
    assert choose_device("auto", "auto", cuda_devices=1) == DeviceChoice("cuda", "float16")
    assert choose_device("auto", "auto", cuda_devices=0) == DeviceChoice("cpu", "int8")
    assert choose_device("cpu", "auto", cuda_devices=2) == DeviceChoice("cpu", "int8")
    assert choose_device("cuda", "int8_float16", cuda_devices=1) == DeviceChoice(
        "cuda", "int8_float16"
    )
    assert choose_device("auto", "float32", cuda_devices=0) == DeviceChoice("cpu", "float32")
    with pytest.raises(DeviceUnavailable, match="sees no CUDA device"):
        choose_device("cuda", "auto", cuda_devices=0)
    with pytest.raises(DeviceUnavailable, match="auto, cpu, cuda, not 'tpu'"):
        choose_device("tpu", "auto", cuda_devices=0)


@scenario("The model and device show in the metrics")
async def test_metrics_show_the_recognizer(db: Database) -> None:
    text = await render_metrics(db, recognizer_info(Config()))
    assert (
        'transcriber_recognizer{compute_type="int8",decoding="batched",device="cpu",'
        'model="whisper-base"} 1'
    ) in text.splitlines()


def cli(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    full.update(TRANSCRIBER_HOME=str(home), **env)
    return subprocess.run(
        [sys.executable, "-m", "transcriber", *args],
        env=full,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
