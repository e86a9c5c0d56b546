"""Whole databases, made and dropped from an admin URL (for the benchmarks and the tests:
the service itself never creates a database)."""

from __future__ import annotations

import urllib.parse

import asyncpg
import trio_asyncio


def with_database(url: str, name: str) -> str:
    """`url` pointing at the database `name` instead of its own."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


async def run_as_admin(admin_url: str, *statements: str) -> None:
    """`statements` in order on one connection of `admin_url`, outside any transaction
    (CREATE and DROP DATABASE cannot run in one); must run inside trio-asyncio's loop.

    Database names cannot be query parameters: the callers make the names themselves,
    never from input.
    """
    con = await trio_asyncio.aio_as_trio(asyncpg.connect)(admin_url)
    try:
        for sql in statements:
            await trio_asyncio.aio_as_trio(con.execute)(sql)
    finally:
        await trio_asyncio.aio_as_trio(con.close)()
