"""How a live session ends, and why (capability `live`): the reason its record keeps
(`live_sessions.end_reason`, the `live_ended` event the owner reads in the record's
journal); the owner's quota holding a running session to the room it had; a token
revoked, a page signed out and a record deleted from the page while the session runs.
The client is the real `openai` SDK (a raw `websockets` client where a browser's cookie
is the credential), against the application served on loopback by Hypercorn."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import trio
import websockets.asyncio.client
from websockets.exceptions import ConnectionClosedOK

from tests.helpers.asyncio_thread import in_asyncio
from tests.helpers.pages import signed_in
from tests.integration.test_live import (
    RATE,
    live_app,
    live_records,
    next_event,
    session,
    tone,
    until,
)
from tests.integration.test_live_kept import LEASE_S, events_of, kept_seconds, row_of
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import serving
from transcriber.owners import NewOwner, revoke

SOCKET = "/v1/realtime?intent=transcription"


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("live", title)


def audio(seconds: float) -> str:
    return base64.b64encode(tone(seconds)).decode()


async def record_of(connection: Any) -> uuid.UUID:
    """The session's record, named by `session.created`."""
    return uuid.UUID((await next_event(connection)).session.model_dump()["record_id"])


async def arrived(connection: Any) -> None:
    """Every append before it has reached the server: a `session.update` answered."""
    await connection.session.update(session={"type": "transcription"})
    assert (await next_event(connection)).type == "session.updated"


async def ended_why(db: Database, rid: uuid.UUID) -> tuple[str, str]:
    """The record's `end_reason` and its `live_ended` event's reason."""
    [ended] = [e for e in await events_of(db, rid) if e["kind"] == "live_ended"]
    return (await row_of(db, rid))["end_reason"], ended["detail"]["reason"]


async def told_and_closed(connection: Any) -> tuple[Any, Any]:
    """The error event the server sent unasked, and the close that followed it."""
    told = await next_event(connection)
    with pytest.raises(ConnectionClosedOK) as closed:
        await next_event(connection)
    return told, closed.value.rcvd


@scenario("Why a session ended is kept with its record")
async def test_why_a_session_ended_is_kept_with_its_record(
    db: Database, ann: NewOwner, tmp_path: Path
) -> None:
    """A clean close, a connection cut without a close frame, and a client gone quiet
    each end the session kept, and each record says which; the owner reads it in the
    record's journal and on its page."""
    config = Config(home=tmp_path / "home")

    async def closes(connection: Any) -> uuid.UUID:
        rid = await record_of(connection)
        await connection.input_audio_buffer.append(audio=audio(0.3))
        await arrived(connection)
        return rid  # the SDK's `close()` on leaving its context: a close frame

    async def drops(connection: Any) -> uuid.UUID:
        rid = await record_of(connection)
        await connection.input_audio_buffer.append(audio=audio(0.3))
        await arrived(connection)
        connection._connection.transport.abort()  # no close frame
        return rid

    async def idles(connection: Any) -> uuid.UUID:
        rid = await record_of(connection)
        await connection.input_audio_buffer.append(audio=audio(0.3))
        told, _ = await told_and_closed(connection)
        assert told.error.code == "session_idle", told
        return rid

    ridden: dict[str, uuid.UUID] = {}
    async with serving(live_app(db, config, idle_s=1.0)) as url:
        for why, script in (("closed", closes), ("dropped", drops), ("idle", idles)):
            ridden[why] = await session(url, ann.token, script)
        await until(lambda: _all_ended(db, 3))
        async with httpx.AsyncClient(base_url=url) as c:
            journal = (
                await c.get(
                    f"/v1/recordings/{ridden['dropped']}/events",
                    headers={"Authorization": f"Bearer {ann.token}"},
                )
            ).json()["events"]
        async with signed_in(url, ann) as page:
            history = (await page.get(f"/recordings/{ridden['dropped']}")).text
    assert "connection was lost" in history, history  # the record page's history says why
    for why, rid in ridden.items():
        assert await ended_why(db, rid) == (why, why), why
        assert await kept_seconds(config, db, rid) == pytest.approx(0.3, abs=1 / RATE)
    [ended] = [e for e in journal if e["kind"] == "live_ended"]
    assert ended["detail"]["reason"] == "dropped", journal


async def _all_ended(db: Database, n: int) -> bool:
    return len(await live_records(db)) == n


