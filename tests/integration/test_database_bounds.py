"""Nothing waits forever on the database (openspec/specs/storage): a statement or a
wait for a connection past its bound raises DatabaseBusy; the API answers 503. The
hang is forced, not hoped for: another session holds a lock the call needs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest
import trio
import trio_asyncio

from transcriber.config import Config
from transcriber.db.database import Database, DatabaseBusy, open_database
from transcriber.http import create_app, serving
from transcriber.owners import add_owner

BOUND_S = 0.5


@pytest.fixture
async def bounded(db_url: str) -> AsyncIterator[Database]:
    async with open_database(db_url, min_size=1, max_size=2, timeout_s=BOUND_S) as database:
        yield database


async def locked(db_url: str, table: str) -> asyncpg.Connection:
    """A session of its own holding `table` locked against every other session."""
    con = await trio_asyncio.aio_as_trio(asyncpg.connect)(db_url)
    await trio_asyncio.aio_as_trio(con.execute)(
        f"BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
    )
    return con


async def test_a_statement_past_the_bound_raises_database_busy_and_keeps_the_pool(
    bounded: Database, db_url: str
) -> None:
    con = await locked(db_url, "recordings")
    try:
        with trio.fail_after(20 * BOUND_S):
            with pytest.raises(DatabaseBusy):
                await bounded.fetch("status")
    finally:
        await trio_asyncio.aio_as_trio(con.close)()
    # The connection came back to the pool, usable: the next call answers.
    assert await bounded.fetchval("health") == 1


@pytest.mark.scenario(
    "storage", "A database that does not answer gives the API 503 within the bound"
)
async def test_a_database_that_does_not_answer_gives_the_api_503(
    bounded: Database, db_url: str, tmp_path: Path
) -> None:
    owner = await add_owner(bounded, "ann")
    async with serving(create_app(bounded, Config(home=tmp_path / "home"))) as url:
        async with httpx.AsyncClient(
            base_url=url, timeout=30, headers={"Authorization": f"Bearer {owner.token}"}
        ) as c:
            con = await locked(db_url, "owners")  # every authenticated call needs it
            try:
                with trio.fail_after(20 * BOUND_S):  # not the client's 30 s
                    answer = await c.get("/v1/recordings")
            finally:
                await trio_asyncio.aio_as_trio(con.close)()
            assert answer.status_code == 503
            assert answer.headers["Retry-After"].isdigit()
            assert "database" in answer.json()["error"]
            # Once the lock is gone, the same API answers again.
            assert (await c.get("/v1/recordings")).status_code == 200
