"""Live sessions kept from their first second (capability `live`): the session is a
record at `live` from its start, named in `session.created`; its audio is in the store
as it arrives; the card shows it live with its draft; a dropped connection, a killed
daemon (a real `serve` process, SIGKILL) and an object store each keep it, and another
daemon finishes a session whose daemon died. The client is the real `openai` SDK."""

from __future__ import annotations

import asyncio
import datetime as dt
import signal
import threading
import uuid
import wave
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from websockets.exceptions import ConnectionClosed

from tests.helpers.moto_store import MotoStore
from tests.helpers.pages import signed_in
from tests.helpers.pg_pipeline import journal
from tests.helpers.serve_process import serve_process
from tests.integration.test_live import (
    CHUNK_S,
    RATE,
    chunks,
    live_app,
    live_records,
    next_event,
    session,
    tone,
    until,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import serving
from transcriber.live import LeaseLost, finish_expired, start
from transcriber.live.audio import FLUSH_S
from transcriber.live.sessions import remove_chunks_left
from transcriber.owners import NewOwner
from transcriber.records.deletion import delete_own
from transcriber.storage.configured import blobs_of

LEASE_S = 1.5


DRAFT = "8000 <i>samples</i>"


def marked(samples: Any, language: str | None, prompt: str | None) -> str:
    """A fake recognizer whose text is markup: the page must show it as text."""
    return f"{samples.size} <i>samples</i>"


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("live", title)


@pytest.fixture(params=["local", "s3"])
def config(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Config:
    home = tmp_path / "home"
    if request.param == "local":
        return Config(home=home, live_lease_s=LEASE_S)
    return in_bucket(request.getfixturevalue("moto"), home, monkeypatch)


def in_bucket(moto: MotoStore, home: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)  # this process's store and the daemons it starts
    return Config(home=home, storage_url=f"s3://{moto.new_bucket()}/tx", live_lease_s=LEASE_S)


@pytest.fixture
def bucket(moto: MotoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    return in_bucket(moto, tmp_path / "home", monkeypatch)


@pytest.fixture
def local(tmp_path: Path) -> Config:
    return Config(home=tmp_path / "home", live_lease_s=LEASE_S)


async def row_of(db: Database, rid: uuid.UUID) -> Any:
    return await db.run(
        lambda con: con.fetchrow(
            "SELECT r.milestone, r.size_bytes, r.source_path, r.language, r.options::jsonb,"
            " l.text, l.end_reason"
            " FROM recordings r LEFT JOIN live_sessions l ON l.recording_id = r.id"
            " WHERE r.id = $1",
            rid,
        )
    )


async def kept_seconds(config: Config, db: Database, rid: uuid.UUID) -> float:
    """The seconds of the record's completed WAV, read from the store."""
    source = (await row_of(db, rid))["source_path"]
    async with blobs_of(config).local_file(source) as path:
        with wave.open(str(path)) as w:
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (RATE, 1, 2)
            return w.getnframes() / RATE


async def events_of(db: Database, rid: uuid.UUID) -> list[Any]:
    return [e for e in await journal(db) if e["recording_id"] == rid]


@scenario("A session is a record from its first second, and its card shows it live")
@pytest.mark.scenario("intake", "A live session's record enters at received like an upload")
@pytest.mark.scenario("pipeline", "A running live session is not claimed")
async def test_a_session_is_a_live_record_and_its_card_shows_it(
    db: Database, ann: NewOwner, ben: NewOwner, local: Config
) -> None:
    """While the session runs: the record is Ann's at `live`, its card says so with the
    turns' text, the pipeline cannot claim it, Ben cannot see it; when it closes it is
    at `received` and the draft stays until the transcript replaces it."""
    config = local
    seen: dict[str, Any] = {}
    token = trio.lowlevel.current_trio_token()
    looked, done_looking = trio.Event(), threading.Event()

    async def script(connection: Any) -> None:
        created = await next_event(connection)
        seen["created"] = created.session.model_dump()
        await connection.session.update(session={"type": "transcription"})
        seen["updated"] = (await next_event(connection)).session.model_dump()
        for audio in chunks(tone(0.5)):
            await connection.input_audio_buffer.append(audio=audio)
        await connection.input_audio_buffer.commit()
        completed = "conversation.item.input_audio_transcription.completed"
        while (await next_event(connection)).type != completed:
            pass
        token.run_sync_soon(looked.set)
        await asyncio.get_running_loop().run_in_executor(None, done_looking.wait, 30)

    async with serving(live_app(db, config, marked)) as url:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session, url, ann.token, script)
            await looked.wait()
            rid = uuid.UUID(seen["created"]["record_id"])
            assert seen["updated"]["record_id"] == str(rid)
            async with httpx.AsyncClient(base_url=url) as c:
                card = (
                    await c.get(
                        f"/v1/recordings/{rid}", headers={"Authorization": f"Bearer {ann.token}"}
                    )
                ).json()
                strangers = await c.get(
                    f"/v1/recordings/{rid}", headers={"Authorization": f"Bearer {ben.token}"}
                )
            assert card["state"] == "live" and card["milestone"] == "live", card
            assert card["live_text"] == DRAFT, card
            assert card["size_bytes"] is not None and not card["done"]
            assert strangers.status_code == 404
            # The owner's record page shows it live, with the draft as text, not markup.
            async with signed_in(url, ann) as page:
                shown = (await page.get(f"/recordings/{rid}")).text
            assert "Live: recording" in shown and 'id="live-draft"' in shown, shown
            assert "8000 &lt;i&gt;samples&lt;/i&gt;" in shown and "<i>samples" not in shown
            # The pipeline does not claim it while it runs.
            claimed = await db.run(
                lambda con: con.fetchval(
                    "SELECT count(*) FROM claim_next('{received,normalized,recognized}',"
                    " '{60,60,60}', '{0,0,0}', NULL, ARRAY[gen_random_uuid()], '{}')"
                )
            )
            assert claimed == 0
            done_looking.set()
        # The client has closed; the server ends the session in its own task, which
        # must run before this server stops (else it is ended as `shutdown`).
        [kept] = await until(lambda: live_records(db))
    assert kept == rid
    row = await row_of(db, rid)
    assert row["milestone"] == "received" and row["end_reason"] == "closed", dict(row)
    assert await kept_seconds(config, db, rid) == pytest.approx(0.5, abs=1 / RATE)
    kinds = [(e["kind"], e["milestone"], e["detail"]) for e in await events_of(db, rid)]
    assert kinds[0] == ("accepted", "live", {"via": "live"}), kinds
    assert kinds[1][:2] == ("live_ended", "received") and kinds[1][2]["reason"] == "closed"
    async with serving(live_app(db, config)) as url, httpx.AsyncClient(base_url=url) as c:
        card = (
            await c.get(f"/v1/recordings/{rid}", headers={"Authorization": f"Bearer {ann.token}"})
        ).json()
    # Queued for the transcript, the draft still readable until it is there.
    assert card["state"] == "queued" and card["live_text"] == DRAFT, card


@scenario("A dropped connection mid-session keeps what was sent")
async def test_a_drop_mid_session_keeps_the_audio(
    db: Database, ann: NewOwner, config: Config
) -> None:
    """The connection cut without a close while the record is `live`: every append it
    got is in the record's WAV, in the local folder and in the object store."""
    seen: dict[str, str] = {}

    async def script(connection: Any) -> None:
        seen["rid"] = (await next_event(connection)).session.model_dump()["record_id"]
        for audio in chunks(tone(2.3)):
            await connection.input_audio_buffer.append(audio=audio)
        await connection.session.update(session={"type": "transcription"})
        await next_event(connection)  # updated: every append arrived before it
        connection._connection.transport.abort()

    async with serving(live_app(db, config)) as url:
        await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    assert str(rid) == seen["rid"]
    assert await kept_seconds(config, db, rid) == pytest.approx(2.3, abs=1 / RATE)
    if config.storage_url:
        # The chunks went once the whole was stored.
        left = blobs_of(config).client.list_objects_v2(  # type: ignore[attr-defined]
            Bucket=config.storage_url.split("/")[2], Prefix="tx/live/"
        )
        assert left.get("KeyCount", 0) == 0, left


@scenario("A session whose daemon was killed is finished by another daemon")
async def test_a_killed_daemons_session_is_finished_by_another(
    db: Database, db_url: str, ann: NewOwner, config: Config
) -> None:
    """A real `serve` killed with SIGKILL mid-session (its client still connected): the
    record stays at `live` until its lease runs out, then a second daemon takes the
    session over and the record enters the pipeline with the audio kept — all of it in
    the local folder (each append is written through at once), all but the last
    unflushed second in an object store."""
    sent_s = 3.5
    token = trio.lowlevel.current_trio_token()
    appended = trio.Event()
    seen: dict[str, Any] = {}
    env = {"live_lease_s": str(LEASE_S)}
    if config.storage_url:
        env["storage_url"] = config.storage_url

    async def script(connection: Any) -> None:
        seen["rid"] = uuid.UUID((await next_event(connection)).session.model_dump()["record_id"])
        for audio in chunks(tone(sent_s)):  # at the pace of speech
            await connection.input_audio_buffer.append(audio=audio)
            await asyncio.sleep(CHUNK_S)
        await connection.session.update(
            session={
                "type": "transcription",
                "audio": {"input": {"transcription": {"language": "ru", "prompt": "Tone."}}},
            }
        )
        await next_event(connection)  # every append arrived before it
        token.run_sync_soon(appended.set)
        with pytest.raises(ConnectionClosed):
            while True:
                await next_event(connection, seconds=60)

    async with serve_process(db_url, config.home, "--workers", "0", **env) as first:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session, first.url, ann.token, script)
            await appended.wait()
            first.proc.send_signal(signal.SIGKILL)
            await first.proc.wait()
    rid = seen["rid"]
    assert (await row_of(db, rid))["milestone"] == "live"  # nobody ended it
    assert await live_records(db) == []
    async with serve_process(db_url, config.home, "--workers", "0", **env):
        [kept] = await until(lambda: live_records(db))
    assert kept == rid
    [ended] = [e for e in await events_of(db, rid) if e["kind"] == "live_ended"]
    assert ended["detail"]["taken_over"] is True and ended["detail"]["reason"] == "taken_over"
    seconds = await kept_seconds(config, db, rid)
    lost = sent_s - seconds
    if config.storage_url:
        # What came since the last flush (a second of audio or of time, whichever is
        # first), and what came while that flush's PUT was on its way.
        assert 0 <= lost < 2 * FLUSH_S, seconds
    else:
        assert lost == pytest.approx(0, abs=1 / RATE), seconds
    assert ended["detail"]["audio_s"] == pytest.approx(seconds, abs=0.001)
    # The hints the client set, on the record before the daemon died.
    row = await row_of(db, rid)
    assert row["language"] == "ru" and row["options"]["prompt"] == "Tone.", dict(row)


@scenario("A session whose lease ran out is no longer its daemon's")
async def test_an_expired_lease_is_taken_over_and_the_old_holder_fenced(
    db: Database, ann: NewOwner, config: Config
) -> None:
    """The sweep takes a session whose lease ran out (`now` in the future) and ends
    it; the daemon that held it then renews nothing and writes no draft. A session
    that sent no audio leaves no record."""
    record = await start(db, config, ann.id, RATE)
    await record.write(tone(1.2))
    await record.audio.flush()
    await record.add_text("hello there")
    empty = await start(db, config, ann.id, RATE)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=LEASE_S + 1)
    done = await finish_expired(db, blobs_of(config), LEASE_S, now=later)
    assert done == [record.id]
    with pytest.raises(LeaseLost):
        await record.renew()
    with pytest.raises(LeaseLost):
        await record.add_text("more")
    await record.abandon()
    await empty.abandon()
    row = await row_of(db, record.id)
    assert row["milestone"] == "received" and row["text"] == "hello there", dict(row)
    assert await kept_seconds(config, db, record.id) == pytest.approx(1.2, abs=1 / RATE)
    assert await row_of(db, empty.id) is None
    [gone] = [e for e in await events_of(db, empty.id) if e["kind"] == "deleted"]
    assert gone["detail"]["by"] == "live" and gone["detail"]["taken_over"] is True


