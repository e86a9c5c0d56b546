"""The HTTP API under attack, as an outsider and as a second owner (issue 12): nothing
read before the token, everything bounded, one JSON error shape, tokens that can be
revoked and rotated, nothing internal shown to an owner."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import trio
from fastapi import APIRouter

from tests.helpers.api_clients import (
    client,
    count_recordings,
    store_files,
    uploaded,
)
from tests.helpers.cli_process import cli
from tests.helpers.raw_http import (
    MiB,
    RawUpload,
    exchange,
    read_line,
    request_head,
    send_all_then_answer,
    until,
    uploads_past_the_key_check,
)
from transcriber.config import Config
from transcriber.db.database import Database, DatabaseBusy, open_database
from transcriber.http import create_app, serving
from transcriber.http.middleware import JSON_BODY_MAX
from transcriber.owners import NewOwner
from transcriber.storage.local import LocalBlobs

ROOT = Path(__file__).resolve().parents[2]


def intake(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("intake", title)


def archive(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


def operations(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("operations", title)


def is_json_error(headers: dict[str, str], body: bytes) -> bool:
    return headers.get("content-type", "").startswith("application/json") and set(
        json.loads(body)
    ) == {"error"}


# --- 1. nothing is read before the token ------------------------------------------------


@intake("A request without a valid token is refused before its body is read")
async def test_no_body_is_read_before_the_token(
    db: Database, base_url: str, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    # 300 MB declared, not a byte sent: the answer comes anyway.
    status, headers, body = await exchange(
        base_url,
        request_head(
            base_url,
            f"PATCH /v1/recordings/{rid} HTTP/1.1",
            **{"Content-Type": "application/json", "Content-Length": str(300 * 10**6)},
        ),
    )
    assert status == 401 and is_json_error(headers, body)
    assert headers["www-authenticate"] == "Bearer"
    # A broken JSON body without a token is a missing token, not a broken body.
    async with client(base_url) as anonymous:
        broken = await anonymous.patch(
            f"/v1/recordings/{rid}",
            content=b"{not json",
            headers={"Content-Type": "application/json"},
        )
    assert broken.status_code == 401
    # With a token, a JSON body over its cap is refused, declared or streamed.
    too_big = json.dumps({"summary": "x" * JSON_BODY_MAX}).encode()
    declared = await as_ann.patch(
        f"/v1/recordings/{rid}", content=too_big, headers={"Content-Type": "application/json"}
    )

    async def chunks() -> AsyncIterator[bytes]:
        yield too_big

    streamed = await as_ann.patch(
        f"/v1/recordings/{rid}", content=chunks(), headers={"Content-Type": "application/json"}
    )
    for r in (declared, streamed):
        assert r.status_code == 413 and "error" in r.json(), r.text
    assert (await as_ann.get(f"/v1/recordings/{rid}")).json()["summary"] is None


SERVE_WITH_SETTINGS = """
import json, sys, trio, trio_asyncio
from pathlib import Path
from transcriber.http import create_app, serving
from transcriber.config import Config
from transcriber.db.database import open_database

async def main():
    async with trio_asyncio.open_loop():
        async with open_database(sys.argv[1], min_size=4, max_size=4) as db:
            config = Config(home=Path(sys.argv[2]), **json.loads(sys.argv[3]))
            async with serving(create_app(db, config)) as url:
                print(url, flush=True)
                await trio.sleep_forever()

trio.run(main)
"""


def memory(pid: int) -> dict[str, int]:
    """The process's resident (VmRSS) and peak resident (VmHWM) size in bytes."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return {k: int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture
async def server_process(db_url: str, config: Config) -> AsyncIterator[tuple[str, int]]:
    """The API in a process of its own (its memory measured alone, its database pool
    full from the start so its open files count requests only), with a short idle
    bound for bodies; (base URL, pid)."""
    settings = {"http_body_idle_s": 0.5, "owner_max_uploads": 100}
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", SERVE_WITH_SETTINGS, db_url, str(config.home), json.dumps(settings)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        with trio.fail_after(30):
            url = await read_line(proc.stdout)
        yield url, proc.pid
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()


