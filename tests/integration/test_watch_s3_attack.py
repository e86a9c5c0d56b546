"""What the owner of a watched S3 prefix can put there, tried against the scans: names
that put a part's edge between a media object and its notes, names around "folders",
names whose order a UTF-16 reader would see otherwise, an object replaced or removed
between its hash read and its take, parts whose edges move, and more media objects than
one watch remembers. Pages of a few keys stand for S3's thousands; moto's standalone
server, real PostgreSQL, scans with a clock set by hand."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers.s3_watching import EN, RU, Prefix, counted, pages, records
from tests.helpers.watching import QUIET_S, Clock, scan_at, takes, watcher
from transcriber.db.database import Database
from transcriber.owners import NewOwner
from transcriber.watch import scanning
from transcriber.watch.scanning import Watcher


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("watch", title)


async def rounds(w: Watcher, clock: Clock, scans: int, start: float = 0.0) -> list[str | None]:
    """`scans` scans a quiet period apart; where each went on after."""
    went_on_after = []
    for n in range(scans):
        await scan_at(w, clock, start + n * QUIET_S)
        went_on_after.append(next(iter(w.folders.values())).after)
    return went_on_after


async def taken_names(db: Database, owner: int) -> list[str]:
    return sorted(r["filename"] for r in await records(db, owner))


@scenario("Many media objects beside one refusal note in another part ask for it once a scan")
async def test_one_head_a_note_however_many_objects_share_it(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a.AAC … a.aac (8 names of one stem) | a.refused.txt b.txt: the part's edge a.aac
    # lies between every one of them and their note.
    same_stem = [f"a.{a}{b}{c}" for a in "Aa" for b in "Aa" for c in "Cc"]
    pages(monkeypatch, keys=len(same_stem), per_scan=1)
    for name in same_stem:
        prefix.put(name, b"not audio")
    prefix.put("a.refused.txt", b"the owner's: leave these")
    prefix.put("b.txt", b"an owner's note")
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    heads = counted(w, "HeadObject")
    assert await rounds(w, clock, 2) == ["a.aac", None]
    await scan_at(w, clock, 2 * QUIET_S)  # all eight quiet, their note outside the part
    # At most one HEAD a dot of the edge names (a.aac: one), not one an object.
    assert heads == ["rec/a.refused.txt"]
    assert await records(db, ann.id) == []


@scenario("A scan asks for no more notes outside its part than its edge names hold dots")
async def test_heads_are_bounded_by_the_dots_of_the_edges(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a.ogg a.p.ogg a.p.p.ogg a.p.p.p | a.p.p.refused.txt a.p.refused.txt a.refused.txt:
    # the edge a.p.p.p (3 dots) lies between each of three stems' objects and notes.
    pages(monkeypatch, keys=4, per_scan=1)
    for stem in ("a", "a.p", "a.p.p"):
        prefix.put(f"{stem}.ogg", b"not audio")
        prefix.put(f"{stem}.refused.txt", b"the owner's: leave it")
    prefix.put("a.p.p.p", b"an edge of many dots")
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    heads = counted(w, "HeadObject")
    assert await rounds(w, clock, 2) == ["a.p.p.p", None]
    await scan_at(w, clock, 2 * QUIET_S)
    assert sorted(heads) == sorted(f"rec/{s}.refused.txt" for s in ("a", "a.p", "a.p.p"))
    assert len(heads) <= "a.p.p.p".count(".")
    assert await records(db, ann.id) == []


@scenario("Keys around a folder, the prefix's own key and a dash are each listed once a round")
async def test_names_around_folders_and_the_prefix_itself(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages(monkeypatch, keys=1, per_scan=1)  # a scan a key
    prefix.moto.client().put_object(Bucket=prefix.bucket, Key="rec/", Body=b"")
    prefix.put("a-.ogg", EN[:21_000])  # '-' < '.' < '/' < '0'
    prefix.put("a.ogg", EN[:22_000])
    prefix.put("a.ogg.x", b"a note after it")
    prefix.put("a/x.ogg", EN[:23_000])  # in a "folder": never taken
    prefix.put("a/y.ogg", EN[:24_000])
    prefix.put("a0.ogg", EN[:25_000])
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    went = await rounds(w, clock, 12)
    # "" is the prefix's own key; a/ the folder, once however many keys it holds (S3
    # lists on after it past every key in it); a0.ogg, the last, reaches the end.
    assert went == ["", "a-.ogg", "a.ogg", "a.ogg.x", "a/", None] * 2
    assert await taken_names(db, ann.id) == ["a-.ogg", "a.ogg", "a0.ogg"]


@scenario("Names past the BMP and just below it are listed in the order Python compares them")
async def test_utf8_order_is_pythons_on_the_store(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # UTF-16 would put U+1F600 (D83D DE00) before U+E000 and U+FFFD; UTF-8 and Python
    # after them.
    names = ["z.ogg", "\u00e9.ogg", "\ue000.ogg", "\ufffd.ogg", "\U0001f600.ogg", "\U0010fffd.ogg"]
    pages(monkeypatch, keys=1, per_scan=1)
    for n, name in enumerate(names):
        prefix.put(name, EN[: 20_000 + 1000 * n])
    listed = prefix.moto.client().list_objects_v2(Bucket=prefix.bucket, Prefix="rec/")
    assert [o["Key"] for o in listed["Contents"]] == [f"rec/{n}" for n in sorted(names)]
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    went = await rounds(w, clock, 2 * len(names))
    assert went == ([*sorted(names)[:-1], None]) * 2
    assert sorted(r["name"] for r in await takes(db)) == sorted(names)


def before_take(monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]) -> list[bytes]:
    """`then` done once, between the scan's hash read and its take; the hashes taken."""
    real = scanning.take
    hashes: list[bytes] = []

    async def take(*args: Any, **kwargs: Any) -> Any:
        if not hashes:
            then()
        hashes.append(args[5])
        return await real(*args, **kwargs)

    monkeypatch.setattr(scanning, "take", take)
    return hashes


