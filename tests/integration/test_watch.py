"""Watched folders (transcriber.watch) on a real PostgreSQL, scanned in this process with
a clock the test sets: a file is taken once it is whole, once per owner and content
whatever the restarts, renames and daemons; a claim of a daemon that died is taken
over; removed files are forgotten; refusals and unreadable folders are said."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from tests.helpers.generated_audio import SAMPLES
from tests.helpers.pg_pipeline import db_now, journal
from tests.helpers.watching import (
    QUIET_S,
    Clock,
    scan_at,
    taken_and_written,
    takes,
    watcher,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import Described, Sink, accept
from transcriber.owners import add_owner, revoke
from transcriber.storage.blobs import Blobs
from transcriber.storage.configured import blobs_of
from transcriber.watch.folder import Entry, NotTheFile, content_hash, list_folder, open_listed
from transcriber.watch.taking import CLAIM_S, Watch, idempotency_key
from transcriber.watch.watches import add_watch, list_watches
from transcriber.watch.writing import (
    KEPT,
    PART_AGE_S,
    SAME,
    WRITTEN,
    part_name,
    sweep_parts,
    write_new,
)


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("watch", title)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "recorder"
    path.mkdir()
    return path


@pytest.fixture
def config(tmp_path: Path, db_url: str) -> Config:
    return Config(database_url=db_url, home=tmp_path / "home", watch_quiet_s=QUIET_S)


@pytest.fixture
async def ann(db: Database) -> int:
    return (await add_owner(db, "ann")).id


@pytest.fixture
async def watched(db: Database, ann: int, folder: Path) -> int:
    return (await add_watch(db, "ann", str(folder), ("txt", "srt"))).id


async def records(db: Database, owner: int) -> list[Any]:
    return await db.run(
        lambda con: con.fetch(
            "SELECT id, filename FROM recordings WHERE owner_id = $1 ORDER BY created_at", owner
        )
    )


@scenario("A file written slowly is taken once it stops growing")
async def test_a_file_written_in_pieces_is_taken_once_whole(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    data = (SAMPLES / "en.ogg").read_bytes()
    pieces = [data[i : i + 12_000] for i in range(0, len(data), 12_000)]
    clock = Clock()
    w = watcher(db, config, clock)
    path = folder / "talk.ogg"
    t = 0.0
    for piece in pieces:
        with open(path, "ab") as f:
            f.write(piece)
        t += 2 * QUIET_S  # long past the quiet period, but it grew since the last scan
        await scan_at(w, clock, t)
        assert await records(db, ann) == [], "taken while it grew"
    await scan_at(w, clock, t + QUIET_S / 2)  # unchanged, but not for the quiet period
    assert await records(db, ann) == []
    await scan_at(w, clock, t + QUIET_S)
    [record] = await records(db, ann)
    assert record["filename"] == "talk.ogg"
    [accepted] = [e for e in await journal(db, record["id"]) if e["kind"] == "accepted"]
    assert accepted["detail"] == {"via": "watch"}
    for later in range(3):
        await scan_at(w, clock, t + 2 + later)
    assert len(await records(db, ann)) == 1
    assert path.read_bytes() == data  # the folder's file untouched
    assert sorted(p.name for p in folder.iterdir()) == ["talk.ogg"]


@attrs.define
class GatedBlobs:
    """The store, with its `incoming` held until the test opens the gate: a daemon
    stopped between its claim and reading the file into the store."""

    inner: Blobs
    entered: trio.Event = attrs.field(factory=trio.Event)
    go: trio.Event = attrs.field(factory=trio.Event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @contextlib.asynccontextmanager
    async def incoming(self) -> AsyncIterator[Any]:
        self.entered.set()
        await self.go.wait()
        async with self.inner.incoming() as into:
            yield into


@scenario("Two daemons sharing a folder make one record")
async def test_two_daemons_on_one_folder_make_one_record(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    (folder / "a.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    gated = GatedBlobs(blobs_of(config))
    clock = Clock()
    first = watcher(db, config, clock, blobs=gated)  # type: ignore[arg-type]
    second = watcher(db, config, clock)
    for w in (first, second):
        await scan_at(w, clock, 0)
    clock.t = QUIET_S
    async with trio.open_nursery() as nursery:
        nursery.start_soon(first.scan)
        await gated.entered.wait()  # the first has claimed it, and holds it
        await second.scan()  # finds the content claimed
        assert await records(db, ann) == []
        gated.go.set()
    assert len(await records(db, ann)) == 1
    await scan_at(second, clock, 5)
    assert len(await records(db, ann)) == 1
    assert len(await takes(db)) == 1


@scenario("A restart or a rename does not take a file again")
async def test_a_restart_and_a_rename_make_no_second_record(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    (folder / "a.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    clock = Clock()
    before = watcher(db, config, clock)
    await scan_at(before, clock, 0)
    await scan_at(before, clock, QUIET_S)
    assert len(await records(db, ann)) == 1
    after = watcher(db, config, clock)  # a new process: nothing in memory
    for t in (10, 11, 12):
        await scan_at(after, clock, t)
    assert len(await records(db, ann)) == 1
    (folder / "a.ogg").rename(folder / "renamed.ogg")
    for t in (20, 21, 22):
        await scan_at(after, clock, t)
    assert len(await records(db, ann)) == 1
    [take] = await takes(db)
    assert take["name"] == "a.ogg"  # as first taken


@scenario("A file removed before it was taken is forgotten")
async def test_a_file_removed_before_it_was_taken_is_forgotten(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    path = folder / "a.ogg"
    path.write_bytes((SAMPLES / "en.ogg").read_bytes()[:20_000])
    clock = Clock()
    w = watcher(db, config, clock)
    await scan_at(w, clock, 0)
    assert "a.ogg" in w.folders[watched].seen
    path.unlink()
    await scan_at(w, clock, 2)
    assert w.folders[watched].seen == {}
    path.write_bytes((SAMPLES / "en.ogg").read_bytes())  # another file of that name
    await scan_at(w, clock, 2.5)
    await scan_at(w, clock, 2.5 + QUIET_S / 2)
    assert await records(db, ann) == []  # its own quiet period, not the first file's
    await scan_at(w, clock, 2.5 + QUIET_S)
    assert len(await records(db, ann)) == 1
    assert len(await takes(db)) == 1


@scenario("A daemon killed while taking a file leaves it to another")
async def test_a_dead_daemons_claim_is_taken_over(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    path = folder / "a.ogg"
    path.write_bytes((SAMPLES / "en.ogg").read_bytes())
    st = path.stat()
    sha = content_hash(path, Entry("a.ogg", st.st_size, st.st_mtime_ns, st.st_ino))
    now = await db_now(db)

    async def dead_claim(at: dt.datetime) -> None:
        """A claim as a daemon makes it before reading the file, and never finished."""
        row = await db.fetchrow(
            "watch_claim", ann, sha, watched, str(folder), "a.ogg", st.st_size,
            st.st_mtime_ns, CLAIM_S, at,
        )  # fmt: skip
        assert row is not None

    await dead_claim(now)
    clock = Clock()
    w = watcher(db, config, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    assert await records(db, ann) == []  # the claim's lease still runs
    # Its lease ran out (the claim made CLAIM_S ago): the next daemon takes it over.
    await db.run(lambda con: con.execute("DELETE FROM watch_takes"))
    await dead_claim(now - dt.timedelta(seconds=CLAIM_S + 1))
    w = watcher(db, config, clock)
    await scan_at(w, clock, 10)
    await scan_at(w, clock, 10 + QUIET_S)
    [first] = await records(db, ann)

    # Killed after its record committed, before the claim said so: the taker's accept
    # names the same record.
    await db.run(lambda con: con.execute("DELETE FROM watch_takes"))
    await dead_claim(now - dt.timedelta(seconds=CLAIM_S + 1))
    w = watcher(db, config, clock)
    await scan_at(w, clock, 20)
    await scan_at(w, clock, 20 + QUIET_S)
    assert [r["id"] for r in await records(db, ann)] == [first["id"]]
    [take] = await takes(db)
    assert take["recording_id"] == first["id"] and take["claim_token"] is None

    # And the idempotency key is what names it: an accept with it makes no record.
    async def fill(sink: Sink) -> Described:
        await sink.write(path.read_bytes())
        return Described("a.ogg", None, None)

    again = await accept(db, blobs_of(config), ann, fill, via="watch", key=idempotency_key(sha))
    assert (again.id, again.created) == (first["id"], False)


@scenario("A refused file leaves a note and is not tried again")
async def test_a_refused_file_leaves_a_note(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    full = attrs.evolve(config, owner_max_bytes=100)  # the owner's quota: 100 bytes
    (folder / "a.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    clock = Clock()
    w = watcher(db, full, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    note = folder / "a.refused.txt"
    assert "quota" in note.read_text()
    assert await records(db, ann) == [] and await takes(db) == []
    written = note.stat().st_mtime_ns
    for t in (5, 6, 7):
        await scan_at(w, clock, t)
    assert note.stat().st_mtime_ns == written  # not tried again
    note.unlink()  # the owner asks for another try, with room now
    w = watcher(db, config, clock)
    await scan_at(w, clock, 10)
    await scan_at(w, clock, 10 + QUIET_S)
    assert len(await records(db, ann)) == 1
    # Past the size limit of uploads: refused before a byte is read.
    (folder / "b.ogg").write_bytes((SAMPLES / "ru.ogg").read_bytes())
    small = watcher(db, attrs.evolve(config, max_upload_bytes=1000), clock)
    await scan_at(small, clock, 20)
    await scan_at(small, clock, 20 + QUIET_S)
    assert "larger than 1000 bytes" in (folder / "b.refused.txt").read_text()
    assert len(await records(db, ann)) == 1
    # The service's own disk full: not the owner's to fix, so no note; tried again later.
    (folder / "b.refused.txt").unlink()
    disk_full = watcher(db, attrs.evolve(config, min_free_bytes=10**18), clock)
    await scan_at(disk_full, clock, 30)
    await scan_at(disk_full, clock, 30 + QUIET_S)
    assert not (folder / "b.refused.txt").exists() and len(await takes(db)) == 1
    assert disk_full.folders[watched].seen["b.ogg"].rest_until == 30 + QUIET_S + 60


@scenario("An unreadable folder is reported, not a crash")
async def test_unreadable_folders_are_reported(
    db: Database, config: Config, ann: int, watched: int, folder: Path, tmp_path: Path
) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    await add_watch(db, "ann", str(a_file), ("txt",))
    await add_watch(db, "ann", str(tmp_path / "missing"), ("txt",))
    (folder / "a.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    clock = Clock()
    w = watcher(db, config, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    states = {r.folder: r.state for r in await list_watches(db)}
    assert states[str(a_file)] == f"unreadable: Not a directory: {a_file}"
    assert states[str(tmp_path / "missing")].startswith("unreadable: No such file or directory")
    assert states[str(folder)] == "ok"
    assert len(await records(db, ann)) == 1  # the readable one was still scanned

    # A folder closed to the daemon's user: root reads any, so the scan's listing runs
    # as `nobody`, on a folder it may open and one it may not.
    parent = Path(tempfile.mkdtemp(prefix="pt-watch-closed-"))
    try:
        parent.chmod(0o755)
        (parent / "open").mkdir(mode=0o755)
        (parent / "closed").mkdir(mode=0o700)
        probe = (
            "import sys; from pathlib import Path; "
            "from transcriber.watch.folder import list_folder, FolderUnreadable\n"
            "for p in sys.argv[1:]:\n"
            "    try: print(len(list_folder(Path(p)).names))\n"
            "    except FolderUnreadable as e: print(e.reason)"
        )
        done = await trio.run_process(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             sys.executable, "-c", probe, str(parent / "open"), str(parent / "closed")],
            capture_stdout=True, cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
        assert done.stdout.decode().splitlines() == [
            "0",
            f"Permission denied: {parent / 'closed'}",
        ]
    finally:
        shutil.rmtree(parent)


@scenario("Deleting an owner deletes their watches")
async def test_deleting_an_owner_deletes_their_watches(
    db: Database, ann: int, watched: int, folder: Path
) -> None:
    await db.fetchrow(
        "watch_claim", ann, b"\x01" * 32, watched, str(folder), "a.ogg", 1, 1, CLAIM_S, None
    )
    assert len(await takes(db)) == 1
    await db.run(lambda con: con.execute("DELETE FROM owners WHERE id = $1", ann))
    assert await list_watches(db) == [] and await takes(db) == []


async def test_links_are_never_followed(
    db: Database, config: Config, ann: int, watched: int, folder: Path, tmp_path: Path
) -> None:
    """A link in the folder could point anywhere the daemon may read (another owner's
    uploads): never taken, and never written through."""
    secret = tmp_path / "elsewhere.ogg"
    secret.write_bytes((SAMPLES / "en.ogg").read_bytes())
    (folder / "link.ogg").symlink_to(secret)
    (folder / "talk.ogg").write_bytes((SAMPLES / "ru.ogg").read_bytes())
    [listed] = list_folder(folder).media
    assert listed.name == "talk.ogg"
    # Swapped for a link between the listing and the read: refused.
    (folder / "talk.ogg").rename(folder / "kept.ogg")
    (folder / "talk.ogg").symlink_to(secret)
    with pytest.raises(OSError, match="symbolic link"):
        open_listed(folder / "talk.ogg", listed)
    (folder / "talk.ogg").unlink()
    (folder / "talk.ogg").write_bytes(b"another file")  # or for another file
    with pytest.raises(NotTheFile):
        open_listed(folder / "talk.ogg", listed)
    (folder / "talk.ogg").unlink()
    (folder / "kept.ogg").rename(folder / "talk.ogg")
    clock = Clock()
    w = watcher(db, config, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    [record] = await records(db, ann)
    assert record["filename"] == "talk.ogg"
    # A dangling link where a note would go is the owner's: kept, nothing written there.
    (folder / "b.refused.txt").symlink_to(tmp_path / "nowhere")
    here = Watch(watched, ann, str(folder), ("txt",))
    assert await w.note(here, "b.ogg", ".refused.txt", b"x") == "kept"
    assert not (tmp_path / "nowhere").exists()


async def test_a_revoked_owners_watch_pauses(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    await revoke(db, "ann", by="test")
    (folder / "a.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    clock = Clock()
    w = watcher(db, config, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    assert await records(db, ann) == []
    [row] = await list_watches(db)
    assert row.state == "paused (owner revoked)"


def test_only_old_part_files_of_ours_are_swept(folder: Path) -> None:
    """A daemon killed while writing a transcript leaves a hidden part file: removed
    after PART_AGE_S, and nothing else of the folder ever is."""
    target = folder / "talk.srt"
    old, young = part_name(target), part_name(target)
    for p in (old, young, folder / ".talk.srt.part", folder / "talk.ogg"):
        p.write_bytes(b"x")
    long_ago = time.time() - PART_AGE_S - 1
    for p in (old, folder / ".talk.srt.part", folder / "talk.ogg"):
        os.utime(p, (long_ago, long_ago))
    sweep_parts(folder, frozenset(p.name for p in folder.iterdir()))
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [young.name, ".talk.srt.part", "talk.ogg"]
    )
    assert write_new(target, b"1\n") == WRITTEN
    assert write_new(target, b"1\n") == SAME
    assert write_new(target, b"2\n") == KEPT and target.read_bytes() == b"1\n"


async def test_a_file_name_that_is_not_utf8_is_left_alone(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    # Its take could not be kept (PostgreSQL's text is UTF-8): it used to fail the
    # folder's whole scan, each scan, before the other files and every transcript.
    (folder / "a.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    bad = os.path.join(os.fsencode(folder), b"\xff\xfe.ogg")
    with open(bad, "wb") as f:
        f.write((SAMPLES / "ru.ogg").read_bytes())
    os.utime(bad, (1, 1))  # the oldest: looked at first
    clock = Clock()
    w = watcher(db, config, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    assert [r["filename"] for r in await records(db, ann)] == ["a.ogg"]


def test_past_the_listing_bound_the_newest_files_are_looked_at(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not the first the folder lists (the same ones scan after scan, long taken: a new
    # file past them was never seen).
    monkeypatch.setattr("transcriber.watch.folder.MAX_LISTED", 2)
    for n in range(200):
        (folder / f"old-{n}.ogg").write_bytes(b"x")
        os.utime(folder / f"old-{n}.ogg", (1000 + n, 1000 + n))
    (folder / "new.ogg").write_bytes(b"x")
    listing = list_folder(folder)
    assert [m.name for m in listing.media] == ["old-199.ogg", "new.ogg"] and listing.cut


async def test_long_names_get_their_transcripts_or_are_said_too_long(
    db: Database, config: Config, ann: int, watched: int, folder: Path
) -> None:
    # 120 Cyrillic letters (244 bytes) leave room for `.srt`, but not for the part file
    # it was written through (the whole name and 31 bytes): never written, tried again
    # each scan. And at 250 bytes `.stopped.txt` has no room at all: said, not retried.
    from tests.helpers.moto_store import EchoRecognizer

    long, junk = "я" * 120, "ж" * 123
    (folder / f"{long}.ogg").write_bytes((SAMPLES / "en.ogg").read_bytes())
    (folder / f"{junk}.ogg").write_bytes(b"not audio at all " * 100)
    with EchoRecognizer() as recognizer:
        config = attrs.evolve(config, recognizer_url=recognizer.url)
        clock = Clock()
        w = watcher(db, config, clock)
        await taken_and_written(db, config, w, clock, 0)
    by_name = {t["name"]: t for t in await takes(db)}
    assert by_name[f"{long}.ogg"]["written"] == "txt written, srt written"
    assert (folder / f"{long}.srt").exists() and (folder / f"{long}.txt").exists()
    assert by_name[f"{junk}.ogg"]["noted_stop"] is not None
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f"{long}.ogg", f"{long}.srt", f"{long}.txt", f"{junk}.ogg"]
    )