@intake("A request without a valid token is refused before its body is read")
async def test_refused_300_mb_body_keeps_memory_bounded(server_process: tuple[str, int]) -> None:
    url, pid = server_process
    async with httpx.AsyncClient(base_url=url) as c:
        assert (await c.get("/healthz")).status_code == 200  # warmed up
    before = memory(pid)
    total = 300 * 10**6
    stream = await trio.open_tcp_stream(httpx.URL(url).host, httpx.URL(url).port)
    async with stream:
        await stream.send_all(
            request_head(
                url,
                f"PATCH /v1/recordings/{uuid.uuid4()} HTTP/1.1",
                **{"Content-Type": "application/json", "Content-Length": str(total)},
            )
        )
        block, sent = b"[" * MiB, 0
        # Everything is sent before the answer is read, as curl does with a file.
        with trio.fail_after(60):
            try:
                while sent < total:
                    await stream.send_all(block[: total - sent])
                    sent += len(block)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            answer = await stream.receive_some(65536)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:100]
    grown = memory(pid)["VmHWM"] - before["VmHWM"]
    assert grown < 32 * MiB, f"the server's peak memory grew by {grown / MiB:.0f} MiB"


SLOW_UPLOADS = 20


@intake("A silent request body is answered 408")
async def test_many_slow_uploads_are_bounded(
    server_process: tuple[str, int], db: Database, config: Config, ann: NewOwner
) -> None:
    url, pid = server_process
    async with httpx.AsyncClient(base_url=url) as c:
        assert (await c.get("/healthz")).status_code == 200
    files_before, memory_before = open_files(pid), memory(pid)
    slow = [await RawUpload.start(url, ann, length=1_000_000) for _ in range(SLOW_UPLOADS)]
    for upload in slow:
        await upload.send(b"R")  # then nothing more
    answers = []
    for upload in slow:
        with trio.fail_after(10):
            answers.append(await upload.answer())
        await upload.aclose()
    assert all(status == 408 and "error" in body for status, body in answers), answers
    await until(lambda: open_files(pid) <= files_before, "the server's files closed")
    assert memory(pid)["VmHWM"] - memory_before["VmHWM"] < 32 * MiB
    assert store_files(config) == [] and await count_recordings(db) == 0


@intake("A silent request body is answered 408")
async def test_connections_without_a_whole_head_are_closed(db: Database, config: Config) -> None:
    async with serving(create_app(db, Config(home=config.home, http_head_timeout_s=0.5))) as url:
        host, port = httpx.URL(url).host, httpx.URL(url).port
        dribbling = []
        for _ in range(20):
            stream = await trio.open_tcp_stream(host, port)
            await stream.send_all(b"GET /healthz HTTP/1.1\r\nHo")
            dribbling.append(stream)
        # Closed by the server after 0.5 s (Hypercorn's default would keep them 5 s).
        with trio.fail_after(4):
            for stream in dribbling:
                assert await stream.receive_some(1024) == b""
        for stream in dribbling:
            await stream.aclose()


@pytest.fixture
async def tight(db: Database, config: Config) -> AsyncIterator[tuple[str, Config]]:
    """A server with small bounds: 2 requests at once, 1 upload per owner, 64 KiB
    stored per owner."""
    tight_config = Config(
        home=config.home, http_max_requests=2, owner_max_uploads=1, owner_max_bytes=64 * 1024
    )
    async with serving(create_app(db, tight_config)) as url:
        yield url, tight_config


