"""PostgreSQL for tests: scratch databases made from an admin URL (with the admin
statements of transcriber.db.admin, which the benches share); the fixtures that use them
are in tests/conftest.py."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

import trio
import trio_asyncio

from transcriber.db.admin import run_as_admin as admin
from transcriber.db.admin import with_database

__all__ = ["admin", "run_with_loop", "scratch_database", "with_database"]


def run_with_loop(fn, *args):
    async def main():
        async with trio_asyncio.open_loop():
            return await fn(*args)

    return trio.run(main)


@contextlib.asynccontextmanager
async def scratch_database(admin_url: str, template: str | None = None) -> AsyncIterator[str]:
    """A new database (a copy of `template`, or empty) for one test, dropped after it."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    await admin(admin_url, f'CREATE DATABASE "{name}"{copy}')
    try:
        yield with_database(admin_url, name)
    finally:
        with trio.CancelScope(shield=True):
            await admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
