"""What a watched folder gets back (transcriber.watch): the transcript beside each file
once its record is done — the API's bytes, never over a file that is there — a note when
it stops, and the same after real `serve` processes were killed with SIGKILL mid-file and
between taking the file and writing its transcript. And the operator's commands."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.helpers.api_clients import client
from tests.helpers.cli_process import cli
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.serve_process import serve_process
from tests.helpers.watching import QUIET_S, Clock, takes
from transcriber.audio.processes import ProcessRecognizer
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.owners import NewOwner, add_owner
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.runner import Pipeline
from transcriber.stops import stop_message
from transcriber.storage.configured import blobs_of
from transcriber.watch.outputs import FORMATS
from transcriber.watch.scanning import Watcher
from transcriber.watch.watches import NoSuchOwner, add_watch, list_watches


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("watch", title)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "recorder"
    path.mkdir()
    return path


@pytest.fixture
def config(tmp_path: Path, db_url: str, model_dir: Path) -> Config:
    return Config(
        database_url=db_url, home=tmp_path / "home", model=str(model_dir), watch_quiet_s=QUIET_S
    )


@pytest.fixture
async def running(
    db: Database, config: Config, warm_recognizer: ProcessRecognizer
) -> AsyncIterator[None]:
    """One worker with the real steps and the warm bundled model."""
    pipeline = Pipeline(db, audio_steps(config, warm_recognizer), workers=1, poll_s=0.2)
    async with trio.open_nursery() as nursery:
        await nursery.start(pipeline.run)
        yield
        await pipeline.drain(10)
        nursery.cancel_scope.cancel()


async def record_of(db: Database, owner: int) -> Any:
    """The owner's one record, once its steps are over (done or stopped)."""
    with trio.fail_after(120):
        while True:
            rows = await db.run(
                lambda con: con.fetch(
                    "SELECT id, milestone, stopped_at, stop_reason, stop_error"
                    " FROM recordings WHERE owner_id = $1",
                    owner,
                )
            )
            if rows and (rows[0]["milestone"] == "transcribed" or rows[0]["stopped_at"]):
                assert len(rows) == 1
                return rows[0]
            await trio.sleep(0.05)


async def take_and_finish(db: Database, config: Config, owner: int) -> tuple[Watcher, Any]:
    """Scans that take the folder's file, its record run to its end, and the scan that
    writes what comes of it."""
    clock = Clock()
    w = Watcher(db, blobs_of(config), config, clock=clock)
    await w.scan()
    clock.t = QUIET_S
    await w.scan()
    record = await record_of(db, owner)
    clock.t = 2 * QUIET_S
    await w.scan()
    return w, record