@intake("A silent request body is answered 408")
async def test_silent_body_is_answered_408(
    db: Database, config: Config, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    impatient = Config(home=config.home, http_body_idle_s=0.5)
    async with serving(create_app(db, impatient)) as url:
        upload = await RawUpload.start(url, ann, length=1000)
        await upload.send(b"x" * 10)
        edit = await trio.open_tcp_stream(httpx.URL(url).host, httpx.URL(url).port)
        await edit.send_all(
            request_head(
                url,
                f"PATCH /v1/recordings/{rid} HTTP/1.1",
                Authorization=f"Bearer {ann.token}",
                **{"Content-Type": "application/json", "Content-Length": "100"},
            )
            + b'{"ti'
        )
        with trio.fail_after(10):
            status, body = await upload.answer()
            # The whole answer, to the close it announces: its head and its body may
            # come in separate segments.
            edited = b""
            while chunk := await edit.receive_some(65536):
                edited += chunk
        await upload.aclose()
        await edit.aclose()
    assert status == 408 and "error" in body
    assert edited.startswith(b"HTTP/1.1 408") and b'{"error":' in edited
    assert len(store_files(config)) == 1 and await count_recordings(db) == 1


@intake("The service and each owner are bounded")
async def test_requests_uploads_and_bytes_are_bounded(
    db: Database, tight: tuple[str, Config], ann: NewOwner, ben: NewOwner
) -> None:
    url, tight_config = tight
    first = await RawUpload.start(url, ann, length=1000)
    await first.send(b"x")
    await until(lambda: len(store_files(tight_config)) == 1, "the upload under way")
    async with client(url, ann) as as_ann_, client(url, ben) as as_ben_:
        # A second upload of the same owner at once: 429, nothing stored.
        second = await as_ann_.post(
            "/v1/recordings", content=b"y", headers={"Content-Type": "audio/wav"}
        )
        assert second.status_code == 429 and second.headers["retry-after"]
        assert "error" in second.json()
        # Another owner's upload passes, and fills ben's quota.
        assert (
            await as_ben_.post(
                "/v1/recordings", content=b"z" * 60_000, headers={"Content-Type": "audio/wav"}
            )
        ).status_code == 201
        over = await as_ben_.post(
            "/v1/recordings", content=b"z" * 10_000, headers={"Content-Type": "audio/wav"}
        )
        assert over.status_code == 507 and "quota" in over.json()["error"]
        # Two requests at once are the bound: a third is told to come back.
        second_request = await RawUpload.start(url, ben, length=1000)
        await second_request.send(b"x")
        await until(lambda: len(store_files(tight_config)) == 3, "two requests under way")
        busy = await as_ben_.get("/v1/recordings")
        assert busy.status_code == 503 and busy.headers["retry-after"] and busy.json()["error"]
    for upload in (first, second_request):
        await upload.aclose()
    assert await count_recordings(db) == 1


@pytest.fixture
def full_disk(tmp_path: Path) -> Any:
    """A 1 MiB tmpfs for the upload store, so writing past it is a real ENOSPC."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


@intake("The service and each owner are bounded")
async def test_disk_full_during_upload_is_a_json_507(
    db: Database, full_disk: Path, ann: NewOwner
) -> None:
    small = Config(home=full_disk, min_free_bytes=0)
    async with serving(create_app(db, small)) as url:
        upload = await RawUpload.start(url, ann, length=4 * MiB)
        with trio.fail_after(10):
            assert await send_all_then_answer(upload, 4 * MiB) == (
                507,
                {"error": "the server's disk is full; retry later"},
            )
        await upload.aclose()
        assert store_files(small) == [] and await count_recordings(db) == 0
    # With the disk's reserve kept (1 GiB by default), it is refused before it fills it.
    async with serving(create_app(db, Config(home=full_disk))) as url, client(url, ann) as c:
        r = await c.post(
            "/v1/recordings", content=b"\x01" * 1000, headers={"Content-Type": "audio/wav"}
        )
        assert r.status_code == 507 and r.json()["error"].startswith("the server's disk")


# --- 2. the cursor ------------------------------------------------------------------------


@archive("A cursor the service did not make is refused")
async def test_cursor_with_out_of_range_time_is_400(as_ann: httpx.AsyncClient) -> None:
    rid = uuid.uuid4()
    for at in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "yesterday"):
        cursor = base64.urlsafe_b64encode(f"{at}|{rid}".encode()).decode().rstrip("=")
        r = await as_ann.get("/v1/recordings", params={"cursor": cursor})
        assert r.status_code == 400 and "cursor" in r.json()["error"], (at, r.text)


# --- 7, 8. one JSON error shape; no redirect ------------------------------------------------


@intake("Every error is answered in one JSON shape")
async def test_the_servers_own_errors_are_json(base_url: str) -> None:
    for head, expected in [
        (b"NOT A REQUEST\r\n\r\n", 400),
        (request_head(base_url, "POST /v1/recordings HTTP/1.1", **{"Content-Length": "-5"}), 400),
        (request_head(base_url, "GET /healthz HTTP/1.1", **{"X-Big": "a" * 200_000}), 431),
    ]:
        status, headers, body = await exchange(base_url, head)
        assert status == expected and is_json_error(headers, body), (head[:40], body)


@intake("Every error is answered in one JSON shape")
async def test_unexpected_errors_are_json_without_internals(
    db: Database, db_url: str, config: Config, ann: NewOwner
) -> None:
    failing = APIRouter()

    @failing.get("/v1/test/crash")
    async def crash() -> None:
        raise RuntimeError(f"cannot open {LocalBlobs(config.home).uploads}/secret")

    @failing.get("/v1/test/busy")
    async def busy() -> None:
        raise DatabaseBusy("no answer within 5 s")

    @failing.get("/v1/test/gone")
    async def gone() -> None:
        raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle")

    app = create_app(db, config)
    app.include_router(failing)  # routes that fail as the real ones may
    async with serving(app) as url, client(url, ann) as c:
        crashed = await c.get("/v1/test/crash")
        assert crashed.status_code == 500 and set(crashed.json()) == {"error"}
        assert "secret" not in crashed.text and "Traceback" not in crashed.text
        for path in ("/v1/test/busy", "/v1/test/gone"):
            away = await c.get(path)
            assert away.status_code == 503 and away.headers["retry-after"], away.text
            assert set(away.json()) == {"error"}
    # The database gone while the token is checked, before the application runs.
    async with open_database(db_url, min_size=1, max_size=1) as gone_db:
        pass
    async with serving(create_app(gone_db, config)) as url, client(url, ann) as c:
        away = await c.get("/v1/recordings")
        assert away.status_code == 503 and away.headers["retry-after"], away.text
        assert set(away.json()) == {"error"}


@intake("Every error is answered in one JSON shape")
async def test_methods_and_slashes(base_url: str, as_ann: httpx.AsyncClient) -> None:
    options = await as_ann.options("/v1/recordings")
    assert options.status_code == 204
    assert set(options.headers["allow"].split(", ")) == {"GET", "POST", "OPTIONS"}
    wrong = await as_ann.delete("/v1/recordings")
    assert wrong.status_code == 405 and "error" in wrong.json()
    assert set(wrong.headers["allow"].split(", ")) == {"GET", "POST", "OPTIONS"}
    # No redirect naming the request's own Host back to it.
    slash = await as_ann.get("/v1/recordings/", headers={"Host": "evil.example"})
    assert slash.status_code == 404 and "location" not in slash.headers
    assert "error" in slash.json()


# --- 9. Idempotency-Key reused -------------------------------------------------------------


@intake("Reusing an Idempotency-Key for another request is refused")
async def test_idempotency_key_reused_with_another_request_is_422(
    db: Database, config: Config, as_ann: httpx.AsyncClient
) -> None:
    key = {"Idempotency-Key": "upload-8"}
    first = await as_ann.post(
        "/v1/recordings", files={"file": ("a.wav", b"first")}, data={"title": "One"}, headers=key
    )
    assert first.status_code == 201
    for files, data in [
        ({"file": ("a.wav", b"other")}, {"title": "One"}),
        ({"file": ("a.wav", b"first")}, {"title": "Two"}),
        ({"file": ("b.wav", b"first")}, {"title": "One"}),
        ({"file": ("a.wav", b"first")}, {"title": "One", "task": "translate"}),
        ({"file": ("a.wav", b"first")}, {"title": "One", "prompt": "Kenobi"}),
    ]:
        again = await as_ann.post("/v1/recordings", files=files, data=data, headers=key)
        assert again.status_code == 422 and "'upload-8'" in again.json()["error"], again.text
    same = await as_ann.post(
        "/v1/recordings", files={"file": ("a.wav", b"first")}, data={"title": "One"}, headers=key
    )
    assert same.status_code == 200 and same.json() == first.json()
    assert await count_recordings(db) == 1 and len(store_files(config)) == 1


@intake("Reusing an Idempotency-Key for another request is refused")
async def test_concurrent_uploads_with_one_key_and_different_bodies(
    db: Database, config: Config, base_url: str, ann: NewOwner
) -> None:
    uploads = await uploads_past_the_key_check(base_url, ann, config, "race")
    answers = []
    for u, end in zip(uploads, (b"first", b"second"), strict=True):
        await u.send(end)
        await u.end()
        answers.append(await u.answer())
        await u.aclose()
    assert [status for status, _ in answers] == [201, 422]
    assert "'race'" in answers[1][1]["error"]
    assert await count_recordings(db) == 1
    assert [p.read_bytes() for p in store_files(config)] == [b"x" * 1000 + b"first"]


# --- 5. token lifecycle --------------------------------------------------------------------


@operations("The operator revokes and rotates tokens")
async def test_owner_list_revoke_rotate(db: Database, db_url: str, base_url: str) -> None:
    token = (await cli(db_url, "owner", "add", "dora")).stdout.strip()
    async with client(base_url, NewOwner(0, "dora", token)) as dora:
        rid = (await uploaded(dora))["id"]

    rotated = await cli(db_url, "owner", "rotate", "dora")
    assert rotated.returncode == 0, rotated.stderr
    new_token = rotated.stdout.strip()
    assert new_token.startswith("tr_") and new_token != token
    async with (
        client(base_url, NewOwner(0, "dora", token)) as old,
        client(base_url, NewOwner(0, "dora", new_token)) as new,
    ):
        assert (await old.get(f"/v1/recordings/{rid}")).status_code == 401
        assert (await new.get(f"/v1/recordings/{rid}")).status_code == 200

        revoked = await cli(db_url, "owner", "revoke", "dora")
        assert revoked.returncode == 0, revoked.stderr
        assert (await new.get(f"/v1/recordings/{rid}")).status_code == 401
    assert await count_recordings(db) == 1  # the records stay for the operator
    listed = await cli(db_url, "owner", "list")
    [dora_line] = [line for line in listed.stdout.splitlines() if line.startswith("dora")]
    assert dora_line.split()[2] != "-" and dora_line.split()[3] == "1"
    for verb in ("revoke", "rotate"):
        unknown = await cli(db_url, "owner", verb, "nobody")
        assert unknown.returncode == 1 and "no owner 'nobody'" in unknown.stderr


# --- 6. what an owner learns about the service -----------------------------------------------


@operations("Metrics are the operator's")
async def test_metrics_only_from_loopback_or_with_the_operator_token(
    db: Database, config: Config
) -> None:
    app = create_app(db, Config(home=config.home, metrics_token="op-secret"))
    outside = httpx.ASGITransport(app=app, client=("203.0.113.7", 40000))
    async with httpx.AsyncClient(transport=outside, base_url="http://api") as c:
        refused = await c.get("/metrics")
        assert refused.status_code == 403 and "error" in refused.json()
        wrong = await c.get("/metrics", headers={"Authorization": "Bearer op-wrong"})
        assert wrong.status_code == 403
        allowed = await c.get("/metrics", headers={"Authorization": "Bearer op-secret"})
        assert allowed.status_code == 200 and "transcriber_" in allowed.text
    inside = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    for local in ("127.0.0.1:8080", "localhost", "[::1]:8080"):
        async with httpx.AsyncClient(transport=inside, base_url=f"http://{local}") as c:
            assert (await c.get("/metrics")).status_code == 200, local
    # A page elsewhere whose name now points at 127.0.0.1 (DNS rebinding) comes from
    # loopback, but names itself in the Host header.
    async with httpx.AsyncClient(transport=inside, base_url="http://rebound.example") as c:
        assert (await c.get("/metrics")).status_code == 403


@operations("Only the allowed Host names are answered")
async def test_allowed_hosts(db: Database, config: Config) -> None:
    app = create_app(
        db, Config(home=config.home, http_allowed_hosts=("transcriber.example", "127.0.0.1:8080"))
    )
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
    for host, status in (
        ("transcriber.example", 200),
        ("TRANSCRIBER.example:8443", 200),  # an entry without a port allows any
        ("127.0.0.1:8080", 200),
        ("127.0.0.1:9999", 421),
        ("evil.example", 421),
        ("transcriber.example.evil.example", 421),
    ):
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as c:
            r = await c.get("/healthz")
            assert r.status_code == status, (host, r.text)
            if status == 421:
                assert set(r.json()) == {"error"}
                openai = await c.get("/v1/models")
                assert openai.status_code == 421 and set(openai.json()["error"]) >= {"code"}
    # Without the option every Host is answered.
    anywhere = httpx.ASGITransport(app=create_app(db, config), client=("127.0.0.1", 40000))
    async with httpx.AsyncClient(transport=anywhere, base_url="http://evil.example") as c:
        assert (await c.get("/healthz")).status_code == 200


@archive("The owner reads the record's journal")
async def test_event_numbers_are_per_record(
    as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient
) -> None:
    for c in (as_ann, as_ben, as_ann):
        rid = (await uploaded(c))["id"]
        events = (await c.get(f"/v1/recordings/{rid}/events")).json()["events"]
        assert [e["id"] for e in events] == [1]
