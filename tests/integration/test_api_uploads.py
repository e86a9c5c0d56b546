"""Uploads at their edges (capability `intake`): the size limit, interruptions, a killed
server and the startup sweep, and idempotent retries; over real HTTP on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import httpx
import pytest
import trio
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from tests.helpers.api_clients import (
    client,
    count_recordings,
    store_files,
    upload,
    uploaded,
)
from tests.helpers.interleaved import Interleaved
from tests.helpers.raw_http import (
    CHUNK,
    MiB,
    RawUpload,
    read_line,
    send_all_then_answer,
    send_until_answered,
    until,
    uploads_past_the_key_check,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.http.middleware import DrainRequestBody
from transcriber.owners import NewOwner
from transcriber.records.deletion import delete_own
from transcriber.storage.local import LocalBlobs


def intake(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("intake", title)


ROOT = Path(__file__).resolve().parents[2]


def has_bytes(config: Config, at_least: int) -> bool:
    return any(p.stat().st_size >= at_least for p in store_files(config))


# --- the size limit -----------------------------------------------------------------------


@pytest.fixture
async def small_limit_url(db: Database, config: Config) -> AsyncIterator[str]:
    async with serving(create_app(db, config, max_upload_bytes=MiB)) as url:
        yield url


@intake("An upload over the limit is refused as soon as it passes it")
async def test_upload_over_the_limit_is_refused_at_once(
    db: Database, config: Config, small_limit_url: str, ann: NewOwner
) -> None:
    # Declared too large: refused before a byte of the body is sent.
    declared = await RawUpload.start(small_limit_url, ann, length=5 * MiB)
    with trio.fail_after(5):
        assert await declared.answer() == (413, {"error": f"the upload is larger than {MiB} bytes"})
    await declared.aclose()

    # Streamed without a length, raw or as a form: refused when the limit is passed,
    # long before the end. (Socket buffers on loopback hold a few MiB, not 64.)
    raw = await RawUpload.start(small_limit_url, ann)
    form = await RawUpload.start(
        small_limit_url, ann, content_type="multipart/form-data; boundary=xyz"
    )
    await form.send(
        b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'
    )
    for streamed in (raw, form):
        with trio.fail_after(10):
            status, body = await send_until_answered(streamed, cap=256 * MiB)
        assert status == 413, body
        assert streamed.sent < 64 * MiB
        assert streamed.headers.get("connection") == "close", streamed.headers
        await streamed.aclose()
    # A client that sends everything before it reads still gets the answer.
    whole = await RawUpload.start(small_limit_url, ann, length=16 * MiB)
    with trio.fail_after(10):
        assert (await send_all_then_answer(whole, 16 * MiB))[0] == 413
    await whole.aclose()
    assert await count_recordings(db) == 0
    assert store_files(config) == []

    async with client(small_limit_url, ann) as c:
        exact = await c.post(
            "/v1/recordings", content=b"\x01" * MiB, headers={"Content-Type": "audio/wav"}
        )
        assert exact.status_code == 201 and exact.json()["size_bytes"] == MiB
        exact_form = await upload(c, b"\x02" * MiB)
        assert exact_form.status_code == 201, exact_form.text
    assert sorted(p.stat().st_size for p in store_files(config)) == [MiB, MiB]


async def test_early_answers_reach_a_client_still_sending(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    """An answer given before the body was read — a wrong token — reaches a client that
    is still sending, and the connection does not hang."""
    stranger = NewOwner(id=0, name="stranger", token="tr_not-a-token")
    first = await as_ann.post(
        "/v1/recordings", content=b"first", headers={"Content-Type": "audio/wav"}
    )
    assert first.status_code == 201
    for owner, headers, expected in [(stranger, {}, 401)]:
        # A client that reads while it sends gets the answer at once ...
        streamed = await RawUpload.start(base_url, owner, headers=headers)
        with trio.fail_after(10):
            status, body = await send_until_answered(streamed, cap=256 * MiB)
        await streamed.aclose()
        assert status == expected, body
        assert streamed.sent < 64 * MiB
        # The connection will not serve another request, and the answer says so.
        assert streamed.headers.get("connection") == "close", streamed.headers
        # ... and one that reads only after sending gets it too, instead of hanging.
        for length in (None, 16 * MiB):
            whole = await RawUpload.start(base_url, owner, headers=headers, length=length)
            with trio.fail_after(10):
                status, body = await send_all_then_answer(whole, 16 * MiB)
            await whole.aclose()
            assert status == expected, body
    assert await count_recordings(db) == 1
    assert [p.read_bytes() for p in store_files(config)] == [b"first"]


async def test_a_routes_early_answer_closes_the_connection_it_names(config: Config) -> None:
    """A route that answers before reading the body (as the OpenAI endpoint refuses a
    form's field before its file) says `Connection: close`: Hypercorn closes such a
    connection, and a client's pool must not hand it to its next request."""
    app = FastAPI()
    app.state.config = config
    app.add_middleware(DrainRequestBody, idle_s=5)

    @app.post("/refuse")
    async def refuse() -> JSONResponse:
        return JSONResponse({"error": "refused"}, status_code=400)

    async with serving(app) as url:
        streamed = await RawUpload.start(url, NewOwner(id=0, name="a", token="t"), path="/refuse")
        with trio.fail_after(10):
            status, body = await send_until_answered(streamed, cap=256 * MiB)
        await streamed.aclose()
    assert (status, body) == (400, {"error": "refused"})
    assert streamed.headers.get("connection") == "close", streamed.headers


# --- interruptions ------------------------------------------------------------------------


@intake("An interrupted upload leaves no record and no file")
async def test_client_gone_mid_upload_leaves_nothing(
    db: Database, config: Config, base_url: str, ann: NewOwner
) -> None:
    upload_ = await RawUpload.start(base_url, ann)
    while upload_.sent < 2 * MiB:
        await upload_.send(CHUNK)
    await until(lambda: has_bytes(config, MiB), "part of the upload on disk")
    await upload_.aclose()  # the client goes away mid-body
    await until(lambda: store_files(config) == [], "the partial file removed")
    assert await count_recordings(db) == 0


@intake("An interrupted upload leaves no record and no file")
async def test_server_stopped_mid_upload_leaves_nothing(
    db: Database, config: Config, ann: NewOwner
) -> None:
    async with serving(create_app(db, config)) as url:
        upload_ = await RawUpload.start(url, ann)
        while upload_.sent < 2 * MiB:
            await upload_.send(CHUNK)
        await until(lambda: has_bytes(config, MiB), "part of the upload on disk")
    # The server is gone: every request it was serving was cancelled on the way out.
    assert store_files(config) == []
    assert await count_recordings(db) == 0
    with pytest.raises((EOFError, trio.BrokenResourceError)):
        await upload_.answer()  # the connection ended without an answer
    await upload_.aclose()


SERVE_IN_A_PROCESS = """
import sys, trio, trio_asyncio
from pathlib import Path
from transcriber.http import create_app, serving
from transcriber.config import Config
from transcriber.db.database import open_database

async def main():
    async with trio_asyncio.open_loop():
        async with open_database(sys.argv[1], min_size=1, max_size=2) as db:
            async with serving(create_app(db, Config(home=Path(sys.argv[2])))) as url:
                print(url, flush=True)
                await trio.sleep_forever()

trio.run(main)
"""


@intake("A killed server's partial upload is swept at startup")
async def test_killed_servers_partial_upload_is_swept(
    db: Database, db_url: str, config: Config, as_ann: httpx.AsyncClient, ann: NewOwner
) -> None:
    kept = await uploaded(as_ann, b"a recording with a record")
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", SERVE_IN_A_PROCESS, db_url, str(config.home)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        with trio.fail_after(30):
            url = await read_line(proc.stdout)
        upload_ = await RawUpload.start(url, ann)
        while upload_.sent < 2 * MiB:
            await upload_.send(CHUNK)
        await until(lambda: has_bytes(config, MiB), "part of the upload on disk")
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        await upload_.aclose()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == -signal.SIGKILL

    files = store_files(config)
    assert len(files) == 2  # the kill left the partial upload behind
    [stray] = [p for p in files if p.stat().st_size >= MiB]
    assert await count_recordings(db) == 1

    # Too young to judge with the default age; then swept.
    store = LocalBlobs(config.home)
    assert await store.sweep_strays(db) == []
    os.utime(stray, (0, 0))
    async with store.incoming() as live:  # an upload in progress right now
        await live.write(b"in flight")
        await live.finish()
        os.utime(live.path, (0, 0))
        assert await store.sweep_strays(db, older_than_s=0) == [str(stray)]
        assert live.path.exists()
    remaining = store_files(config)
    assert len(remaining) == 1 and remaining[0].read_bytes() == b"a recording with a record"
    assert (await as_ann.get(f"/v1/recordings/{kept['id']}")).status_code == 200


async def test_sweep_leaves_foreign_files_alone(db: Database, config: Config) -> None:
    LocalBlobs(config.home).uploads.mkdir(parents=True)
    foreign = LocalBlobs(config.home).uploads / "notes.txt"
    foreign.write_text("not the store's")
    stray = LocalBlobs(config.home).uploads / uuid.uuid4().hex
    stray.write_bytes(b"x")
    assert await LocalBlobs(config.home).sweep_strays(db, older_than_s=0) == [str(stray)]
    assert store_files(config) == [foreign]


# --- idempotency -----------------------------------------------------------------------------


@intake("Retrying with the same Idempotency-Key returns the first recording")
async def test_same_idempotency_key_returns_the_first_recording(
    db: Database, config: Config, as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient
) -> None:
    key = {"Idempotency-Key": "upload-7"}
    first = await as_ann.post("/v1/recordings", files={"file": ("a.wav", b"first")}, headers=key)
    assert first.status_code == 201
    again = await as_ann.post("/v1/recordings", files={"file": ("a.wav", b"first")}, headers=key)
    assert again.status_code == 200
    assert again.json() == first.json()
    assert again.headers["location"] == first.headers["location"]
    theirs = await as_ben.post("/v1/recordings", files={"file": ("a.wav", b"ben's")}, headers=key)
    assert theirs.status_code == 201 and theirs.json()["id"] != first.json()["id"]
    assert await count_recordings(db) == 2
    assert sorted(p.read_bytes() for p in store_files(config)) == [b"ben's", b"first"]


@intake("Retrying with the same Idempotency-Key returns the first recording")
async def test_concurrent_uploads_with_one_key_make_one_recording(
    db: Database, config: Config, base_url: str, ann: NewOwner
) -> None:
    uploads = await uploads_past_the_key_check(base_url, ann, config, "same")
    answers = []
    for u in uploads:
        await u.send(b"the same end")
        await u.end()
        answers.append(await u.answer())
        await u.aclose()
    assert [status for status, _ in answers] == [201, 200]
    assert answers[0][1]["id"] == answers[1][1]["id"]
    assert await count_recordings(db) == 1
    [stored] = store_files(config)
    assert stored.read_bytes() == b"x" * 1000 + b"the same end"


@intake("A repeat racing the first record's deletion makes a fresh record")
async def test_a_repeat_racing_the_first_records_deletion_is_never_a_500(
    db: Database, config: Config, ann: NewOwner
) -> None:
    """Seen over HTTP: the repeat's insert met the first record, its owner's deletion
    committed before the repeat read it, and the answer was 500."""
    first_ids: list[str] = []

    async def owner_deletes_the_first() -> None:
        await delete_own(db, LocalBlobs(config.home), ann.id, [uuid.UUID(first_ids[0])], via="api")

    racing = Interleaved(db, {("recording_by_fingerprint", 1): owner_deletes_the_first})
    async with serving(create_app(cast(Database, racing), config)) as url:
        async with client(url, ann) as c:
            first_ids.append((await uploaded(c, b"RIFF same", title="same"))["id"])
            r = await upload(c, b"RIFF same", title="same")
            assert r.status_code == 201, r.text
            assert r.json()["id"] != first_ids[0]
            assert (await c.get(f"/v1/recordings/{first_ids[0]}")).status_code == 404
    assert await count_recordings(db) == 1 and len(store_files(config)) == 1
