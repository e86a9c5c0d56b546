"""Cancellation at the trio/asyncio bridge leaves no connection behind."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import trio
import trio_asyncio

from transcriber.db.database import (
    Database,
    DatabaseBusy,
    DatabaseUnreachable,
    connection_lost,
    hide_password,
    open_database,
    retry_while_unreachable,
)
from transcriber.db.named_sql import BENCH_AREAS, areas, load_queries, sql_folder


async def other_sessions(db_url: str) -> dict[str, int]:
    """States of this database's other client sessions, seen from a fresh connection."""
    con = await trio_asyncio.aio_as_trio(asyncpg.connect)(db_url)
    try:
        rows = await trio_asyncio.aio_as_trio(con.fetch)(
            "SELECT state, count(*) AS n FROM pg_stat_activity WHERE datname = "
            "current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            " GROUP BY state"
        )
    finally:
        await trio_asyncio.aio_as_trio(con.close)()
    return {r["state"]: r["n"] for r in rows}


async def wait_until_active(db_url: str, n: int) -> None:
    # Polled: the server's sessions are a view to read, nothing signals a change.
    while (await other_sessions(db_url)).get("active", 0) < n:
        await trio.sleep(0.005)


def pool_is_whole(db: Database) -> bool:
    pool = db._pool
    return pool.get_idle_size() == pool.get_size()


async def cancel_inside_a_transaction(db_url: str, run: Any) -> None:
    """Cancel `run` of a transaction that inserted into `marks` and then waits in a
    query; fails if the cancel does not reach the query."""

    async def long_transaction(con: Any) -> None:
        async with con.transaction():
            await con.execute("INSERT INTO marks VALUES (1)")
            await con.execute("SELECT pg_sleep(60)")

    with trio.move_on_after(30) as deadline:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run, long_transaction)
            await wait_until_active(db_url, 1)
            nursery.cancel_scope.cancel()
    assert not deadline.cancelled_caught, "the cancel did not reach the query"


async def test_cancel_inside_a_transaction_rolls_back_and_returns_the_connection(
    db_url: str,
) -> None:
    async with open_database(db_url, min_size=1, max_size=2) as db:
        await db.run(lambda con: con.execute("CREATE TABLE marks (n int)"))

        await cancel_inside_a_transaction(db_url, db.run)
        assert pool_is_whole(db)
        assert await db.run(lambda con: con.fetchval("SELECT count(*) FROM marks")) == 0
        sessions = await other_sessions(db_url)
        assert "idle in transaction" not in sessions and "active" not in sessions


async def test_a_pinned_connection_is_kept_and_handed_back_when_a_call_is_cancelled(
    db_url: str,
) -> None:
    async with open_database(db_url, min_size=1, max_size=2) as db:
        await db.run(lambda con: con.execute("CREATE TABLE marks (n int)"))
        async with db.pinned() as pin:
            pids = {
                await pin.run(lambda con: con.fetchval("SELECT pg_backend_pid()")) for _ in range(3)
            }
            assert len(pids) == 1  # one connection for every call
            assert db._pool.get_idle_size() == db._pool.get_size() - 1

            await cancel_inside_a_transaction(db_url, pin.run)
            # The cancelled call gave its connection back to the pool, rolled back.
            assert pool_is_whole(db)
            sessions = await other_sessions(db_url)
            assert "idle in transaction" not in sessions and "active" not in sessions
            # The next call takes a connection again, and sees nothing of the insert.
            assert await pin.run(lambda con: con.fetchval("SELECT count(*) FROM marks")) == 0
        assert pool_is_whole(db)


@contextlib.asynccontextmanager
async def only_connection_held(db: Database) -> AsyncIterator[trio.Nursery]:
    """The pool's only connection held by a call until the block ends."""
    release = trio.Event()

    async def hold(con: Any) -> None:
        await trio_asyncio.trio_as_aio(release.wait)()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(db.run, hold)
        await trio.testing.wait_all_tasks_blocked()
        assert db._pool.get_idle_size() == 0
        try:
            yield nursery
        finally:
            release.set()


