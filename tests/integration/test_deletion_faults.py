"""A deletion finishes whatever happens after its commit (capability `archive`): a
fault at each point of a deletion — after the DELETE commits and before any byte is
removed, between the upload and the audio, a reply lost to a killed server — leaves
the record's `removals` row, and the next removal round (every daemon's, at start and
periodically, with or without the API) leaves no byte of it, in the local folder and
in the object store.

The faults are forced, never timed: in process, a store that dies (raises a
BaseException, as a killed process runs nothing more) at a named point; for real, a
`transcriber delete` or `serve` process parked inside the object store's DeleteObject
of that point (tests/helpers/moto_store.py `held_deletes`) and killed there."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from actors import Job, Progress, Wakeup, Worker
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.moto_store import MotoStore, held_deletes, keys
from tests.helpers.serve_process import serve_process
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.owners import add_owner
from transcriber.pipeline.audio_steps import normalize_step
from transcriber.pipeline.deletions import keep_removing
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.step_table import step_table
from transcriber.records.deletion import delete_own, finish_removals
from transcriber.storage.blobs import Blobs, StorageError
from transcriber.storage.configured import blobs_of


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


BEFORE_ANY_REMOVAL = "after the commit, before any byte is removed"
BETWEEN_UPLOAD_AND_AUDIO = "between the upload and the audio"


class Killed(BaseException):
    """The process dies here: nothing after it runs (no `except Exception` catches it)."""


class DiesAt(Blobs):
    """The configured store, but the deletion's process dies at `point`."""

    def __init__(self, real: Blobs, point: str) -> None:
        self.real = real
        self.point = point
        self.home = real.home
        self.min_free_bytes = real.min_free_bytes
        self.removed: list[str] = []

    async def remove(self, ref: str) -> None:
        if self.point == BEFORE_ANY_REMOVAL or self.removed:
            raise Killed(self.point)
        await self.real.remove(ref)
        self.removed.append(ref)

    async def remove_record_files(self, record_id: Any) -> list[str]:
        raise Killed(self.point)  # after the audio: no point of this test comes here


@attrs.frozen
class Stored:
    """Where a test's store keeps its bytes, and what is left there."""

    config: Config
    moto: MotoStore | None = None
    bucket: str | None = None

    def left(self) -> list[str]:
        home = self.config.home
        files = [
            str(p)
            for folder in ("uploads", "audio", "scratch")
            if (home / folder).is_dir()
            for p in (home / folder).iterdir()
        ]
        if self.moto is not None and self.bucket is not None:
            files += [f"s3://{self.bucket}/{k}" for k in keys(self.moto, self.bucket)]
        return sorted(files)


def in_bucket(moto: MotoStore, home: Path, monkeypatch: pytest.MonkeyPatch) -> Stored:
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)  # this process's store and the processes it starts
    bucket = moto.new_bucket()
    return Stored(Config(home=home, storage_url=f"s3://{bucket}/tx"), moto, bucket)


