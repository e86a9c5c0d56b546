"""The PostgreSQL server under test and the fresh, migrated databases each phase gets."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from transcriber.db import embedded
from transcriber.db.admin import run_as_admin, with_database
from transcriber.db.database import DEFAULT_TIMEOUT_S, Database, open_database
from transcriber.db.migrations import migrate
from transcriber.db.named_sql import BENCH_AREAS
from transcriber.owners import add_owner

ENV_URL = "TRANSCRIBER_BENCH_DATABASE_URL"


class Server:
    """The admin URL of the server under test, and the databases made on it."""

    def __init__(self) -> None:
        self.admin_url = os.environ.get(ENV_URL) or ""
        self.source = ENV_URL if self.admin_url else "embedded"
        self._handle: Any = None
        self._home: Path | None = None
        self._made: list[str] = []

    def start(self) -> None:
        if self.admin_url:
            return
        self._home = Path(tempfile.mkdtemp(prefix="transcriber-bench-pg-"))
        self._handle = embedded.start(self._home, cleanup_mode="delete")
        self.admin_url = self._handle.get_uri()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cleanup()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)

    async def fresh_database(self, phase: str) -> str:
        # Database names cannot be query parameters; this one is made here, never typed.
        name = f"transcriber_bench_{os.getpid()}_{phase}"
        await run_as_admin(
            self.admin_url,
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
            f'CREATE DATABASE "{name}"',
        )
        self._made.append(name)
        return with_database(self.admin_url, name)

    async def drop_databases(self) -> None:
        with trio.CancelScope(shield=True):
            drops = (f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)' for n in self._made)
            await run_as_admin(self.admin_url, *drops)
            self._made.clear()


@contextlib.asynccontextmanager
async def fresh_db(
    server: Server, phase: str, pool: int, timeout_s: float | None = DEFAULT_TIMEOUT_S
) -> AsyncIterator[tuple[Database, int]]:
    """A migrated database with one owner, the bench's queries loaded besides the
    service's; the pool's connections are opened up front, so no timed phase pays for
    connecting. `timeout_s` bounds each statement, as the service's does (None: no
    bound)."""
    url = await server.fresh_database(phase)
    async with open_database(
        url, min_size=pool, max_size=pool, timeout_s=timeout_s, extra_areas=BENCH_AREAS
    ) as db:
        await migrate(db)
        owner = await add_owner(db, "bench")
        yield db, owner.id