async def test_cancel_while_waiting_to_acquire_leaves_no_connection_checked_out(
    db_url: str,
) -> None:
    async with open_database(db_url, min_size=1, max_size=1) as db:
        async with only_connection_held(db) as nursery:
            # The only connection is held: this caller waits for its turn ...
            with trio.CancelScope() as waiting:
                nursery.start_soon(trio_cancel_soon, waiting)
                await db.fetchval("migrations_applied")
            assert waiting.cancelled_caught
        assert pool_is_whole(db)
        # ... and the pool still serves.
        assert await db.run(lambda con: con.fetchval("SELECT 1")) == 1


async def trio_cancel_soon(scope: trio.CancelScope) -> None:
    await trio.testing.wait_all_tasks_blocked()
    scope.cancel()


def marking(order: list[int], n: int) -> Any:
    async def work(con: Any) -> int:
        order.append(n)
        return await con.fetchval("SELECT 1")

    return work


@pytest.mark.scenario("storage", "Calls waiting for a connection get one in the order they asked")
async def test_calls_get_connections_in_the_order_they_asked(db_url: str) -> None:
    async with open_database(db_url, min_size=1, max_size=1) as db:
        asked: list[int] = []
        got: list[int] = []

        async def caller() -> None:
            for _ in range(30):
                n = len(asked)
                asked.append(n)  # nothing yields between asking and queueing
                await db.run(marking(got, n))

        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(caller)
        # asyncpg alone hands a freed connection to whichever call asks next, and the
        # longest waiter goes to the back again: 66 to 124 of these 300 came out of order.
        assert got == asked
        assert pool_is_whole(db)


async def test_a_wait_for_a_connection_past_the_bound_raises_database_busy(db_url: str) -> None:
    async with open_database(db_url, min_size=1, max_size=1, timeout_s=0.2) as db:
        async with only_connection_held(db):
            with trio.fail_after(10), pytest.raises(DatabaseBusy, match="no database connection"):
                await db.fetchval("migrations_applied")
        assert await db.run(lambda con: con.fetchval("SELECT 1")) == 1


async def test_unreachable_database_names_the_url_without_its_password() -> None:
    url = "postgresql://ann:s3cret@127.0.0.1:1/transcriber"
    async with trio_asyncio.open_loop():
        with pytest.raises(DatabaseUnreachable) as caught:
            async with open_database(url):
                pass
    message = str(caught.value)
    assert "s3cret" not in message
    assert "postgresql://ann:***@127.0.0.1:1/transcriber" in message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql:///db?host=/run/pg&password=pw", "postgresql:///db?host=/run/pg&password=***"),
    ],
)
def test_hide_password(url: str, shown: str) -> None:
    assert hide_password(url) == shown


# --------------------------------------------------------------------------------------
# The named queries: one file per area, the bench's loaded only on request
# --------------------------------------------------------------------------------------


def test_the_service_loads_every_area_but_the_benches() -> None:
    service, everything = load_queries(), load_queries(BENCH_AREAS)
    assert set(service) < set(everything)
    assert "bench_milestones" in everything and "bench_milestones" not in service
    assert {"claim", "accept", "owner_by_token", "page_session", "migrations_lock"} <= set(service)
    assert set(areas()) > set(BENCH_AREAS)


async def test_a_database_has_the_bench_queries_only_when_asked(db_url: str) -> None:
    async with open_database(db_url, min_size=1, max_size=1) as db:
        assert "accept_many" not in db.queries
    async with open_database(db_url, min_size=1, max_size=1, extra_areas=BENCH_AREAS) as db:
        assert await db.fetchval("bench_milestone_of", uuid.uuid4()) is None