@scenario("An owner's own file of the same name is never overwritten")
async def test_the_owners_file_is_kept_and_the_rest_is_the_apis(
    db: Database, config: Config, ann: NewOwner, folder: Path, running: None, base_url: str
) -> None:
    await add_watch(db, "ann", str(folder), ("txt", "srt", "json"))
    (folder / "talk.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    mine = folder / "talk.txt"
    mine.write_text("my own notes\n")
    w, record = await take_and_finish(db, config, ann.id)
    assert record["milestone"] == "transcribed"
    assert mine.read_text() == "my own notes\n"
    async with client(base_url, ann) as api:
        base = f"/v1/recordings/{record['id']}"
        srt = (await api.get(f"{base}/transcript.srt")).content
        as_json = (await api.get(f"{base}/transcript.json")).content
    assert (folder / "talk.srt").read_bytes() == srt and b" --> " in srt
    assert (folder / "talk.json").read_bytes() == as_json
    assert json.loads(as_json)["text"].strip()
    [take] = await db.run(lambda con: con.fetch("SELECT written FROM watch_takes"))
    assert take["written"] == "txt kept, srt written, json written"
    assert sorted(p.name for p in folder.iterdir()) == [
        "talk.json",
        "talk.ogg",
        "talk.srt",
        "talk.txt",
    ]  # no part file left
    w.clock.t = 10  # type: ignore[attr-defined]
    await w.scan()
    assert (folder / "talk.srt").read_bytes() == srt


@scenario("A stopped record leaves a note with its reason")
async def test_a_stopped_record_leaves_a_note(
    db: Database, config: Config, ann: NewOwner, folder: Path, running: None
) -> None:
    await add_watch(db, "ann", str(folder), ("srt",))
    (folder / "junk.mp3").write_bytes(b"\x00not audio at all\xff" * 500)
    _, record = await take_and_finish(db, config, ann.id)
    assert record["stop_reason"] == "undecodable_audio", record
    note = (folder / "junk.stopped.txt").read_text()
    assert note == f"{stop_message('undecodable_audio')}\n\n{record['id']}\n"
    assert record["stop_error"] not in note
    assert not (folder / "junk.srt").exists()
    # `watch list` counts it as stopped, not as waiting for its transcript.
    [row] = await list_watches(db)
    assert (row.taken, row.waiting, row.stopped) == (1, 0, 1)


async def wait_for(probe: Any, what: str, timeout_s: float = 120) -> Any:
    with trio.fail_after(timeout_s):
        while not (found := await probe()):
            await trio.sleep(0.05)
        return found


@scenario("The SRT written beside the file is the API's, even after kills")
async def test_killed_daemons_still_write_the_apis_srt(
    db: Database, db_url: str, tmp_path: Path, model_dir: Path, folder: Path
) -> None:
    ann = await add_owner(db, "ann")
    watch = (await add_watch(db, "ann", str(folder), ("srt", "txt"))).id
    home = tmp_path / "serve-home"
    env = {"watch_scan_s": "0.1", "watch_quiet_s": "1.5", "model": str(model_dir)}
    data = (SAMPLES / "en.ogg").read_bytes()
    path = folder / "talk.ogg"

    async def scans() -> Any:
        return await db.run(lambda c: c.fetchval("SELECT scanned_at FROM watches"))

    async def two_more_scans() -> None:
        first = await wait_for(scans, "a scan")
        await wait_for(lambda: _later(scans, first), "a later scan")

    # Killed mid-file: the first daemon saw the file growing, then died.
    async with serve_process(db_url, home, "--workers", "0", **env) as first:
        path.write_bytes(data[: len(data) // 2])
        await two_more_scans()
        first.proc.kill()
        await first.proc.wait()
    assert await takes(db) == []

    # Killed after taking it, before its transcript (no worker: the record waits).
    async with serve_process(db_url, home, "--workers", "0", **env) as second:
        with open(path, "ab") as f:
            f.write(data[len(data) // 2 :])
        [take] = await wait_for(
            lambda: db.run(
                lambda c: c.fetch("SELECT * FROM watch_takes WHERE recording_id IS NOT NULL")
            ),
            "the take",
        )
        second.proc.kill()
        await second.proc.wait()
    assert not (folder / "talk.srt").exists()

    async with serve_process(db_url, home, "--workers", "1", **env) as third:
        srt_path = folder / "talk.srt"
        await wait_for(lambda: _exists(folder / "talk.txt"), "the transcript")
        async with httpx.AsyncClient(
            base_url=third.url, headers={"Authorization": f"Bearer {ann.token}"}
        ) as api:
            base = f"/v1/recordings/{take['recording_id']}"
            srt = (await api.get(f"{base}/transcript.srt")).content
            text = (await api.get(f"{base}/text")).content
    assert srt_path.read_bytes() == srt and b"00:00:0" in srt
    assert (folder / "talk.txt").read_bytes() == text
    assert path.read_bytes() == data  # the folder's file untouched
    count = await db.run(lambda c: c.fetchval("SELECT count(*) FROM recordings"))
    assert count == 1
    assert (await takes(db))[0]["watch_id"] == watch


async def _later(probe: Any, than: Any) -> bool:
    now = await probe()
    return now is not None and now > than


async def _exists(path: Path) -> bool:
    return path.exists()


@scenario("Add, list and remove from the command line")
async def test_watch_commands(db: Database, db_url: str, tmp_path: Path, folder: Path) -> None:
    await add_owner(db, "ann")
    home = str(tmp_path / "cli-home")
    added = await cli(db_url, "watch", "add", "ann", str(folder), "--formats", "srt,vtt", home=home)
    assert added.returncode == 0, added.stderr
    assert f"watching {folder} for ann" in added.stdout
    listed = await cli(db_url, "watch", "list", home=home)
    [line] = [x for x in listed.stdout.splitlines() if str(folder) in x]
    assert "ann" in line and "srt,vtt" in line and line.endswith("not scanned yet")
    watch_id = line.split()[0]
    nobody = await cli(db_url, "watch", "add", "bob", str(folder), "--formats", "pdf", home=home)
    assert (nobody.returncode, nobody.stderr) == (
        1,
        f"transcriber: unknown format 'pdf'; choose from {','.join(FORMATS)}\n",
    )
    with pytest.raises(NoSuchOwner):
        await add_watch(db, "bob", str(folder), ("txt",))
    removed = await cli(db_url, "watch", "remove", watch_id, home=home)
    assert (removed.returncode, removed.stdout) == (0, f"watch {watch_id} removed\n")
    again = await cli(db_url, "watch", "remove", watch_id, home=home)
    assert (again.returncode, again.stderr) == (1, f"transcriber: no watch {watch_id}\n")