@scenario("An object replaced between its hash read and its take makes a record of one version")
@pytest.mark.parametrize("keep_bytes", [len(EN), len(EN) - 1])
async def test_replaced_between_hash_and_take(
    db: Database,
    prefix: Prefix,
    ann: NewOwner,
    watched: int,
    monkeypatch: pytest.MonkeyPatch,
    keep_bytes: int,
) -> None:
    monkeypatch.setattr("transcriber.watch.s3.KEEP_BYTES", keep_bytes)
    prefix.put("a.ogg", EN)
    before_take(monkeypatch, lambda: prefix.put("a.ogg", RU))
    clock = Clock()
    await rounds(watcher(db, prefix.config, clock), clock, 4)
    rows = await takes(db)
    got = {(bytes(r["content_sha256"]), r["size_bytes"]) for r in rows if r["recording_id"]}
    if keep_bytes >= len(EN):  # the bytes listed and hashed, kept: EN's record
        assert (hashlib.sha256(EN).digest(), len(EN)) in got
    else:  # streamed again with If-Match: changed, let go, RU taken once quiet
        assert got == {(hashlib.sha256(RU).digest(), len(RU))}
    for sha, size in got:
        assert (sha, size) in {
            (hashlib.sha256(EN).digest(), len(EN)),
            (hashlib.sha256(RU).digest(), len(RU)),
        }


@scenario("An object removed between its hash read and its take")
@pytest.mark.parametrize("keep_bytes", [len(EN), len(EN) - 1])
async def test_removed_between_hash_and_take(
    db: Database,
    prefix: Prefix,
    ann: NewOwner,
    watched: int,
    monkeypatch: pytest.MonkeyPatch,
    keep_bytes: int,
) -> None:
    monkeypatch.setattr("transcriber.watch.s3.KEEP_BYTES", keep_bytes)
    prefix.put("a.ogg", EN)
    s3 = prefix.moto.client()
    before_take(monkeypatch, lambda: s3.delete_object(Bucket=prefix.bucket, Key="rec/a.ogg"))
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    await rounds(w, clock, 4)
    got = [r["size_bytes"] for r in await records(db, ann.id)]
    # Kept: the listed object's bytes, whole; streamed: gone, nothing made.
    assert got == ([len(EN)] if keep_bytes >= len(EN) else [])
    assert w.folders[watched].seen == {}


@scenario("The same bytes under two names in two parts make one record")
async def test_same_content_in_two_parts(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages(monkeypatch, keys=1, per_scan=1)
    prefix.put("a.ogg", EN)
    prefix.put("b.ogg", EN)
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    gets = counted(w, "GetObject")
    await rounds(w, clock, 8)
    assert await taken_names(db, ann.id) == ["a.ogg"]
    assert gets.count("rec/b.ogg") == 1  # hashed once, found taken, not read again


@scenario("Objects added and removed between scans move the parts' edges: each taken once")
async def test_moving_edges(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages(monkeypatch, keys=2, per_scan=1)
    s3 = prefix.moto.client()
    n = [0]

    def put(name: str) -> None:
        n[0] += 1
        prefix.put(name, EN[: 20_000 + 500 * n[0]])

    for name in ("c.ogg", "e.ogg", "g.ogg", "i.ogg"):
        put(name)
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    changes: list[Callable[[], None]] = [
        lambda: put("a.ogg"),  # before the part just listed: every later edge moves
        lambda: put("d.ogg"),
        lambda: s3.delete_object(Bucket=prefix.bucket, Key="rec/e.ogg"),  # an edge key
        lambda: put("b.ogg"),
        lambda: s3.delete_object(Bucket=prefix.bucket, Key="rec/c.ogg"),
        lambda: put("f.ogg"),
    ]
    for t in range(30):
        await scan_at(w, clock, t * QUIET_S)
        if t < len(changes):
            changes[t]()
    taken = await taken_names(db, ann.id)
    assert len(taken) == len(set(taken))
    assert set(taken) >= {"a.ogg", "b.ogg", "d.ogg", "f.ogg", "g.ogg", "i.ogg"}


@scenario("More media objects than a watch remembers: a valid one is still taken")
@pytest.mark.parametrize("kind", ["empty", "refused", "copies"])
async def test_past_max_remembered_nothing_valid_starves(
    db: Database,
    prefix: Prefix,
    ann: NewOwner,
    watched: int,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
) -> None:
    pages(monkeypatch, keys=2, per_scan=1)
    monkeypatch.setattr("transcriber.watch.folder.MAX_REMEMBERED", 4)
    for n in range(12):  # each never taken, a slot each while remembered
        if kind == "empty":
            prefix.put(f"e{n:02}.ogg", b"")
        elif kind == "refused":  # the owner's note beside each: left alone
            prefix.put(f"e{n:02}.ogg", b"not audio")
            prefix.put(f"e{n:02}.refused.txt", b"leave it")
        else:  # one taken, the others found taken: they rest, never let go
            prefix.put(f"e{n:02}.ogg", EN)
    prefix.put("z.ogg", RU)
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    for _ in range(13):  # rounds of 7 or 13 scans
        await rounds(w, clock, 7, start=clock.t + QUIET_S)
        assert len(w.folders[watched].seen) <= 4
    taken = await taken_names(db, ann.id)
    assert "z.ogg" in taken
    assert len(taken) == (2 if kind == "copies" else 1)
