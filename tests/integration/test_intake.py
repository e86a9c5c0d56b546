"""The one intake (transcriber.intake) on a real PostgreSQL: whatever door a recording
comes by, its room is measured, its bytes are durable in the store before its record
commits with an `accepted` event, the same request never makes a second record, and a
refused one leaves nothing behind."""

from __future__ import annotations

import errno
import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import asyncpg
import pytest

from tests.helpers import generated_audio
from tests.helpers.api_clients import count_recordings, store_files
from tests.helpers.interleaved import Interleaved
from tests.helpers.pg_pipeline import journal, state
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.errors import refusal_status
from transcriber.intake import (
    Conflicted,
    Described,
    KeyReused,
    Limits,
    NoRoom,
    Sink,
    TooLarge,
    TooLong,
    accept,
    accept_file,
)
from transcriber.intake.accepting import COMMIT_ATTEMPTS
from transcriber.options import RecognitionOptions
from transcriber.records.deletion import delete_own
from transcriber.storage.local import LocalBlobs

ROOMY = Limits(max_bytes=1000, owner_max_bytes=10**9, owner_max_audio_hours=500)


def sending(data: bytes, told: Described | None = None, *, calls: list[int] | None = None):
    """A door's fill that writes `data` in two parts and says `told`."""

    async def fill(sink: Sink) -> Described:
        if calls is not None:
            calls.append(1)
        await sink.write(data[:3])
        await sink.write(data[3:])
        return told or Described("a.ogg", "a title", "en")

    return fill


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(home=tmp_path / "home")


@pytest.fixture
def blobs(config: Config) -> LocalBlobs:
    return LocalBlobs(config.home)


