"""Slow strangers (issue 21, item 2): requests with a body that no owner's token or page
session vouches for (the page's sign-in form) are served out of a small budget of their
own, and a body read whole must arrive whole in time, so however many of them dribble,
`/healthz` and the owners' requests are answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.helpers.api_clients import client
from tests.helpers.raw_http import exchange, request_head, until
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.http.sessions import SIGNIN_FORM_MAX
from transcriber.owners import NewOwner

FORM = "application/x-www-form-urlencoded"


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("intake", title)


async def opened(url: str, head: bytes, first: bytes) -> trio.SocketStream:
    u = httpx.URL(url)
    stream = await trio.open_tcp_stream(u.host, u.port)
    await stream.send_all(head + first)
    return stream


async def status_of(stream: trio.SocketStream) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise EOFError(data)
        data += chunk
    return int(data.split()[1])


def signin_head(url: str, length: int = 100) -> bytes:
    return request_head(
        url, "POST /signin HTTP/1.1", **{"Content-Type": FORM, "Content-Length": str(length)}
    )


@scenario("Slow strangers cannot take the owners' places")
async def test_slow_strangers_cannot_take_the_owners_places(
    db: Database, tmp_path: Path, ann: NewOwner
) -> None:
    config = Config(
        home=tmp_path / "home", http_max_requests=6, http_max_strangers=3, http_body_deadline_s=60
    )
    app = create_app(db, config)
    budgets = app.state.budgets
    async with serving(app) as url, client(url, ann) as as_ann:
        # A sign-in form over its small cap is refused before a byte of it is read.
        status, _, _ = await exchange(url, signin_head(url, SIGNIN_FORM_MAX + 1))
        assert status == 413

        # More slow sign-ins than the whole service serves at once, each sending a
        # few bytes of its form and then nothing for as long as it may.
        streams = [await opened(url, signin_head(url), b"token=") for _ in range(8)]
        answers: list[int] = []
        async with trio.open_nursery() as nursery:

            async def read(stream: trio.SocketStream) -> None:
                answers.append(await status_of(stream))

            for stream in streams:
                nursery.start_soon(read, stream)
            await until(lambda: budgets.strangers.taken == 3, "the strangers' budget full")
            await until(lambda: len(answers) == 5, "the rest refused")
            assert answers == [503] * 5
            assert budgets.requests.taken == 0  # none of the owners' places is taken
            health = await as_ann.get("/healthz")
            assert health.status_code == 200, health.text
            assert (await as_ann.get("/v1/recordings")).status_code == 200
            # An owner's body is vouched for by the token: not a stranger's.
            up = await as_ann.post("/v1/recordings", files={"file": ("a.wav", b"RIFF owner")})
            assert up.status_code == 201, up.text
            nursery.cancel_scope.cancel()
        for stream in streams:
            await stream.aclose()
        await until(lambda: budgets.strangers.taken == 0, "the strangers gone")


@scenario("A body read whole that does not arrive in time is answered 408")
async def test_a_body_read_whole_has_a_deadline(
    db: Database, tmp_path: Path, ann: NewOwner
) -> None:
    # Never silent for the idle bound, but never whole either.
    config = Config(home=tmp_path / "home", http_body_deadline_s=0.5, http_body_idle_s=30)
    app = create_app(db, config)
    budgets = app.state.budgets
    async with serving(app) as url, client(url, ann) as as_ann:
        rid = (
            await as_ann.post("/v1/recordings", files={"file": ("a.wav", b"RIFF deadline")})
        ).json()["id"]
        heads = [
            signin_head(url),
            request_head(
                url,
                f"PATCH /v1/recordings/{rid} HTTP/1.1",
                **{
                    "Authorization": f"Bearer {ann.token}",
                    "Content-Type": "application/json",
                    "Content-Length": "1000",
                },
            ),
        ]
        for head in heads:
            stream = await opened(url, head, b"t")
            answered: list[Any] = []
            async with trio.open_nursery() as nursery:

                async def read(
                    stream: trio.SocketStream = stream, answered: list[Any] = answered
                ) -> None:
                    answered.append(await status_of(stream))
                    nursery.cancel_scope.cancel()

                nursery.start_soon(read)
                with trio.fail_after(10):
                    while True:  # a byte every 50 ms: a sender, not a silent one
                        await stream.send_all(b"x")
                        await trio.sleep(0.05)
            assert answered == [408], head
            await stream.aclose()
        await until(
            lambda: budgets.strangers.taken == 0 and budgets.requests.taken == 0, "all gone"
        )
