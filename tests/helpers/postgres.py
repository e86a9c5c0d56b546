"""PostgreSQL for tests: database URLs, admin statements and scratch databases (the
fixtures that use them are in tests/conftest.py)."""

from __future__ import annotations

import contextlib
import urllib.parse
import uuid
from collections.abc import AsyncIterator

import asyncpg
import trio
import trio_asyncio


def with_database(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


async def admin(url: str, *statements: str) -> None:
    con = await trio_asyncio.aio_as_trio(asyncpg.connect)(url)
    try:
        for sql in statements:
            await trio_asyncio.aio_as_trio(con.execute)(sql)
    finally:
        await trio_asyncio.aio_as_trio(con.close)()


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