@scenario("A session past the room its owner's quota left ends there, kept")
async def test_a_session_past_the_owners_room_ends_there(
    db: Database, ann: NewOwner, ben: NewOwner, tmp_path: Path
) -> None:
    """Ann's quota of bytes leaves a second of audio (its WAV), Ben's of hours a second:
    each session takes 0.8 s and a completed turn, and its next half second is refused
    with `insufficient_quota`, the socket closed, the 0.8 s kept and queued."""

    async def to_the_room(connection: Any) -> tuple[uuid.UUID, Any, Any]:
        rid = await record_of(connection)
        await connection.input_audio_buffer.append(audio=audio(0.8))
        await connection.input_audio_buffer.commit()
        for _ in range(3):  # committed, delta, completed
            await next_event(connection)
        await connection.input_audio_buffer.append(audio=audio(0.5))
        told, closed = await told_and_closed(connection)
        return rid, told, closed

    for owner, room in (
        (ann, {"owner_max_bytes": 44 + RATE * 2}),
        (ben, {"owner_max_audio_hours": 1 / 3600}),
    ):
        config = Config(home=tmp_path / "home", **room)  # type: ignore[arg-type]
        async with serving(live_app(db, config)) as url:
            rid, told, closed = await session(url, owner.token, to_the_room)
            await until(functools.partial(_ended, db, rid))
        assert told.type == "error" and told.error.code == "insufficient_quota", told
        assert "1.0 s" in told.error.message, told
        assert closed is not None and closed.reason == "insufficient_quota", closed
        assert await ended_why(db, rid) == ("quota", "quota")
        row = await row_of(db, rid)
        assert row["milestone"] == "received" and row["size_bytes"] == 44 + int(0.8 * RATE) * 2


async def _ended(db: Database, rid: uuid.UUID) -> bool:
    return rid in await live_records(db)


@scenario("A session whose token is revoked or whose page signed out ends, kept")
async def test_a_revoked_credential_ends_the_session_kept(
    db: Database, ann: NewOwner, ben: NewOwner, tmp_path: Path
) -> None:
    """Ann's token revoked while her SDK's session runs, and Ben's page signed out while
    his page's session runs: each is told `invalid_api_key` within a third of a lease,
    its socket closed, its audio kept (`revoked`). Ann's owner row cannot be deleted
    meanwhile: her records, the running one first, hold it."""
    config = Config(home=tmp_path / "home", live_lease_s=LEASE_S)
    token = trio.lowlevel.current_trio_token()
    sdk_ready, page_ready = trio.Event(), trio.Event()
    seen: dict[str, Any] = {}

    async def revoked(connection: Any) -> None:
        seen["ann"] = await record_of(connection)
        await connection.input_audio_buffer.append(audio=audio(0.5))
        await arrived(connection)
        token.run_sync_soon(sdk_ready.set)
        seen["ann_told"], seen["ann_closed"] = await told_and_closed(connection)

    async def page_session(url: str, cookie: str) -> None:
        async def main() -> None:
            async with websockets.asyncio.client.connect(
                url.replace("http://", "ws://") + SOCKET,
                origin=url,  # type: ignore[arg-type]
                additional_headers={"Cookie": cookie},
            ) as ws:
                created = json.loads(await ws.recv())
                seen["ben"] = uuid.UUID(created["session"]["record_id"])
                await ws.send(
                    json.dumps({"type": "input_audio_buffer.append", "audio": audio(0.4)})
                )
                await ws.send(
                    json.dumps({"type": "session.update", "session": {"type": "transcription"}})
                )
                assert json.loads(await ws.recv())["type"] == "session.updated"
                token.run_sync_soon(page_ready.set)
                seen["ben_told"] = json.loads(await asyncio.wait_for(ws.recv(), 10))
                await asyncio.wait_for(ws.wait_closed(), 10)
                seen["ben_closed"] = ws.close_code

        await in_asyncio(main())

    async with serving(live_app(db, config)) as url, trio.open_nursery() as nursery:
        nursery.start_soon(session, url, ann.token, revoked)
        await sdk_ready.wait()
        with pytest.raises(asyncpg.ForeignKeyViolationError):
            await db.run(lambda con: con.execute("DELETE FROM owners WHERE id = $1", ann.id))
        await revoke(db, "ann", by="test")
        async with signed_in(url, ben) as page:
            cookie = f"transcriber_session={page.cookies['transcriber_session']}"
            nursery.start_soon(page_session, url, cookie)
            await page_ready.wait()
            signed_out = await page.post("/signout", data={"csrf": page.csrf})  # type: ignore[attr-defined]
            assert signed_out.status_code == 303
    assert seen["ann_told"].error.code == "invalid_api_key", seen["ann_told"]
    assert seen["ann_closed"].reason == "invalid_api_key"
    assert seen["ben_told"]["error"]["code"] == "invalid_api_key", seen["ben_told"]
    assert seen["ben_closed"] == 1000
    for who, seconds in (("ann", 0.5), ("ben", 0.4)):
        rid = seen[who]
        await until(functools.partial(_ended, db, rid))
        assert await ended_why(db, rid) == ("revoked", "revoked"), who
        assert await kept_seconds(config, db, rid) == pytest.approx(seconds, abs=1 / RATE)


