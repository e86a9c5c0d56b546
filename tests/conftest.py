"""A real PostgreSQL for every test that touches storage.

The server: TEST_DATABASE_URL (an admin URL of PostgreSQL >= 15), else the embedded
wheel in a temporary folder. There is no silent skip: if neither works the session
fails with the reason. Each test gets its own database, cloned from a template that
was migrated once per session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import trio
import trio_asyncio

from actors.log import use_logger
from transcriber.db import embedded
from transcriber.db.database import Database, open_database
from transcriber.db.migrations import migrate
from transcriber.owners import add_owner

# The product's events under its own name, as `transcriber`'s start names them.
use_logger("transcriber")


def with_database(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


async def _admin(url: str, *statements: str) -> None:
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


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        yield url
        return
    home = Path(tempfile.mkdtemp(prefix="transcriber-test-pg-"))
    home.chmod(0o755)  # as root, the server's files stay in this folder (see embedded)
    server = embedded.start(home, cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        # Stops it even if a test restarted it; interrupted sessions (Ctrl-C) come
        # here too. A killed session leaves it to the next start of this home: none.
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def template_db(pg_admin_url: str) -> Iterator[str]:
    """A migrated database that each test's database is cloned from."""
    name = f"transcriber_template_{os.getpid()}"

    async def make() -> None:
        await _admin(
            pg_admin_url,
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)',
            f'CREATE DATABASE "{name}"',
        )
        async with open_database(with_database(pg_admin_url, name), min_size=1, max_size=1) as db:
            await migrate(db)

    run_with_loop(make)
    yield name
    run_with_loop(_admin, pg_admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def aio_loop() -> AsyncIterator[None]:
    async with trio_asyncio.open_loop():
        yield


@contextlib.asynccontextmanager
async def scratch_database(admin_url: str, template: str | None = None) -> AsyncIterator[str]:
    """A new database (a copy of `template`, or empty) for one test, dropped after it."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    await _admin(admin_url, f'CREATE DATABASE "{name}"{copy}')
    try:
        yield with_database(admin_url, name)
    finally:
        with trio.CancelScope(shield=True):
            await _admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def db_url(pg_admin_url: str, template_db: str, aio_loop: None) -> AsyncIterator[str]:
    """The URL of a fresh, migrated database of this test's own."""
    async with scratch_database(pg_admin_url, template_db) as url:
        yield url


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    async with open_database(db_url, min_size=1, max_size=12) as database:
        yield database


@pytest.fixture
async def owner_id(db: Database) -> int:
    return (await add_owner(db, "alice")).id


@pytest.fixture(scope="session")
def moto() -> Iterator[Any]:
    """The S3 server of the object-store tests (tests/object_store.py), once a session."""
    from tests.object_store import moto_store

    yield from moto_store()
