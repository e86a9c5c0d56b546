"""Watching an S3 prefix (capability `watch`): moto's standalone server on loopback, the
service's store in one bucket, the watched prefix beside it; scans in-process with a
clock set by hand, real PostgreSQL, real audio from samples/."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from tests.helpers.moto_store import EchoRecognizer, keys
from tests.helpers.pg_pipeline import db_now
from tests.helpers.s3_watching import EN, RU, Prefix, counted, records
from tests.helpers.serve_process import serve_process
from tests.helpers.watching import (
    QUIET_S,
    Clock,
    scan_at,
    taken_and_written,
    takes,
    watcher,
    work_all,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.owners import add_owner
from transcriber.storage.configured import blobs_of
from transcriber.storage.s3 import S3Blobs
from transcriber.transcripts import owner_rendering
from transcriber.watch.s3 import BadPrefix, prefix_of
from transcriber.watch.taking import CLAIM_S
from transcriber.watch.watches import add_watch, list_watches


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("watch", title)


@pytest.fixture
async def ann(db: Database) -> int:
    return (await add_owner(db, "ann")).id


@scenario("An object uploaded in parts is taken once it stops changing")
async def test_an_object_uploaded_in_parts_is_taken_once_it_stops_changing(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    s3 = prefix.moto.client()
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    # A multipart upload under way: S3 shows nothing of it until it completes.
    up = s3.create_multipart_upload(Bucket=prefix.bucket, Key="rec/talk.ogg")
    sent = s3.upload_part(
        Bucket=prefix.bucket, Key="rec/talk.ogg", UploadId=up["UploadId"], PartNumber=1, Body=EN
    )
    await scan_at(w, clock, 0)
    await scan_at(w, clock, 10 * QUIET_S)
    assert await records(db, ann) == []
    s3.complete_multipart_upload(
        Bucket=prefix.bucket,
        Key="rec/talk.ogg",
        UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"ETag": sent["ETag"], "PartNumber": 1}]},
    )
    # A writer that puts the object again as it grows: each version starts the quiet
    # period over (another size, ETag, LastModified).
    t = 11 * QUIET_S
    for size in (len(EN) // 3, 2 * len(EN) // 3, len(EN)):
        prefix.put("talk.ogg", EN[:size])
        await scan_at(w, clock, t)
        await scan_at(w, clock, t + QUIET_S / 2)
        assert await records(db, ann) == [], "taken while it changed"
        t += 2 * QUIET_S
    await scan_at(w, clock, t)
    await scan_at(w, clock, t + QUIET_S)
    [record] = await records(db, ann)
    assert (record["filename"], record["size_bytes"]) == ("talk.ogg", len(EN))
    for later in range(3):  # and a restarted daemon does not take it again
        await scan_at(watcher(db, prefix.config, clock), clock, t + 2 + later)
    prefix.put("renamed.ogg", EN)  # a copy under another key: the same content
    w2 = watcher(db, prefix.config, clock)
    await scan_at(w2, clock, t + 10)
    await scan_at(w2, clock, t + 10 + QUIET_S)
    assert len(await records(db, ann)) == 1
    assert prefix.names() == ["renamed.ogg", "talk.ogg"]  # nothing written, nothing removed
    assert prefix.get("talk.ogg") == EN


@attrs.define(eq=False)
class HeldBlobs(S3Blobs):
    """The store, with an upload held at its first chunk until `go`: a daemon stopped
    in the middle of reading an object into the store."""

    entered: trio.Event = attrs.field(factory=trio.Event)
    go: trio.Event = attrs.field(factory=trio.Event)

    @classmethod
    def of(cls, config: Config) -> HeldBlobs:
        return cls(**attrs.asdict(blobs_of(config), recurse=False))  # type: ignore[arg-type]

    @contextlib.asynccontextmanager
    async def incoming(self) -> AsyncIterator[Any]:
        async with S3Blobs.incoming(self) as into:
            yield HeldIncoming(into, self)


@attrs.define
class HeldIncoming:
    inner: Any
    held: HeldBlobs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def write(self, data: bytes) -> None:
        await self.inner.write(data)
        self.held.entered.set()
        await self.held.go.wait()


@scenario("Two daemons sharing an S3 prefix make one record")
async def test_two_daemons_on_one_prefix_make_one_record(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    prefix.put("a.ogg", EN)
    held = HeldBlobs.of(prefix.config)
    clock = Clock()
    first = watcher(db, prefix.config, clock, blobs=held)
    second = watcher(db, prefix.config, clock)
    for w in (first, second):
        await scan_at(w, clock, 0)
    clock.t = QUIET_S
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first.scan)
            await held.entered.wait()  # the first claimed it and is reading it
            await second.scan()  # finds the content claimed
            assert await records(db, ann) == []
            held.go.set()
    assert len(await records(db, ann)) == 1
    await scan_at(second, clock, 5)
    assert len(await records(db, ann)) == 1 and len(await takes(db)) == 1


@scenario("A daemon killed while reading an object leaves it to another")
async def test_a_daemon_killed_mid_object_leaves_it_to_another(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    prefix.put("a.ogg", EN)
    held = HeldBlobs.of(prefix.config)
    clock = Clock()
    w = watcher(db, prefix.config, clock, blobs=held)
    await scan_at(w, clock, 0)
    clock.t = QUIET_S
    # Stopped mid-object (cancelled, as `serve` is by SIGTERM): the claim let go, the
    # half-sent upload gone from the store.
    with trio.move_on_after(30) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(w.scan)
            await held.entered.wait()
            nursery.cancel_scope.cancel()
    assert not scope.cancelled_caught
    assert await takes(db) == [] and await records(db, ann) == []
    assert keys(prefix.moto, prefix.bucket, "tx/uploads/") == []

    # Killed outright (SIGKILL) after its claim: the claim holds until its lease runs
    # out, then another daemon takes the object over, once.
    sha = hashlib.sha256(EN).digest()
    etag_ns = (await w.place(prefix.url).listing()).media[0]
    now = await db_now(db)
    row = await db.fetchrow(
        "watch_claim", ann, sha, watched, prefix.url, "a.ogg", len(EN), etag_ns.mtime_ns,
        CLAIM_S, now,
    )  # fmt: skip
    assert row is not None
    other = watcher(db, prefix.config, clock)
    await scan_at(other, clock, 10)
    await scan_at(other, clock, 10 + QUIET_S)
    assert await records(db, ann) == []  # its lease still runs
    await db.run(lambda con: con.execute("DELETE FROM watch_takes"))
    row = await db.fetchrow(
        "watch_claim", ann, sha, watched, prefix.url, "a.ogg", len(EN), etag_ns.mtime_ns,
        CLAIM_S, now - dt.timedelta(seconds=CLAIM_S + 1),
    )  # fmt: skip
    assert row is not None
    other = watcher(db, prefix.config, clock)
    await scan_at(other, clock, 20)
    await scan_at(other, clock, 20 + QUIET_S)
    assert len(await records(db, ann)) == 1
    [take] = await takes(db)
    assert take["recording_id"] is not None


@scenario("An object removed before it was taken is forgotten")
async def test_an_object_removed_before_it_was_taken_is_forgotten(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    prefix.put("a.ogg", EN[:20_000])
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    await scan_at(w, clock, 0)
    assert "a.ogg" in w.folders[watched].seen
    prefix.moto.client().delete_object(Bucket=prefix.bucket, Key="rec/a.ogg")
    await scan_at(w, clock, QUIET_S)
    assert "a.ogg" not in w.folders[watched].seen
    prefix.put("a.ogg", EN)  # it comes again: its own quiet period
    await scan_at(w, clock, 2 * QUIET_S)
    assert await records(db, ann) == []
    await scan_at(w, clock, 3 * QUIET_S)
    [record] = await records(db, ann)
    assert record["size_bytes"] == len(EN)


@pytest.mark.parametrize(("keep_bytes", "reads"), [(len(EN), 1), (len(EN) - 1, 2)])
async def test_an_object_up_to_keep_bytes_is_read_once(
    db: Database,
    prefix: Prefix,
    ann: int,
    watched: int,
    monkeypatch: pytest.MonkeyPatch,
    keep_bytes: int,
    reads: int,
) -> None:
    """Its bytes read for the hash are the take's; a larger object's are read again."""
    monkeypatch.setattr("transcriber.watch.s3.KEEP_BYTES", keep_bytes)
    prefix.put("a.ogg", EN)
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    gets = counted(w, "GetObject")
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    [record] = await records(db, ann)
    assert record["size_bytes"] == len(EN)
    assert gets.count("rec/a.ogg") == reads


LEFT_ALONE = ("sub/a.ogg", "../b.ogg", ".hidden.ogg", "..ogg", "c.ogg/d.ogg")
"""Keys in a "folder" under the prefix (S3 keys are literal: `../` is one) or hidden."""
ODD = "ü %20 &+ <x>?#\u200f;`$(id)`.ogg"
ODD_NAMED = ODD.replace("\u200f", "")


@scenario("The transcript of an object is written beside it as new objects")
async def test_transcripts_beside_objects_are_the_apis_and_never_overwrite(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    prefix.put(ODD, EN)
    prefix.put("talk.ogg", RU)
    prefix.put("talk.txt", b"the owner's own notes")  # a name a transcript wants
    for left_alone in LEFT_ALONE:
        prefix.put(left_alone, EN[:10_000])
    with EchoRecognizer() as recognizer:
        config = attrs.evolve(prefix.config, recognizer_url=recognizer.url)
        clock = Clock()
        w = watcher(db, config, clock)
        await scan_at(w, clock, 0)
        await scan_at(w, clock, QUIET_S)
        made = await records(db, ann)
        # The record is named as an upload would be: no format characters (U+200F).
        assert sorted(r["filename"] for r in made) == sorted([ODD_NAMED, "talk.ogg"])
        await work_all(db, config)
        await scan_at(w, clock, 2 * QUIET_S)
        await scan_at(watcher(db, config, clock), clock, 3 * QUIET_S)  # another daemon
    by_name = {r["filename"]: r["id"] for r in made}
    by_name[ODD] = by_name[ODD_NAMED]
    odd_stem = ODD.removesuffix(".ogg")
    assert prefix.get(f"{odd_stem}.txt") == await owner_rendering(db, ann, by_name[ODD], "text")
    assert prefix.get(f"{odd_stem}.srt") == await owner_rendering(db, ann, by_name[ODD], "srt")
    assert prefix.get("talk.srt") == await owner_rendering(db, ann, by_name["talk.ogg"], "srt")
    assert prefix.get("talk.txt") == b"the owner's own notes"  # kept, never overwritten
    [take] = [t for t in await takes(db) if t["name"] == "talk.ogg"]
    assert take["written"] == "txt kept, srt written"
    assert sorted(prefix.names()) == sorted(
        [ODD, f"{odd_stem}.txt", f"{odd_stem}.srt", "talk.ogg", "talk.txt", "talk.srt", *LEFT_ALONE]
    )  # nothing removed, nothing written for the keys in "folders" or hidden


@scenario("A too large object is refused without being read")
async def test_a_too_large_object_is_refused_with_a_note(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    small = attrs.evolve(prefix.config, max_upload_bytes=len(EN) - 1)
    prefix.put("big.ogg", EN)
    clock = Clock()
    w = watcher(db, small, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    assert await records(db, ann) == [] and await takes(db) == []
    assert b"larger than" in prefix.get("big.refused.txt")
    await scan_at(w, clock, 10)  # not tried again while the note is there
    assert prefix.names() == ["big.ogg", "big.refused.txt"]


@scenario("A prefix that cannot be watched is refused or reported")
async def test_prefixes_a_watch_refuses(db: Database, prefix: Prefix, ann: int) -> None:
    blobs = blobs_of(prefix.config)
    for bad in ("s3://Bad_Bucket/x/", "s3://b", "s3://bucket/a//b/", "s3://bucket/../x/"):
        with pytest.raises(BadPrefix):
            prefix_of(bad)
    assert prefix_of("s3://bucket/a/b") == "s3://bucket/a/b/"
    assert prefix_of("s3://bucket") == prefix_of("s3://bucket/") == "s3://bucket/"
    # The store's own objects (every owner's uploads) are never one owner's to take.
    for own in (
        f"s3://{prefix.bucket}/tx/uploads/",
        f"s3://{prefix.bucket}/",
        f"s3://{prefix.bucket}/TX/uploads/",  # one store ignores case (MinIO on macOS)
    ):
        with pytest.raises(BadPrefix, match="own store"):
            await add_watch(db, "ann", own, ("txt",), blobs)
    # A URL mistyped is not a folder under the command's own (it used to be watched so).
    for typo in ("S3://bucket/x/", "s3:/bucket/x/", "https://bucket.example/x/"):
        with pytest.raises(BadPrefix, match="not a folder"):
            await add_watch(db, "ann", typo, ("txt",), blobs)
    # Without an object store there is no S3 to read it with.
    local = blobs_of(Config(home=prefix.config.home))
    with pytest.raises(BadPrefix, match="object store"):
        await add_watch(db, "ann", "s3://elsewhere/rec/", ("txt",), local)
    # Another bucket these credentials cannot list: added, with the warning, and the
    # daemons say it on the watch.
    added = await add_watch(db, "ann", "s3://no-such-bucket-here/rec/", ("txt",), blobs)
    assert added.readable_here is not None and "NoSuchBucket" in added.readable_here
    clock = Clock()
    await scan_at(watcher(db, prefix.config, clock), clock, 0)
    [row] = await list_watches(db)
    assert row.state.startswith("unreadable:") and "NoSuchBucket" in row.state


async def wait_for(probe: Any, what: str, timeout_s: float = 120) -> Any:
    with trio.fail_after(timeout_s):
        while not (found := await probe()):
            await trio.sleep(0.05)
        return found


@scenario("A daemon killed after taking an object leaves its transcript to another")
async def test_killed_daemons_still_write_the_apis_transcript_beside_the_object(
    db: Database, db_url: str, tmp_path: Path, prefix: Prefix
) -> None:
    cat = await add_owner(db, "cat")
    await add_watch(db, "cat", prefix.url, ("srt", "txt"), blobs_of(prefix.config))
    home = tmp_path / "serve-home"
    env = {"watch_scan_s": "0.1", "watch_quiet_s": "1.5", "storage_url": f"s3://{prefix.bucket}/tx"}
    prefix.put("talk.ogg", EN)

    async def taken() -> list[Any]:
        return await db.run(
            lambda c: c.fetch("SELECT * FROM watch_takes WHERE recording_id IS NOT NULL")
        )

    # SIGKILL once the object is a record, before its transcript (no worker: it waits).
    async with serve_process(db_url, home, "--workers", "0", **env) as first:
        [take] = await wait_for(taken, "the take")
        first.proc.kill()
        await first.proc.wait()
    assert prefix.names() == ["talk.ogg"]

    # Another daemon, with a worker, writes the API's bytes beside the object.
    with EchoRecognizer() as recognizer:
        async with serve_process(
            db_url, home, "--workers", "1", recognizer_url=recognizer.url, **env
        ) as second:
            await wait_for(lambda: _has(prefix, "talk.txt"), "the transcript")
            async with httpx.AsyncClient(
                base_url=second.url, headers={"Authorization": f"Bearer {cat.token}"}
            ) as api:
                base = f"/v1/recordings/{take['recording_id']}"
                srt = (await api.get(f"{base}/transcript.srt")).content
                text = (await api.get(f"{base}/text")).content
    assert prefix.get("talk.srt") == srt and b"-->" in srt
    assert prefix.get("talk.txt") == text
    assert len(await records(db, cat.id)) == 1
    assert prefix.get("talk.ogg") == EN


async def _has(prefix: Prefix, name: str) -> bool:
    return name in await trio.to_thread.run_sync(prefix.names)


async def test_a_key_with_nul_is_left_alone_and_the_others_written(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    # S3 keys may hold NUL, which PostgreSQL's text cannot: it used to fail the watch's
    # whole scan at its claim, each scan, before the other objects and every transcript.
    prefix.put("\x00first.ogg", EN[:40_000])
    prefix.put("talk\x07\u202egpj.ogg", EN)
    prefix.put("plain.ogg", RU)
    with EchoRecognizer() as recognizer:
        config = attrs.evolve(prefix.config, recognizer_url=recognizer.url)
        clock = Clock()
        w = watcher(db, config, clock)
        await scan_at(w, clock, 0)
        await scan_at(w, clock, QUIET_S)
        made = await records(db, ann)
        # The odd name as an upload's would be kept: no control nor format characters.
        assert sorted(r["filename"] for r in made) == ["plain.ogg", "talkgpj.ogg"]
        await work_all(db, config)
        await scan_at(w, clock, 2 * QUIET_S)
    assert sorted(t["written"] for t in await takes(db)) == ["txt written, srt written"] * 2
    assert {"plain.srt", "talk\x07\u202egpj.srt"} <= set(prefix.names())


async def test_past_the_listing_bound_a_new_object_is_still_taken(
    db: Database, prefix: Prefix, ann: int, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A scan looks at a bounded number of objects (MAX_LISTED): it stops before the one
    # past them and the next scan goes on from there. Not the first by key each scan
    # (those were the same ones scan after scan, long taken, and a new one never seen),
    # nor the newest (of more put at once than the bound, the older never seen).
    monkeypatch.setattr("transcriber.watch.s3.MAX_LISTED", 2)
    prefix.put("b.ogg", EN[:30_000])
    prefix.put("c.ogg", EN[:40_000])
    clock = Clock()
    w = watcher(db, prefix.config, clock)
    await scan_at(w, clock, 0)
    await scan_at(w, clock, QUIET_S)
    assert len(await records(db, ann)) == 2
    prefix.put("z.ogg", EN)  # new, past both by key: rounds of two scans (b c | z)
    await scan_at(w, clock, 2 * QUIET_S)
    assert w.folders[watched].after == "c.ogg"  # stopped before a third
    for t in range(3, 6):  # z listed at the 3rd and 5th, taken at its second listing
        await scan_at(w, clock, t * QUIET_S)
    assert sorted(r["filename"] for r in await records(db, ann)) == ["b.ogg", "c.ogg", "z.ogg"]


async def test_stopped_records_leave_room_for_the_transcripts_after_them(
    db: Database, prefix: Prefix, ann: int, watched: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The takes looked at in a scan are bounded (OPEN_PER_SCAN, 100): stopped records
    # wait for a resume, maybe forever, and filled them; no transcript of a file taken
    # after them was ever written.
    monkeypatch.setattr("transcriber.watch.scanning.OPEN_PER_SCAN", 1)
    prefix.put("junk.ogg", b"not audio at all " * 100)
    with EchoRecognizer() as recognizer:
        config = attrs.evolve(prefix.config, recognizer_url=recognizer.url)
        clock = Clock()
        w = watcher(db, config, clock)
        await taken_and_written(db, config, w, clock, 0)
        assert "junk.stopped.txt" in prefix.names()  # its stop noted: it waits for a resume
        prefix.put("talk.ogg", EN)
        await taken_and_written(db, config, w, clock, 3 * QUIET_S)
    assert "talk.srt" in prefix.names() and "talk.txt" in prefix.names()


async def test_a_note_past_the_longest_key_is_said_not_written(
    db: Database, prefix: Prefix, ann: int, watched: int
) -> None:
    # S3 keys are at most 1024 bytes (moto takes longer ones; S3 answers 400, again at
    # each scan): `.stopped.txt` beside a key of 1020 has no room.
    junk = "y" * (1020 - len("rec/") - len(".ogg"))
    prefix.put(f"{junk}.ogg", b"not audio at all " * 100)
    with EchoRecognizer() as recognizer:
        config = attrs.evolve(prefix.config, recognizer_url=recognizer.url)
        clock = Clock()
        w = watcher(db, config, clock)
        await taken_and_written(db, config, w, clock, 0)
    [take] = await takes(db)
    assert take["noted_stop"] is not None
    assert prefix.names() == [f"{junk}.ogg"]