@scenario("A session whose record its owner deletes from the page ends, nothing kept")
async def test_a_record_deleted_from_the_page_ends_its_session(
    db: Database, ann: NewOwner, tmp_path: Path
) -> None:
    """Ann deletes the running session's record from its page: at the next renewal the
    client is told `session_deleted` and the socket closes; no record, no `live_ended`,
    and no byte of the session is left in the store."""
    config = Config(home=tmp_path / "home", live_lease_s=LEASE_S)
    token = trio.lowlevel.current_trio_token()
    ready = trio.Event()
    seen: dict[str, Any] = {}

    async def script(connection: Any) -> None:
        seen["rid"] = await record_of(connection)
        await connection.input_audio_buffer.append(audio=audio(0.6))
        await arrived(connection)
        token.run_sync_soon(ready.set)
        await connection.input_audio_buffer.append(audio=audio(0.3))  # after the deletion
        seen["told"], seen["closed"] = await told_and_closed(connection)

    async with serving(live_app(db, config)) as url, trio.open_nursery() as nursery:
        nursery.start_soon(session, url, ann.token, script)
        await ready.wait()
        async with signed_in(url, ann) as page:
            gone = await page.post(
                f"/recordings/{seen['rid']}/delete",
                data={"csrf": page.csrf},  # type: ignore[attr-defined]
            )
            assert gone.status_code in (200, 303), gone.text
    assert seen["told"].error.code == "session_deleted", seen["told"]
    assert seen["closed"].reason == "session_deleted"
    assert await row_of(db, seen["rid"]) is None
    kinds = [e["kind"] for e in await events_of(db, seen["rid"])]
    assert "deleted" in kinds and "live_ended" not in kinds, kinds
    uploads = config.home / "uploads"
    await until(lambda: _empty(uploads))


async def _empty(folder: Path) -> bool:
    return not folder.exists() or not any(folder.rglob("*"))


@scenario("An upload while a session runs shrinks the session's room")
async def test_an_upload_meanwhile_shrinks_the_sessions_room(
    db: Database, ann: NewOwner, tmp_path: Path
) -> None:
    """Ann's quota leaves ten seconds when her session starts; after half a second of it
    a recording of hers takes nine seconds' bytes. The session, streaming at the pace
    of speech, is refused with `insufficient_quota` within a renewal of passing the one
    second left, and keeps what it took."""
    config = Config(
        home=tmp_path / "home", live_lease_s=LEASE_S, owner_max_bytes=44 + 10 * RATE * 2
    )
    token = trio.lowlevel.current_trio_token()
    half = trio.Event()
    uploaded = threading.Event()
    seen: dict[str, Any] = {}

    async def paced(connection: Any) -> None:
        seen["rid"] = await record_of(connection)
        for _ in range(5):
            await connection.input_audio_buffer.append(audio=audio(0.1))
        await arrived(connection)
        token.run_sync_soon(half.set)
        await asyncio.get_running_loop().run_in_executor(None, uploaded.wait, 30)
        sent = 0.5
        while sent < 5.0:  # at the pace of speech, as a microphone sends
            await connection.input_audio_buffer.append(audio=audio(0.1))
            sent += 0.1
            await connection.session.update(session={"type": "transcription"})
            answer = await next_event(connection)
            if answer.type == "error":
                seen["told"], seen["sent"] = answer, sent
                break
            await asyncio.sleep(0.1)
        with pytest.raises(ConnectionClosedOK):
            await next_event(connection)

    async with serving(live_app(db, config)) as url, trio.open_nursery() as nursery:
        nursery.start_soon(session, url, ann.token, paced)
        await half.wait()
        await db.fetchval(
            "accept", ann.id, "b.wav", 9 * RATE * 2, "/uploads/b.wav", None, None, None
        )
        uploaded.set()
    rid = seen["rid"]
    await until(functools.partial(_ended, db, rid))
    told = seen["told"]
    assert told.error.code == "insufficient_quota" and "1.0 s" in told.error.message, told
    assert await ended_why(db, rid) == ("quota", "quota")
    kept = await kept_seconds(config, db, rid)
    # Past the second left by at most what came between two measures (a third of a
    # lease, at the pace of speech), and never the five seconds the client had.
    assert 1.0 - 1 / RATE <= kept <= 1.0 + LEASE_S / 3 + 0.2, kept
    assert kept == pytest.approx(seen["sent"] - 0.1, abs=1 / RATE)
