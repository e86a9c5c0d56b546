"""The live socket attacked against a real `serve` (tests/helpers/serve_process.py)
while Ann's session runs: a stranger, another owner, an operator and a share-link
holder each try the upgrade and Ann's live record; none reaches her session, which then
ends with its daemon's SIGTERM (`shutdown`), kept. The report's table is this test."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import httpx
import trio
from websockets.exceptions import ConnectionClosed

from tests.helpers.asyncio_thread import in_asyncio
from tests.helpers.pages import as_operator
from tests.helpers.serve_process import serve_process
from tests.integration.test_live import (
    bare_upgrade,
    live_records,
    next_event,
    refused_upgrade,
    session,
    until,
)
from tests.integration.test_live_end import arrived, audio, ended_why, record_of
from tests.integration.test_live_kept import LEASE_S, kept_seconds
from tests.integration.test_live_origin import page_cookie, upgrade
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.operators import add_operator
from transcriber.owners import NewOwner


async def test_the_socket_attacked_while_a_session_runs(
    db: Database, db_url: str, ann: NewOwner, ben: NewOwner, tmp_path: Any
) -> None:
    config = Config(home=tmp_path / "home", live_lease_s=LEASE_S)
    token = trio.lowlevel.current_trio_token()
    running, attacked = trio.Event(), threading.Event()
    seen: dict[str, Any] = {}

    async def anns(connection: Any) -> None:
        seen["rid"] = await record_of(connection)
        await connection.input_audio_buffer.append(audio=audio(0.5))
        await arrived(connection)
        token.run_sync_soon(running.set)
        await asyncio.get_running_loop().run_in_executor(None, attacked.wait, 60)
        told = []
        try:
            while True:
                told.append(await next_event(connection, seconds=30))
        except ConnectionClosed:
            seen["told"] = told

    async def bens(connection: Any) -> uuid.UUID:
        return await record_of(connection)

    table: dict[str, Any] = {}
    operator = await add_operator(db, "olga")
    async with (
        serve_process(db_url, config.home, "--workers", "0", live_lease_s=str(LEASE_S)) as serve,
        trio.open_nursery() as nursery,
    ):
        url = serve.url
        nursery.start_soon(session, url, ann.token, anns)
        await running.wait()
        rid = seen["rid"]
        as_ann = {"Authorization": f"Bearer {ann.token}"}
        as_ben = {"Authorization": f"Bearer {ben.token}"}

        # A stranger: no credential, a made-up token, a made-up page cookie.
        table["stranger, no token"] = await in_asyncio(bare_upgrade(url))
        table["stranger, made-up token"] = await refused_upgrade(url, "tx_made_up")
        table["stranger, made-up cookie"] = await upgrade(
            url, {"Cookie": "transcriber_session=made-up"}, url
        )
        # A foreign site's page riding Ann's real cookie.
        page, cookie = await page_cookie(url, ann)
        table["foreign site, Ann's cookie"] = await upgrade(
            url, {"Cookie": cookie}, "https://evil.example"
        )
        # Another owner: his own session and record; Ann's record is not his.
        bens_record = await session(url, ben.token, bens)
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            table["Ben's session"] = (bens_record != rid, bens_record)
            for what, method, path in (
                ("Ben reads Ann's live card", "GET", f"/v1/recordings/{rid}"),
                ("Ben reads its journal", "GET", f"/v1/recordings/{rid}/events"),
                ("Ben deletes it", "DELETE", f"/v1/recordings/{rid}"),
                ("Ben shares it", "POST", f"/v1/recordings/{rid}/shares"),
            ):
                r = await c.request(
                    method, path, headers=as_ben, json={} if method == "POST" else None
                )
                table[what] = (r.status_code, r.text[:80])
            # A share link of the live record, made by Ann, and its holder.
            made = await c.post(f"/v1/recordings/{rid}/shares", headers=as_ann, json={})
            assert made.status_code == 201, made.text
            secret = made.json()["url"].rsplit("/", 1)[-1]
            table["share holder, secret as api_key"] = await refused_upgrade(url, secret)
            table["share holder, secret as cookie"] = await upgrade(
                url, {"Cookie": f"transcriber_session={secret}"}, url
            )
            shown = await c.get(f"/s/{secret}")
            table["share holder opens the link"] = (shown.status_code, shown.text[:60])
            audio_of = await c.get(f"/s/{secret}/audio")
            table["share holder fetches the audio"] = (audio_of.status_code, audio_of.text[:60])
        # An operator: the token, and the operator's screen's cookie.
        table["operator token"] = await refused_upgrade(url, operator.token)
        async with as_operator(url, operator.token) as ops:
            ops_cookie = f"transcriber_ops_session={ops.cookies['transcriber_ops_session']}"
        table["operator cookie"] = await upgrade(url, {"Cookie": ops_cookie}, url)
        await page.aclose()
        # Ann's session ran through all of it; the daemon stops with it open.
        attacked.set()
        assert await serve.stop() == 0
    for row, answer in table.items():
        print(f"| {row} | {answer} |")
    for row in (
        "stranger, no token",
        "stranger, made-up token",
        "operator token",
        "share holder, secret as api_key",
    ):
        assert table[row][0] == 401 and b"invalid_api_key" in table[row][1], (row, table[row])
    for row in ("stranger, made-up cookie", "share holder, secret as cookie", "operator cookie"):
        assert table[row][0] == 401 and table[row][1]["error"]["code"] == "invalid_api_key", row
    assert table["foreign site, Ann's cookie"][0] == 403
    assert table["foreign site, Ann's cookie"][1]["error"]["code"] == "invalid_origin"
    assert table["Ben's session"][0] is True
    # The link shows what its owner shares (a record not transcribed yet), no audio yet:
    # a live record has no normalized audio to stream.
    assert table["share holder opens the link"][0] == 200
    assert table["share holder fetches the audio"][0] == 404
    for row in (
        "Ben reads Ann's live card",
        "Ben reads its journal",
        "Ben deletes it",
        "Ben shares it",
    ):
        assert table[row][0] == 404, (row, table[row])
    assert [e.error.code for e in seen["told"] if e.type == "error"] == ["server_shutting_down"]
    await until(lambda: _ended(db, rid))
    assert await ended_why(db, rid) == ("shutdown", "shutdown")
    assert abs(await kept_seconds(config, db, rid) - 0.5) < 1e-3


async def _ended(db: Database, rid: uuid.UUID) -> bool:
    return rid in await live_records(db)
