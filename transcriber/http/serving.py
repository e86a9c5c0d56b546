"""Serving the application with Hypercorn's trio worker, in the service's own trio
process (with the trio-asyncio loop open, as every database call needs it)."""

from __future__ import annotations

import contextlib
import functools
import http
import importlib.metadata
import json
import logging
from collections.abc import AsyncIterator
from typing import cast

import h11
import hypercorn.config
import hypercorn.trio
import hypercorn.typing
import trio
from fastapi import FastAPI
from hypercorn.events import RawData
from hypercorn.protocol.h11 import H11Protocol

from transcriber.http import ws_close


async def _send_json_error(self: H11Protocol, status_code: int) -> None:
    """Hypercorn's own answer to a request it cannot parse (a broken request line, a
    negative Content-Length: 400; headers over its limit: 431), in the API's one error
    shape instead of an empty body, in one write.

    Nothing when the application has the request already: then the error is the
    client's broken body or its going away mid-body, which the application answers
    itself. (Hypercorn would answer too, and the two writes could meet on the socket:
    trio refuses that with an error that ends the whole server.)"""
    if self.stream is not None:
        return
    body = json.dumps(
        {"error": f"{http.HTTPStatus(status_code).phrase.lower()}: the request could not be parsed"}
    ).encode()
    try:
        data = b"".join(
            self.connection.send(event) or b""
            for event in (
                h11.Response(
                    status_code=status_code,
                    headers=[
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                        *self.config.response_headers("h11"),
                    ],
                ),
                h11.Data(data=body),
                h11.EndOfMessage(),
            )
        )
    except h11.LocalProtocolError:
        return  # h11 cannot answer in this state; the connection closes unanswered
    await self.send(RawData(data=data))


HYPERCORN_WRITTEN_FOR = "0.18.0"
"""The Hypercorn release `_send_json_error` replaces a private method of (pinned in
pyproject.toml): another release may name, call or shape that method differently."""


def install_hypercorn_error_hook() -> None:
    """Make Hypercorn answer the requests it cannot parse itself in the API's JSON error
    shape (`_send_json_error`), for the whole process: Hypercorn has no setting for that
    answer's body, so this replaces the private `H11Protocol._send_error_response`.
    And hand a WebSocket's application the client's own close code (`ws_close`), which
    Hypercorn reports as 1006 for every disconnect. `serve` and `serving` call it
    before they start the server; a second call changes nothing. Refuses
    (RuntimeError) any Hypercorn but the one it was written for."""
    found = importlib.metadata.version("hypercorn")
    if found != HYPERCORN_WRITTEN_FOR:
        raise RuntimeError(
            f"transcriber.http.serving.install_hypercorn_error_hook replaces a private "
            f"method of Hypercorn {HYPERCORN_WRITTEN_FOR}, but Hypercorn {found} is "
            f"installed: check H11Protocol._send_error_response in that release, then "
            f"update the hook and HYPERCORN_WRITTEN_FOR (or install "
            f"hypercorn=={HYPERCORN_WRITTEN_FOR})"
        )
    if not callable(getattr(H11Protocol, "_send_error_response", None)):
        raise RuntimeError(f"Hypercorn {found} has no H11Protocol._send_error_response to replace")
    H11Protocol._send_error_response = _send_json_error  # type: ignore[method-assign]
    if not ws_close.install():
        raise RuntimeError(f"Hypercorn {found}'s WSStream has no close handling to wrap")


def server_config(
    host: str = "127.0.0.1", port: int = 8080, *, head_timeout_s: float = 5.0
) -> hypercorn.config.Config:
    """Hypercorn's settings for the service: the service log's logger, no access log,
    a connection closed when it has no whole request head for `head_timeout_s` (so a
    connection that dribbles its head, or idles between requests, is not kept)."""
    config = hypercorn.config.Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    # Hypercorn's keep-alive timer runs from a connection's start until its request
    # head is whole, and again between requests.
    config.keep_alive_timeout = head_timeout_s
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    return config


async def serve_app(
    app: FastAPI,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve `app` on `host:port` (0: any free port) until cancelled; for
    `await nursery.start(serve_app, app, host, port)`, which returns the base URL.

    Must run inside `trio_asyncio.open_loop()`. Cancellation stops the server at once:
    requests in flight are cancelled like at a crash (an upload removes its file). The
    caller installs the error hook first (`install_hypercorn_error_hook`), as `serve`
    and `serving` do.
    """
    settings = server_config(host, port, head_timeout_s=app.state.config.http_head_timeout_s)
    async with trio.open_nursery() as nursery:
        # Starlette's ASGI types and Hypercorn's describe the same protocol in two
        # vocabularies that mypy cannot match up; the app is an ASGI 3 application.
        asgi = cast("hypercorn.typing.ASGIFramework", app)
        binds = await nursery.start(functools.partial(hypercorn.trio.serve, asgi, settings))
        task_status.started(binds[0])


@contextlib.asynccontextmanager
async def serving(app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """`serve_app` for the length of a block, which gets the base URL; leaving the
    block stops the server as a cancellation does. Installs the error hook first."""
    install_hypercorn_error_hook()
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve_app, app, host, port)
        nursery.cancel_scope.cancel()