@scenario("A session deleted by its owner while it runs leaves no bytes")
async def test_a_session_deleted_while_it_runs_leaves_nothing(
    db: Database, ann: NewOwner, config: Config
) -> None:
    """Ann deletes her live record mid-session: the daemon holding it learns at its
    next renewal, and what it wrote after the deletion's removal goes too."""
    blobs = blobs_of(config)
    record = await start(db, config, ann.id, RATE)
    await record.write(tone(1.0))
    await record.audio.flush()
    [gone] = await delete_own(db, blobs, ann.id, [record.id], via="api")
    assert gone.finished
    await record.write(tone(1.0))  # before the daemon knows
    await record.audio.flush()
    with pytest.raises(LeaseLost):
        await record.renew()
    await record.abandon()
    assert await row_of(db, record.id) is None
    if config.storage_url:
        left = blobs.client.list_objects_v2(  # type: ignore[attr-defined]
            Bucket=config.storage_url.split("/")[2], Prefix="tx/"
        )
        assert left.get("KeyCount", 0) == 0, left
    else:
        assert list((config.home / "uploads").iterdir()) == []


@scenario("A daemon whose session was taken over closes its socket")
async def test_a_taken_over_session_closes_its_socket(
    db: Database, ann: NewOwner, local: Config
) -> None:
    """Another daemon's sweep takes the session over (its lease run out, as for a daemon
    cut off from the database): at its next renewal the serving daemon tells the client
    `session_lost` and closes the socket, and ends nothing itself."""
    token = trio.lowlevel.current_trio_token()
    appended = trio.Event()
    seen: dict[str, Any] = {}

    async def script(connection: Any) -> Any:
        seen["rid"] = uuid.UUID((await next_event(connection)).session.model_dump()["record_id"])
        for audio in chunks(tone(1.0)):
            await connection.input_audio_buffer.append(audio=audio)
        await connection.session.update(session={"type": "transcription"})
        await next_event(connection)
        token.run_sync_soon(appended.set)
        told = await next_event(connection)
        with pytest.raises(ConnectionClosed):
            await next_event(connection)
        return told

    async with serving(live_app(db, local)) as url, trio.open_nursery() as nursery:

        async def client() -> None:
            seen["told"] = await session(url, ann.token, script)

        nursery.start_soon(client)
        await appended.wait()
        later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=LEASE_S + 1)
        assert await finish_expired(db, blobs_of(local), LEASE_S, now=later) == [seen["rid"]]
    told = seen["told"]
    assert told.type == "error" and told.error.code == "session_lost", told
    ended = [e for e in await events_of(db, seen["rid"]) if e["kind"] == "live_ended"]
    assert [e["detail"]["taken_over"] for e in ended] == [True]
    assert await kept_seconds(local, db, seen["rid"]) == pytest.approx(1.0, abs=1 / RATE)


