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

from transcriber.bench.server_cpu import server_cpu_s
from transcriber.config import Config
from transcriber.db import embedded
from transcriber.db.admin import run_as_admin, with_database
from transcriber.db.database import Database, open_database
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

    @property
    def pgdata(self) -> Path | None:
        """The data folder of the embedded server (None for a server given by URL)."""
        return self._handle.pgdata if self._handle is not None else None

    def cpu_s(self) -> float | None:
        """CPU seconds the embedded server has used so far, every one of its processes
        (server_cpu.py); None for a server given by URL, whose processes are not ours
        to read."""
        return server_cpu_s(self.pgdata) if self.pgdata is not None else None

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


SETUP_TIMEOUT_S = 3600.0
"""The bound of each statement of a phase's own setup (seeding a million finished rows,
VACUUM, EXPLAIN ANALYZE): minutes on a slow or busy machine, and not the service's
business, so not the service's bound; an hour still ends a setup the server never
answers."""


def service_timeout_s() -> float | None:
    """The statement bound of the service as configured (TRANSCRIBER_DATABASE_TIMEOUT_S):
    what the timed part of a phase runs under, as the service would."""
    return Config.from_env().database_timeout_s


@contextlib.asynccontextmanager
async def fresh_db(
    server: Server, phase: str, pool: int, timeout_s: float | None = None
) -> AsyncIterator[tuple[Database, Database, int]]:
    """A migrated database with one owner, the bench's queries loaded besides the
    service's: `(db, setup, owner_id)`. `db`'s pool of `pool` connections is opened up
    front, so no timed phase pays for connecting; each of its statements is bounded by
    `timeout_s` (default: the service's bound as configured). `setup` is one more
    connection for the phase's own setup, each statement bounded by SETUP_TIMEOUT_S."""
    url = await server.fresh_database(phase)
    bound = service_timeout_s() if timeout_s is None else timeout_s
    async with (
        open_database(
            url, min_size=1, max_size=1, timeout_s=SETUP_TIMEOUT_S, extra_areas=BENCH_AREAS
        ) as setup,
        open_database(
            url, min_size=pool, max_size=pool, timeout_s=bound, extra_areas=BENCH_AREAS
        ) as db,
    ):
        await migrate(setup)
        owner = await add_owner(setup, "bench")
        yield db, setup, owner.id