async def test_a_recording_is_stored_and_committed_with_its_door(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    options = RecognitionOptions(task="translate", prompt="names")
    told = Described("talk.ogg", "Talk", "de", options)
    got = await accept(db, blobs, owner_id, sending(b"OggS body", told), via="api", limits=ROOMY)
    assert got.created and got.size == 9
    row = await state(db, got.id)
    assert row["milestone"] == "received"
    [stored] = store_files(config)
    source = await db.run(
        lambda con: con.fetchval("SELECT source_path FROM recordings WHERE id = $1", got.id)
    )
    assert stored.read_bytes() == b"OggS body" and source == str(stored)
    assert (row["filename"], row["title"], row["language"]) == ("talk.ogg", "Talk", "de")
    [accepted] = await journal(db, got.id)
    assert (accepted["kind"], accepted["detail"]) == ("accepted", {"via": "api"})


async def test_the_same_request_again_names_the_first_record(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    first = await accept(db, blobs, owner_id, sending(b"same bytes"), via="page", limits=ROOMY)
    again = await accept(db, blobs, owner_id, sending(b"same bytes"), via="page", limits=ROOMY)
    assert (again.id, again.created) == (first.id, False)
    other = await accept(
        db, blobs, owner_id, sending(b"same bytes", Described("b.ogg", None, None)), via="api"
    )
    assert other.created and other.id != first.id  # another filename: another request
    assert len(store_files(config)) == 2 and await count_recordings(db) == 2


async def test_without_dedupe_each_call_is_a_record(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    ids = {
        (await accept(db, blobs, owner_id, sending(b"bytes"), via="cli", dedupe=False)).id
        for _ in range(2)
    }
    assert len(ids) == 2 and len(store_files(config)) == 2


async def test_a_key_used_before_compares_and_stores_nothing(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    first = await accept(db, blobs, owner_id, sending(b"first"), via="api", key="k", limits=ROOMY)
    replay = await accept(db, blobs, owner_id, sending(b"first"), via="api", key="k", limits=ROOMY)
    assert (replay.id, replay.created, replay.size) == (first.id, False, 5)
    with pytest.raises(KeyReused, match="'k' was used before"):
        await accept(db, blobs, owner_id, sending(b"other"), via="api", key="k", limits=ROOMY)
    assert [p.read_bytes() for p in store_files(config)] == [b"first"]
    assert await count_recordings(db) == 1


async def test_no_room_is_refused_before_anything_is_read(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    await accept(db, blobs, owner_id, sending(b"x" * 100), via="api", limits=ROOMY)
    calls: list[int] = []
    full = Limits(max_bytes=1000, owner_max_bytes=100, owner_max_audio_hours=500)
    with pytest.raises(NoRoom, match="take 100 bytes of your quota of 100"):
        await accept(db, blobs, owner_id, sending(b"y", calls=calls), via="api", limits=full)
    no_hours = Limits(max_bytes=1000, owner_max_bytes=10**9, owner_max_audio_hours=0)
    with pytest.raises(NoRoom, match="no more audio fits"):
        await accept(db, blobs, owner_id, sending(b"y", calls=calls), via="api", limits=no_hours)
    assert calls == [] and len(store_files(config)) == 1


async def test_past_the_room_the_quota_refuses_and_past_the_limit_the_size(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    tight = Limits(max_bytes=1000, owner_max_bytes=10, owner_max_audio_hours=500)
    with pytest.raises(NoRoom, match="take 0 bytes of your quota of 10"):
        await accept(db, blobs, owner_id, sending(b"z" * 11), via="api", limits=tight)
    small = Limits(max_bytes=10, owner_max_bytes=10**9, owner_max_audio_hours=500)
    with pytest.raises(TooLarge, match="larger than 10 bytes"):
        await accept(db, blobs, owner_id, sending(b"z" * 11), via="api", limits=small)
    assert store_files(config) == [] and await count_recordings(db) == 0


async def test_audio_longer_than_the_hours_left_is_refused_before_the_commit(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs, tmp_path: Path
) -> None:
    data = generated_audio.five_seconds(tmp_path).read_bytes()
    short = Limits(max_bytes=10**7, owner_max_bytes=10**9, owner_max_audio_hours=2 / 3600)
    with pytest.raises(TooLong, match=r"is 5 s of audio; .* has 2 s left"):
        await accept(db, blobs, owner_id, sending(data), via="api", limits=short)
    assert store_files(config) == [] and await count_recordings(db) == 0


async def test_a_full_disk_while_writing_is_no_room_to_retry_later(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    async def fill(sink: Sink) -> Described:
        await sink.write(b"part")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(NoRoom, match="disk is full") as refused:
        await accept(db, blobs, owner_id, fill, via="api", limits=ROOMY)
    assert refused.value.retry_after == 60
    assert store_files(config) == [] and await count_recordings(db) == 0


async def test_a_commit_the_database_refuses_keeps_no_file(
    db: Database, config: Config, blobs: LocalBlobs
) -> None:
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await accept(db, blobs, 999_999, sending(b"bytes"), via="api")  # no such owner
    assert store_files(config) == []


async def test_a_local_file_comes_in_by_the_command_line_each_time(
    db: Database, owner_id: int, config: Config, tmp_path: Path
) -> None:
    source = tmp_path / "talk.ogg"
    source.write_bytes(b"OggS talk")
    ids = [await accept_file(db, config, source, owner_id, title="Talk") for _ in range(2)]
    assert ids[0] != ids[1]
    row = await state(db, ids[0])
    assert (row["filename"], row["title"], row["size_bytes"]) == ("talk.ogg", "Talk", 9)
    assert (await journal(db, ids[0]))[0]["detail"] == {"via": "cli"}
    empty = tmp_path / "empty.ogg"
    empty.write_bytes(b"")
    # An empty file is the normalize step's to stop (empty_file), as any bad audio.
    assert isinstance(await accept_file(db, config, empty, owner_id), uuid.UUID)


async def test_fingerprints_kept_before_the_intake_still_match() -> None:
    sink = Sink(None, None)
    await sink.write(b"bytes")
    told = Described("a.ogg", "a title", "en")
    before = [told.title, told.language, told.filename, 5, hashlib.sha256(b"bytes").hexdigest()]
    assert sink.fingerprint(told) == hashlib.sha256(json.dumps(before).encode()).digest()


@pytest.mark.scenario("intake", "A repeat racing the first record's deletion makes a fresh record")
async def test_an_unkeyed_repeat_whose_first_record_goes_after_the_conflict_is_a_new_record(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    first = await accept(db, blobs, owner_id, sending(b"same bytes"), via="page", limits=ROOMY)

    async def owner_deletes_it() -> None:
        await delete_own(db, blobs, owner_id, [first.id], via="page")

    # The repeat's insert conflicts with the first record; its owner's deletion commits
    # before the repeat reads which record that was.
    racing = Interleaved(db, {("recording_by_fingerprint", 1): owner_deletes_it})
    again = await accept(
        cast(Database, racing), blobs, owner_id, sending(b"same bytes"), via="page", limits=ROOMY
    )
    assert again.created and again.id != first.id
    assert await count_recordings(db) == 1
    assert [p.read_bytes() for p in store_files(config)] == [b"same bytes"]
    assert (await journal(db, again.id))[0]["kind"] == "accepted"


@pytest.mark.scenario("intake", "A repeat racing the first record's deletion makes a fresh record")
async def test_a_keyed_repeat_whose_first_record_goes_after_the_conflict_is_a_new_record(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    made: list[uuid.UUID] = []

    async def the_first_commits() -> None:
        got = await accept(db, blobs, owner_id, sending(b"first"), via="api", key="k")
        made.append(got.id)

    async def owner_deletes_it() -> None:
        await delete_own(db, blobs, owner_id, made, via="api")

    # Both requests find the key free; the first commits before the repeat's insert, and
    # is deleted between that insert's conflict and its read of the key's record.
    racing = Interleaved(
        db,
        {("accept_upload", 1): the_first_commits, ("recording_by_key", 2): owner_deletes_it},
    )
    again = await accept(
        cast(Database, racing), blobs, owner_id, sending(b"first"), via="api", key="k"
    )
    assert again.created and again.id not in made
    assert await count_recordings(db) == 1 and len(store_files(config)) == 1


@pytest.mark.scenario("intake", "A repeat racing the first record's deletion makes a fresh record")
async def test_a_repeat_whose_first_records_keep_going_is_conflicted_never_a_500(
    db: Database, owner_id: int, config: Config, blobs: LocalBlobs
) -> None:
    async def another_commits_and_goes() -> None:
        # Before each insert, the same request commits; after its conflict, it is gone.
        got = await accept(db, blobs, owner_id, sending(b"same"), via="api")
        gone.append(got.id)

    async def it_goes() -> None:
        await delete_own(db, blobs, owner_id, gone, via="api")

    gone: list[uuid.UUID] = []
    before: dict[tuple[str, int], Callable[[], Awaitable[Any]]] = {}
    for n in range(1, COMMIT_ATTEMPTS + 1):
        before[("accept_upload", n)] = another_commits_and_goes
        before[("recording_by_fingerprint", n)] = it_goes
    racing = Interleaved(db, before)
    with pytest.raises(Conflicted, match="send it again") as refused:
        await accept(cast(Database, racing), blobs, owner_id, sending(b"same"), via="api")
    assert await count_recordings(db) == 0 and store_files(config) == []
    assert refusal_status(refused.value) == 409  # HTTP's answer to it