def test_a_query_defined_twice_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "one.sql").write_text("-- name: a\nSELECT 1\n\n-- name: b\nSELECT 2\n")
    (tmp_path / "two.sql").write_text("-- name: c\nSELECT 3\n")
    assert load_queries(folder=tmp_path) == {"a": "SELECT 1", "b": "SELECT 2", "c": "SELECT 3"}
    (tmp_path / "two.sql").write_text("-- name: c\nSELECT 3\n\n-- name: a\nSELECT 4\n")
    with pytest.raises(ValueError, match=re.escape("'a' is already defined in sql/one.sql")):
        load_queries(folder=tmp_path)
    (tmp_path / "two.sql").write_text("-- name: c\nSELECT 3\n\n-- name: c\nSELECT 4\n")
    with pytest.raises(ValueError, match=re.escape("'c' is already defined in sql/two.sql")):
        load_queries(folder=tmp_path)


def test_an_unknown_extra_area_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "one.sql").write_text("-- name: a\nSELECT 1\n")
    (tmp_path / "0001_initial.sql").write_text("CREATE TABLE t ()")
    assert areas(tmp_path) == ["one"]  # a migration is no area
    with pytest.raises(ValueError, match="no area 'bench'"):
        load_queries(BENCH_AREAS, folder=tmp_path)


def test_the_sql_folder_is_the_checkout_s_own() -> None:
    # Read through the package (the wheel's layout), it is this checkout's sql/: the
    # link transcriber/sql -> ../sql, not another install's copy.
    here = Path(__file__).resolve().parents[2] / "sql"
    assert Path(str(sql_folder() / "queue.sql")).resolve().parent == here
    names = sorted(f.name for f in sql_folder().iterdir())
    assert names == sorted(p.name for p in here.glob("*.sql"))


async def attempts_of(call: Any) -> tuple[int, BaseException | None]:
    """How many attempts `retry_while_unreachable` (a whole minute of patience) made of
    `call`, and what it raised in the end (None: it succeeded)."""
    made = 0
    try:
        async for attempt in retry_while_unreachable(60):
            with attempt:
                made += 1
                await call(made)
    except Exception as e:
        return made, e
    return made, None


async def test_a_programming_error_is_raised_at_once_not_retried(db: Database) -> None:
    # Two calls at once on one connection: a bug of the caller's, which asyncpg raises as
    # an InterfaceError. It would fail the same way for the whole patience.
    async def both(con: asyncpg.Connection) -> None:
        import asyncio

        await asyncio.gather(con.fetchval("SELECT pg_sleep(0.2)"), con.fetchval("SELECT 1"))

    async def at_once(_: int) -> None:
        await db.run(both)

    with trio.fail_after(5):
        made, raised = await attempts_of(at_once)
    assert made == 1 and isinstance(raised, asyncpg.InterfaceError), raised
    assert "another operation is in progress" in str(raised)


async def test_a_closed_connection_is_lost_and_retried(db: Database, db_url: str) -> None:
    con = await trio_asyncio.aio_as_trio(asyncpg.connect)(db_url)
    await trio_asyncio.aio_as_trio(con.close)()

    async def closed_then_pooled(made: int) -> None:
        if made == 1:
            await trio_asyncio.aio_as_trio(con.fetchval)("SELECT 1")
        else:
            assert await db.fetchval("health") == 1

    with trio.fail_after(10):
        made, raised = await attempts_of(closed_then_pooled)
    assert (made, raised) == (2, None)
    with pytest.raises(asyncpg.InterfaceError) as closed:
        await trio_asyncio.aio_as_trio(con.fetchval)("SELECT 1")
    assert connection_lost(closed.value)


async def test_a_closed_pool_is_lost_too(db_url: str) -> None:
    # The service stopping: every connection going. Not the caller's mistake.
    async with open_database(db_url, min_size=1, max_size=1) as gone:
        pass
    with pytest.raises(asyncpg.InterfaceError) as closed:
        await gone.fetchval("health")
    assert connection_lost(closed.value)