@pytest.fixture(params=["local", "s3"])
def stored(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Stored:
    if request.param == "local":
        return Stored(Config(home=tmp_path / "home"))
    return in_bucket(request.getfixturevalue("moto"), tmp_path / "home", monkeypatch)


@pytest.fixture
def bucket(moto: MotoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Stored:
    return in_bucket(moto, tmp_path / "home", monkeypatch)


async def normalized_record(db: Database, config: Config, owner_id: int) -> uuid.UUID:
    """A record with its upload and its normalized audio in the store."""
    rid: uuid.UUID = await accept_file(db, config, SAMPLES / "en.ogg", owner_id)

    async def unused(job: Job, progress: Progress) -> None:
        raise AssertionError("no recognition here")

    steps = step_table(normalize=normalize_step(config, blobs_of(config)), recognize=unused)
    assert await Worker("w", PgQueue(db, steps), steps, Wakeup()).work_once()
    assert await db.run(
        lambda con: con.fetchval("SELECT audio_path IS NOT NULL FROM recordings WHERE id = $1", rid)
    )
    return rid


async def removals(db: Database) -> list[uuid.UUID]:
    return await db.run(
        lambda con: con.fetch("SELECT recording_id FROM removals ORDER BY recording_id")
    )


async def refs_of(db: Database, rid: uuid.UUID) -> list[str]:
    row = await db.run(
        lambda con: con.fetchrow(
            "SELECT source_path, audio_path FROM recordings WHERE id = $1", rid
        )
    )
    return [row["source_path"], row["audio_path"]]


@scenario("A deletion that dies after its commit is finished by the next removal round")
@pytest.mark.parametrize("point", [BEFORE_ANY_REMOVAL, BETWEEN_UPLOAD_AND_AUDIO])
async def test_a_deletion_that_dies_is_finished_by_the_next_round(
    db: Database, owner_id: int, stored: Stored, point: str
) -> None:
    rid = await normalized_record(db, stored.config, owner_id)
    upload, audio = await refs_of(db, rid)
    assert len(stored.left()) == 2
    dying = DiesAt(blobs_of(stored.config), point)
    with pytest.raises(Killed):
        await delete_own(db, dying, owner_id, [rid], via="api")
    # The row is gone (committed), the bytes of the fault's point are not.
    assert await db.run(lambda con: con.fetchval("SELECT count(*) FROM recordings")) == 0
    left = stored.left()
    if point == BEFORE_ANY_REMOVAL:
        assert len(left) == 2
    else:
        assert dying.removed == [upload] and len(left) == 1
    [todo] = await db.run(lambda con: con.fetch("SELECT recording_id, refs FROM removals"))
    assert (todo["recording_id"], todo["refs"]) == (rid, [upload, audio])

    [done] = await finish_removals(db, blobs_of(stored.config))
    assert done.id == rid and done.finished
    assert stored.left() == []
    assert await removals(db) == []
    assert await finish_removals(db, blobs_of(stored.config)) == []  # nothing left to do


class Away(Blobs):
    """A store that cannot be reached: every removal fails as the real one's would."""

    def __init__(self, real: Blobs) -> None:
        self.home = real.home
        self.min_free_bytes = real.min_free_bytes

    async def remove(self, ref: str) -> None:
        raise StorageError("object store: could not connect")

    async def remove_record_files(self, record_id: Any) -> list[str]:
        raise StorageError("object store: could not connect")


@scenario("A store away at the deletion leaves its bytes to the next removal round")
async def test_a_store_away_leaves_the_bytes_to_the_next_round(
    db: Database, owner_id: int, stored: Stored
) -> None:
    rid = await normalized_record(db, stored.config, owner_id)
    upload, audio = await refs_of(db, rid)
    [gone] = await delete_own(db, Away(blobs_of(stored.config)), owner_id, [rid], via="api")
    assert gone.kept == [upload, audio] and gone.claims_kept and not gone.finished
    assert len(stored.left()) == 2 and await removals(db) == [(rid,)]
    [done] = await finish_removals(db, blobs_of(stored.config))  # the store is back
    assert done.finished and stored.left() == [] and await removals(db) == []


@scenario("Every daemon finishes unfinished removals at start and periodically")
async def test_the_rounds_run_periodically(db: Database, owner_id: int, tmp_path: Path) -> None:
    s = Stored(Config(home=tmp_path / "home"))
    store = blobs_of(s.config)
    async with trio.open_nursery() as nursery:
        await nursery.start(keep_removing, db, store, 0.05)  # its start round: nothing
        rid = await normalized_record(db, s.config, owner_id)
        with pytest.raises(Killed):
            await delete_own(db, DiesAt(store, BEFORE_ANY_REMOVAL), owner_id, [rid], via="api")
        assert len(s.left()) == 2 and len(await removals(db)) == 1
        with trio.fail_after(30):  # a later round, whenever it comes
            while await removals(db):
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert s.left() == []


# --- for real: processes killed inside the object store's DeleteObject ------------------


def s3_env(stored: Stored) -> dict[str, str]:
    return {"storage_url": stored.config.storage_url or ""}


@scenario("A deletion killed for real is finished when a daemon without the API starts")
@pytest.mark.parametrize("nth", [1, 2], ids=["before-any-removal", "between-upload-and-audio"])
async def test_a_killed_delete_is_finished_by_a_workers_only_daemon(
    db: Database, db_url: str, owner_id: int, bucket: Stored, nth: int
) -> None:
    assert bucket.moto is not None
    rid = await normalized_record(db, bucket.config, owner_id)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env.update(
        TRANSCRIBER_DATABASE_URL=db_url,
        TRANSCRIBER_HOME=str(bucket.config.home),
        TRANSCRIBER_STORAGE_URL=bucket.config.storage_url or "",
    )
    with held_deletes(bucket.moto, nth) as held:
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "transcriber", "delete", str(rid)], env=env
        )
        try:
            assert await trio.to_thread.run_sync(held.entered.wait, 60), "never removed"
        finally:
            proc.kill()
            await proc.wait()
    assert await db.run(lambda con: con.fetchval("SELECT count(*) FROM recordings")) == 0
    assert len(bucket.left()) == 3 - nth  # the first DeleteObject removed the upload
    assert len(await removals(db)) == 1

    # A daemon with neither the API nor workers: its start round finishes the deletion
    # before it says it is ready.
    async with serve_process(
        db_url, bucket.config.home, "--no-api", "--workers", "0", **s3_env(bucket)
    ):
        assert bucket.left() == []
        assert await removals(db) == []


