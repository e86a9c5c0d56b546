"""Serving the application with Hypercorn's trio worker, in the service's own trio
process (with the trio-asyncio loop open, as every database call needs it)."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator

import hypercorn.config
import hypercorn.trio
import trio
from fastapi import FastAPI


def server_config(host: str = "127.0.0.1", port: int = 8080) -> hypercorn.config.Config:
    """Hypercorn's settings for the service: the service log's logger, no access log."""
    config = hypercorn.config.Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    return config


async def serve_app(app: FastAPI, host: str = "127.0.0.1", port: int = 0, *,
                    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve `app` on `host:port` (0: any free port) until cancelled; for
    `await nursery.start(serve_app, app, host, port)`, which returns the base URL.

    Must run inside `trio_asyncio.open_loop()`. Cancellation stops the server at once:
    requests in flight are cancelled like at a crash (an upload removes its file).
    """
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, server_config(host, port)))
        task_status.started(binds[0])


@contextlib.asynccontextmanager
async def serving(app: FastAPI, host: str = "127.0.0.1", port: int = 0
                  ) -> AsyncIterator[str]:
    """`serve_app` for the length of a block, which gets the base URL; leaving the
    block stops the server as a cancellation does."""
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve_app, app, host, port)
        nursery.cancel_scope.cancel()
