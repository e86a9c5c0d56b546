"""Opening the database for a command: the configured URL or the embedded server,
a pool, and the migrations."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import trio

from transcriber import embedded
from transcriber.config import Config
from transcriber.db import Database, open_database
from transcriber.migrate import migrate


def database_url(config: Config) -> str:
    """The configured URL, or the embedded server's (started or joined here)."""
    if config.database_url:
        return config.database_url
    return embedded.url(config.home)


@contextlib.asynccontextmanager
async def open_session(config: Config, *, max_size: int = 10) -> AsyncIterator[Database]:
    """A migrated database. Raises DatabaseUnreachable when it does not answer.

    Cancellation: the pool closes under a shield on the way out.
    """
    url = await trio.to_thread.run_sync(database_url, config)
    async with open_database(url, min_size=min(2, max_size), max_size=max_size,
                             timeout_s=config.database_timeout_s) as db:
        await migrate(db)
        yield db
