"""A watched S3 prefix of more keys than one scan lists (transcriber.watch.s3.MAX_PAGES):
each scan lists a part and the next goes on after it, round and round. The bounds are
made small (pages of a few keys), so tens of keys stand for hundreds of thousands;
moto's standalone server, real PostgreSQL, scans with a clock set by hand."""

from __future__ import annotations

import logging

import attrs
import pytest

from tests.helpers.s3_watching import EN, Prefix, pages, records
from tests.helpers.watching import QUIET_S, Clock, scan_at, watcher
from transcriber.db.database import Database
from transcriber.owners import NewOwner


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("watch", title)


@scenario("A media object past the keys one scan lists is taken")
async def test_a_media_object_past_one_scans_keys_is_taken(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 10 keys a scan; 24 notes sort before the one recording: every scan used to list
    # the same first ten, and z.ogg was never seen.
    pages(monkeypatch, keys=5, per_scan=2)
    for n in range(24):
        prefix.put(f"n{n:02}.txt", b"an owner's note")
    prefix.put("z.ogg", EN)
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    went_on_after = []
    for t in range(6):
        await scan_at(w, clock, t * QUIET_S)
        went_on_after.append(w.folders[watched].after)
    # Rounds of ⌊25/10 + 1/10 000⌋ + 1 = 3 scans, each going on where the last stopped;
    # z.ogg listed at the 3rd and 6th, taken at its second listing.
    assert went_on_after == ["n09.txt", "n19.txt", None] * 2
    [record] = await records(db, ann.id)
    assert record["filename"] == "z.ogg"


@scenario("An object outside the part a scan listed is neither forgotten nor taken")
async def test_objects_outside_the_listed_part_are_kept_as_last_seen(
    db: Database, prefix: Prefix, ann: NewOwner, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pages(monkeypatch, keys=2, per_scan=1)  # rounds of two scans: a b | c d
    for n, name in enumerate(("a.ogg", "b.ogg", "c.ogg", "d.ogg")):
        prefix.put(name, EN[: 20_000 + 1000 * n])
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, 0.5 * QUIET_S)  # c d: a and b, not in this part, not forgotten
    assert sorted(w.folders[watched].seen) == ["a.ogg", "b.ogg", "c.ogg", "d.ogg"]
    await scan_at(w, clock, 0.75 * QUIET_S)  # a b again, too soon
    prefix.moto.client().delete_object(Bucket=prefix.bucket, Key="rec/a.ogg")
    # c d again, too soon. a and b are quiet by the clock, but were not listed now: a
    # is gone, and b may have changed since; neither is tried.
    await scan_at(w, clock, 1.25 * QUIET_S)
    assert await records(db, ann.id) == []
    assert "a.ogg" in w.folders[watched].seen  # its part not listed since it went
    await scan_at(w, clock, 1.5 * QUIET_S)  # b c: a, in this part, is gone: forgotten
    assert "a.ogg" not in w.folders[watched].seen
    assert sorted(r["filename"] for r in await records(db, ann.id)) == ["b.ogg", "c.ogg"]
    await scan_at(w, clock, 2 * QUIET_S)  # d
    assert sorted(r["filename"] for r in await records(db, ann.id)) == ["b.ogg", "c.ogg", "d.ogg"]
    await scan_at(w, clock, 2.5 * QUIET_S)  # b c
    assert w.folders[watched].seen == {}  # nothing kept of what was taken


@scenario("An object whose refusal note sorts in another part is not tried again")
async def test_a_refusal_note_in_another_part_is_found(
    db: Database,
    prefix: Prefix,
    ann: NewOwner,
    watched: int,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="transcriber")
    pages(monkeypatch, keys=2, per_scan=1)  # a.ogg a.png | a.refused.txt b.txt
    small = attrs.evolve(prefix.config, max_upload_bytes=len(EN) - 1)
    prefix.put("a.ogg", EN)
    prefix.put("a.png", b"a picture")
    prefix.put("b.txt", b"an owner's note")
    clock = Clock()
    w = watcher(db, small, clock)
    for t in range(3):  # a.ogg listed at the 1st and 3rd scans: refused, its note written
        await scan_at(w, clock, t * QUIET_S)
    assert prefix.names() == ["a.ogg", "a.png", "a.refused.txt", "b.txt"]
    for t in range(3, 7):  # the note is not in a.ogg's part, but is there: not tried
        await scan_at(w, clock, t * QUIET_S)
    refusals = [r for r in caplog.records if "event=watch_refused" in r.getMessage()]
    assert len(refusals) == 1
    assert await records(db, ann.id) == []