@scenario("A lost reply to a deletion: the retry answers 404 and no byte is left")
async def test_a_lost_reply_leaves_no_bytes(db: Database, db_url: str, bucket: Stored) -> None:
    assert bucket.moto is not None
    ann = await add_owner(db, "ann")
    rid = await normalized_record(db, bucket.config, ann.id)
    auth = {"Authorization": f"Bearer {ann.token}"}
    home = bucket.config.home
    lost: list[BaseException] = []
    async with serve_process(db_url, home, "--workers", "0", **s3_env(bucket)) as service:
        with held_deletes(bucket.moto, 1) as held:
            async with (
                httpx.AsyncClient(base_url=service.url, headers=auth, timeout=60) as c,
                trio.open_nursery() as nursery,
            ):

                async def delete() -> None:
                    try:
                        await c.delete(f"/v1/recordings/{rid}")
                    except httpx.TransportError as e:
                        lost.append(e)

                nursery.start_soon(delete)
                assert await trio.to_thread.run_sync(held.entered.wait, 60)
                service.proc.kill()  # the DELETE committed; its reply never comes
    assert len(lost) == 1  # the client saw the connection drop
    assert len(bucket.left()) == 2 and len(await removals(db)) == 1
    async with (
        serve_process(db_url, home, "--workers", "0", **s3_env(bucket)) as service,
        httpx.AsyncClient(base_url=service.url, headers=auth, timeout=60) as c,
    ):
        retry = await c.delete(f"/v1/recordings/{rid}")
        assert retry.status_code == 404  # the record is gone: the retry cannot finish it
        assert bucket.left() == []  # the restarted daemon's start round did
        assert await removals(db) == []


@pytest.mark.scenario("intake", "A daemon without the API sweeps strays at start too")
async def test_a_workers_only_daemon_sweeps_strays(
    db: Database, db_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    uploads = home / "uploads"
    uploads.mkdir(parents=True)
    stray = uploads / uuid.uuid4().hex  # a killed process's upload, no record
    stray.write_bytes(b"half an upload")
    hours_ago = stray.stat().st_mtime - 2 * 3600
    os.utime(stray, (hours_ago, hours_ago))
    young = uploads / uuid.uuid4().hex  # one that may be about to commit
    young.write_bytes(b"an upload")
    async with serve_process(db_url, home, "--no-api", "--workers", "0"):
        assert sorted(uploads.iterdir()) == [young]
