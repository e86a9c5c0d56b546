"""Opening the database for a command: the configured URL or the embedded server,
a pool, and the migrations."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import trio

from transcriber import home
from transcriber.config import Config
from transcriber.db import embedded
from transcriber.db.database import Database, open_database
from transcriber.db.migrations import migrate


@contextlib.asynccontextmanager
async def database_url(config: Config, *, needs_home: bool = False) -> AsyncIterator[str]:
    """The configured URL, or the embedded server's for the length of the block (started
    or joined here; stopped on the way out unless another process still uses it). The
    home is checked first when the embedded server or the caller (`needs_home`) uses it.

    Cancellation: starting and stopping run in a thread under a shield, so a server
    that came up is always left again, however the block ends; a cancellation waits
    for them (seconds at most).
    """
    if needs_home or not config.database_url:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(home.prepare, config.home)
    if config.database_url:
        yield config.database_url
        return
    with trio.CancelScope(shield=True):
        server = await trio.to_thread.run_sync(embedded.start, config.home)
    try:
        yield server.get_uri()
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(server.cleanup)


@contextlib.asynccontextmanager
async def open_session(
    config: Config, *, max_size: int = 10, needs_home: bool = False
) -> AsyncIterator[Database]:
    """A migrated database. Raises DatabaseUnreachable when it does not answer,
    HomeUnusable or EmbeddedFailed when the embedded one cannot run.

    Cancellation: the pool closes, then the embedded server is left, under shields.
    """
    async with database_url(config, needs_home=needs_home) as url:
        async with open_database(
            url, min_size=min(2, max_size), max_size=max_size, timeout_s=config.database_timeout_s
        ) as db:
            await migrate(db)
            yield db
