"""`transcriber storage migrate` (capability `blob-storage`): a single-host home with
transcribed and waiting records moves into the object store, interrupted and resumed."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import attrs
import pytest
import trio

from actors import Wakeup, Worker
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.moto_store import EchoRecognizer, MotoStore, keys
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.storage.configured import blobs_of
from transcriber.storage.s3 import S3Blobs
from transcriber.storage.to_object_store import migrate_to_store

ROOT = Path(__file__).resolve().parents[2]


class Interrupted(Exception):
    pass


async def work_all(db: Database, config: Config, steps: int) -> None:
    pipeline = audio_steps(config)
    w = Worker("w", PgQueue(db, pipeline), pipeline, Wakeup())
    for _ in range(steps):
        assert await w.work_once()


async def refs(db: Database) -> list[tuple[str | None, str | None]]:
    rows = await db.run(
        lambda con: con.fetch(
            "SELECT source_path, audio_path FROM recordings ORDER BY created_at, id"
        )
    )
    return [(r["source_path"], r["audio_path"]) for r in rows]


async def transcripts(db: Database) -> dict[str, str]:
    rows = await db.run(lambda con: con.fetch("SELECT recording_id, text FROM transcripts"))
    return {str(r["recording_id"]): r["text"] for r in rows}


@pytest.mark.scenario("blob-storage", "A single-host home migrates into the store, resumably")
async def test_storage_migrate_moves_a_home_into_the_store(
    db: Database,
    db_url: str,
    owner_id: int,
    moto: MotoStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with EchoRecognizer() as recognizer:
        local = Config(home=tmp_path / "home", recognizer_url=recognizer.url)
        for _ in range(3):
            await accept_file(db, local, SAMPLES / "en.ogg", owner_id)
        await work_all(db, local, 5)  # two transcribed, one normalized
        await accept_file(db, local, SAMPLES / "en.ogg", owner_id)  # and one waiting
        before = await transcripts(db)
        assert len(before) == 2

        for name, value in moto.env().items():
            monkeypatch.setenv(name, value)
        bucket = moto.new_bucket()
        remote = attrs.evolve(local, storage_url=f"s3://{bucket}/tx")
        store = blobs_of(remote)
        assert isinstance(store, S3Blobs)

        def interrupt_after_two(rid: object, seen: list[object] = []) -> None:  # noqa: B006 - counts the calls
            seen.append(rid)
            if len(seen) == 2:
                raise Interrupted

        with pytest.raises(Interrupted):
            await migrate_to_store(db, store, after_record=interrupt_after_two)
        halfway = await refs(db)
        assert sum(r[0].startswith("s3://") for r in halfway) == 2
        assert sum(r[0].startswith("/") for r in halfway) == 2

        # Run again, as the operator would: the command line, to the end.
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
        env.update(
            TRANSCRIBER_DATABASE_URL=db_url,
            TRANSCRIBER_HOME=str(local.home),
            TRANSCRIBER_STORAGE_URL=remote.storage_url,
        )
        done = await trio.run_process(
            [sys.executable, "-m", "transcriber", "storage", "migrate"],
            env=env,
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        assert b"switched 3 refs" in done.stdout  # what the first run left of 4 + 3

        after = await refs(db)
        assert all(s.startswith(f"s3://{bucket}/tx/uploads/") for s, _ in after)
        assert all(a is None or a.startswith(f"s3://{bucket}/tx/audio/") for _, a in after)
        assert len(keys(moto, bucket, "tx/uploads/")) == 4
        assert len(keys(moto, bucket, "tx/audio/")) == 3
        assert await transcripts(db) == before

        # Nothing on this host is needed any more: the waiting records finish from the store.
        shutil.rmtree(local.home / "uploads")
        shutil.rmtree(local.home / "audio")
        await work_all(db, remote, 3)
        assert len(await transcripts(db)) == 4
        assert {k: v for k, v in (await transcripts(db)).items() if k in before} == before

    # Once more: nothing left to do.
    again = await migrate_to_store(db, store)
    assert (again.switched, again.copied, again.errors) == (0, 0, [])
