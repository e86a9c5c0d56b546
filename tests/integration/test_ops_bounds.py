"""The operator's screen's bounds (issue 33, finding 7), against the app served on
loopback over a real PostgreSQL: its sign-in form is capped as the page's (a stranger's
body, read whole), and the stopped list's `older` is a number of minutes within ten
years — NaN, infinity, `1e308`, a negative number or a word is 422, never a 500 nor a
filter silently dropped."""

from __future__ import annotations

import contextlib

import httpx
import pytest
import trio

from tests.helpers.pages import as_operator
from tests.helpers.raw_http import exchange, request_head
from tests.integration.test_ops import stopped
from transcriber.db.database import Database
from transcriber.http.sessions import SIGNIN_FORM_MAX
from transcriber.operators import NewOperator, add_operator
from transcriber.owners import NewOwner

FORM = "application/x-www-form-urlencoded"
KiB = 1024


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("operations", title)


@pytest.fixture
async def olga(db: Database) -> NewOperator:
    return await add_operator(db, "olga")


async def sent_whole(base_url: str, path: str, body: bytes) -> int:
    """The status of a form posted over a plain socket with its whole body: the head
    and body go out while the answer is read, so an answer given before the body is
    read (413) is seen, and one given after reading it all (today's 401) too."""
    url = httpx.URL(base_url)
    head = request_head(
        base_url,
        f"POST {path} HTTP/1.1",
        **{"Content-Type": FORM, "Content-Length": str(len(body))},
    )
    stream = await trio.open_tcp_stream(url.host, url.port)
    data = b""
    async with stream:

        async def send() -> None:
            # The server may answer and close before reading it all.
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await stream.send_all(head + body)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send)
            with trio.fail_after(10):
                while b"\r\n" not in data:
                    chunk = await stream.receive_some(65536)
                    assert chunk, "closed without an answer"
                    data += chunk
            nursery.cancel_scope.cancel()
    return int(data.split()[1])


@scenario("The operator's sign-in form is capped as the page's")
async def test_ops_signin_body_is_capped(base_url: str, olga: NewOperator) -> None:
    # 128 KiB was the cap of every body read whole: the sign-in form's is 4 KiB.
    big = b"token=" + b"x" * (128 * KiB - 6)
    assert await sent_whole(base_url, "/ops/signin", big) == 413
    # Declared larger than the cap: refused before a byte of it is read.
    status, _, _ = await exchange(
        base_url,
        request_head(
            base_url,
            "POST /ops/signin HTTP/1.1",
            **{"Content-Type": FORM, "Content-Length": str(SIGNIN_FORM_MAX + 1)},
        ),
    )
    assert status == 413
    # The page's sign-in is capped alike, and a form within the cap is read: a wrong
    # token is 401, the operator's signs in.
    assert await sent_whole(base_url, "/signin", big) == 413
    assert await sent_whole(base_url, "/ops/signin", b"token=tro_wrong&next=/ops") == 401
    async with httpx.AsyncClient(base_url=base_url) as c:
        r = await c.post("/ops/signin", data={"token": olga.token, "next": "/ops"})
        assert r.status_code == 303


@scenario("The stopped list's age is bounded")
async def test_older_is_bounded(
    db: Database, base_url: str, ann: NewOwner, olga: NewOperator
) -> None:
    rid = await stopped(db, ann.id)
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET stopped_at = now() - interval '2 hours' WHERE id = $1", rid
        )
    )
    async with as_operator(base_url, olga.token) as c:
        for older in ("nan", "NaN", "inf", "-inf", "1e308", "-1", "5256001", "abc"):
            r = await c.get("/ops/stopped", params={"older": older})
            assert r.status_code == 422, (older, r.status_code, r.text[:300])
            assert 'id="older-error"' in r.text and "5,256,000" in r.text, older
            assert f'data-id="{rid}"' not in r.text
            resumed = await c.post("/ops/resume", data={"csrf": c.csrf, "all": "1", "older": older})
            assert resumed.status_code == 422, (older, resumed.text)
        for older, shown in (("", True), ("0", True), ("60", True), ("180", False)):
            r = await c.get("/ops/stopped", params={"older": older})
            assert r.status_code == 200, (older, r.text[:300])
            assert (f'data-id="{rid}"' in r.text) is shown, older
        # Ten years is the bound itself.
        assert (await c.get("/ops/stopped", params={"older": "5256000"})).status_code == 200
    # Nothing was resumed by the refused forms.
    assert (await db.fetchrow("recording", rid))["stopped_at"] is not None