@scenario("Chunks an ended session left in the object store are removed by the sweep")
async def test_chunks_left_behind_are_swept(db: Database, ann: NewOwner, bucket: Config) -> None:
    """A session ended normally leaves no chunk and nothing for the sweep; one whose
    daemon died between storing the whole and removing its chunks (made here by
    putting a chunk back and marking it) has them removed by the next round."""
    config = bucket
    blobs = blobs_of(config)
    record = await start(db, config, ann.id, RATE)
    await record.write(tone(1.5))
    assert await record.end("closed") == record.id
    assert await remove_chunks_left(db, blobs, dt.datetime.now(dt.UTC)) == 0
    s3: Any = blobs
    name, prefix = record.audio.ref.removeprefix("s3://").split("/", 1)
    s3.client.put_object(Bucket=name, Key=f"{prefix}00000001", Body=b"\0\0")
    await db.run(
        lambda con: con.execute(
            "UPDATE live_sessions SET chunks_left = true WHERE recording_id = $1", record.id
        )
    )
    assert await remove_chunks_left(db, blobs, dt.datetime.now(dt.UTC)) == 1
    assert s3.client.list_objects_v2(Bucket=name, Prefix=prefix).get("KeyCount", 0) == 0
    assert await remove_chunks_left(db, blobs, dt.datetime.now(dt.UTC)) == 0
    assert await kept_seconds(config, db, record.id) == pytest.approx(1.5, abs=1 / RATE)
