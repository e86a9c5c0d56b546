"""The live socket opened by the owner's page (capability `live`): the page's session
cookie is taken only from this site's own page. A raw WebSocket client (`websockets`,
which the `openai` SDK connects with, but here with any `Origin` and `Cookie` a browser
could send) against the application served on loopback by Hypercorn's trio worker."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import httpx
import pytest
import websockets.asyncio.client
import websockets.exceptions

from tests.helpers.asyncio_thread import in_asyncio
from tests.integration.test_live import live_app, live_records
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import serving
from transcriber.owners import NewOwner

SOCKET = "/v1/realtime?intent=transcription"


async def page_cookie(url: str, owner: NewOwner) -> tuple[httpx.AsyncClient, str]:
    """A client signed in to the page as `owner`, and its session cookie's header."""
    c = httpx.AsyncClient(base_url=url, timeout=30)
    r = await c.post("/signin", data={"token": owner.token, "next": "/"})
    assert r.status_code == 303, r.text
    return c, f"transcriber_session={c.cookies['transcriber_session']}"


async def upgrade(url: str, headers: dict[str, str], origin: str | None) -> tuple[int, Any]:
    """(101, the first event) when the upgrade is accepted, else (status, JSON body)."""

    async def main() -> tuple[int, Any]:
        where = url.replace("http://", "ws://") + SOCKET
        try:
            async with websockets.asyncio.client.connect(
                where,
                origin=origin,  # type: ignore[arg-type]
                additional_headers=headers,
            ) as ws:
                return 101, json.loads(await asyncio.wait_for(ws.recv(), 10))
        except websockets.exceptions.InvalidStatus as refused:
            return refused.response.status_code, json.loads(refused.response.body or b"{}")

    return await in_asyncio(main())


@pytest.mark.scenario("live", "The page's cookie opens a session only from this site's own page")
async def test_the_page_cookie_needs_this_sites_origin(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async with serving(live_app(db, config)) as url:
        page, cookie = await page_cookie(url, ann)
        own = url  # http://127.0.0.1:PORT, what a page of this site names
        status, first = await upgrade(url, {"Cookie": cookie}, own)
        assert status == 101 and first["type"] == "session.created", first

        foreign = {
            "another site": ("http://evil.example", {}),
            "another port": (url.rsplit(":", 1)[0] + ":1", {}),
            "another scheme": (url.replace("http://", "https://"), {}),
            "no Origin": (None, {}),
            "'null'": ("null", {}),
            "cross-site fetch": (own, {"Sec-Fetch-Site": "cross-site"}),
        }
        for what, (origin, extra) in foreign.items():
            status, body = await upgrade(url, {"Cookie": cookie, **extra}, origin)
            assert status == 403, (what, status, body)
            assert body["error"]["code"] == "invalid_origin", (what, body)
            assert body["error"]["type"] == "invalid_request_error", body

        # The bearer token is judged alone: no browser's script can send it.
        bearer = {"Authorization": f"Bearer {ann.token}"}
        status, first = await upgrade(url, bearer, "http://evil.example")
        assert status == 101 and first["type"] == "session.created", first
        # A wrong token is not rescued by a good cookie beside it.
        status, body = await upgrade(url, {"Authorization": "Bearer tr_x", "Cookie": cookie}, own)
        assert status == 401 and body["error"]["code"] == "invalid_api_key", body

        # Signed out: the same cookie from the own page is no session any more.
        csrf = (await page.get("/")).text.split('name="csrf-token" content="')[1].split('"')[0]
        r = await page.post("/signout", data={"csrf": csrf}, headers={"Origin": own})
        assert r.status_code == 303, r.text
        await page.aclose()
        status, body = await upgrade(url, {"Cookie": cookie}, own)
        assert status == 401 and body["error"]["code"] == "invalid_api_key", body
        status, body = await upgrade(url, {"Cookie": "transcriber_session=made-up"}, own)
        assert status == 401 and body["error"]["code"] == "invalid_api_key", body
    assert await live_records(db) == []  # no audio was sent: no record


async def test_the_recorder_page_is_the_signed_in_owners(
    db: Database, ann: NewOwner, config: Config
) -> None:
    """`/microphone` is a page like the others: a stranger is sent to sign in and back;
    the owner gets the recorder, pointed at the socket on this origin, under the page's
    content policy (its own scripts only: the worklet is a file of this site)."""
    async with serving(live_app(db, config)) as url:
        async with httpx.AsyncClient(base_url=url) as stranger:
            r = await stranger.get("/microphone", headers={"Accept": "text/html"})
            assert (r.status_code, r.headers["location"]) == (303, "/signin?next=%2Fmicrophone")
            assert (await stranger.get("/microphone")).status_code == 401
        page, _ = await page_cookie(url, ann)
        try:
            r = await page.get("/microphone", headers={"Accept": "text/html"})
            assert r.status_code == 200, r.text
            assert f'data-socket="{SOCKET}"' in r.text
            worklet = re.search(r'data-worklet="([^"]+)"', r.text)
            assert worklet, r.text
            assert "script-src 'self'" in r.headers["content-security-policy"]
            js = await page.get(worklet.group(1).replace("&amp;", "&"))
            assert js.status_code == 200 and 'registerProcessor("pcm-24k"' in js.text
            listed = await page.get("/", headers={"Accept": "text/html"})
            assert 'href="/microphone" id="record-link"' in listed.text
        finally:
            await page.aclose()
