"""PostgreSQL from trio: an asyncpg pool driven through trio-asyncio, queries by name.

Every call runs one asyncio coroutine that acquires a pooled connection, does its work
and releases the connection, so a call costs one trip across the bridge.

Nothing waits forever on the server: each statement and each wait for a pooled
connection is bounded (`timeout_s`, TRANSCRIBER_DATABASE_TIMEOUT_S); past the bound a
call raises DatabaseBusy, which the HTTP API answers with 503 and the queue retries
as it does a lost connection.

Calls get connections in the order they asked for them (see `Turns`).

Cancellation: cancelling a call cancels its asyncio task, and trio-asyncio waits for
that task to finish before trio sees `Cancelled`. asyncpg then cancels the query on the
server, rolls back an open transaction when the connection is released, and puts the
connection back in the pool. A cancelled call therefore never leaves a connection
checked out or `idle in transaction` (tests/integration/test_db.py proves it).
"""

from __future__ import annotations

import contextlib
import json
import math
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar

import asyncpg
import tenacity
import trio
import trio_asyncio

from actors import describe
from transcriber.db import bridge  # noqa: F401  (the loop runs ready callbacks at once)
from transcriber.db.named_sql import load_queries

T = TypeVar("T")

JOURNAL_CHANNEL = "transcriber_journal"
WORK_CHANNEL = "transcriber_work"


class DatabaseUnreachable(Exception):
    """The server did not answer; the message names the URL with its password hidden."""

    def __init__(self, url: str, cause: BaseException):
        super().__init__(
            f"database unreachable at {hide_password(url)}: {describe(cause, with_type=False)}"
        )
        self.url = url


class DatabaseBusy(Exception):
    """The database did not answer within the bound (a statement, or the wait for a
    pooled connection): it is hung, paused, or blocked by a lock. Retrying later may
    work; nothing of this call was kept unless its statement committed."""


class StatementCut(Exception):
    """A read given its own, shorter bound (`Database.fetch_within`) ran past it and the
    server cut it off: it reads too much (a search too broad), not a database away."""


DEFAULT_TIMEOUT_S = 30.0


def hide_password(url: str) -> str:
    """The URL as it may be shown: any password replaced by `***`."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        if not any(k == "password" for k, _ in query):
            return url
        hidden = [(k, "***" if k == "password" else v) for k, v in query]
        # Rebuilt by hand: urlunsplit would turn an empty host ("postgresql:///db") into
        # another URL.
        return url.partition("?")[0] + "?" + urllib.parse.urlencode(hidden, safe="/*")
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[-1]}"))


_CONNECT_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError)

CONNECTION_LOST = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.AdminShutdownError,
    DatabaseBusy,
)
"""Errors that say the server went away or stopped answering (restart, network, a
pause), not that a query is wrong. asyncpg's InterfaceError is not among them: most of
its kinds are the caller's mistakes (an argument of the wrong type, a connection used
by two calls at once); only its closed kinds (a closed connection or pool) are a lost
connection (`connection_lost`)."""


def connection_lost(error: BaseException) -> bool:
    """Whether `error` says the connection went away (so a retry on another may work),
    not that the call itself is wrong — which would fail the same way every time, and is
    raised at once rather than retried for the whole patience. asyncpg names its closed
    connection by message alone (`InterfaceError('connection is closed')`, also as
    'cannot perform operation: connection is closed'), and so its closed pool ('pool is
    closed', 'pool is closing': the service stopping, every connection going)."""
    if isinstance(error, CONNECTION_LOST):
        return True
    return isinstance(error, asyncpg.InterfaceError) and any(
        closed in str(error) for closed in _CLOSED
    )


_CLOSED = ("connection is closed", "pool is closed", "pool is closing")


async def _trio_sleep(seconds: float) -> None:
    await trio.sleep(seconds)


def retry_while_unreachable(patience_s: float) -> tenacity.AsyncRetrying:
    """Retries, with backoff, a call that failed because the server went away or did
    not answer within the bound (`connection_lost`); any other error is raised at once.
    Gives up (re-raising) after `patience_s`. Only for
    calls that may run twice: the queue's writes are fenced by their token and
    recognise their own earlier success."""
    return tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception(connection_lost),
        wait=tenacity.wait_exponential(multiplier=0.1, max=5) + tenacity.wait_random(0, 0.1),
        stop=tenacity.stop_after_delay(patience_s),
        sleep=_trio_sleep,
        reraise=True,
        before_sleep=lambda state: _log_retry(state),
    )


def _log_retry(state: tenacity.RetryCallState) -> None:
    import logging

    from actors.log import event

    error = state.outcome.exception() if state.outcome else None
    event(
        logging.WARNING,
        "database_retry",
        attempt=state.attempt_number,
        error=describe(error, with_type=False) if error else None,
    )


SERVER_SETTINGS = {"application_name": "transcriber", "jit": "off"}


class Turns:
    """Turns at a pool's connections, one per connection, given in the order they were
    asked for.

    asyncpg's pool gives a freed connection to whichever call asks next, not to the one
    that has waited longest: the waiter woken for it may find it taken and queue again
    at the back. Under load some calls then wait many times as long as others (50 card
    readers at once: p99 2.8 times the median). trio's limiter hands a freed turn to the
    longest waiter, so a call that holds a turn finds a connection at once.

    Waiting for a turn is bounded like waiting for a connection: DatabaseBusy past it.
    Cancellation: a cancelled wait holds nothing.
    """

    def __init__(self, connections: int, timeout_s: float | None):
        self._limiter = trio.CapacityLimiter(connections)
        self._timeout_s = timeout_s

    async def take(self, holder: object) -> None:
        with trio.move_on_after(math.inf if self._timeout_s is None else self._timeout_s):
            await self._limiter.acquire_on_behalf_of(holder)
            return
        raise DatabaseBusy(f"no database connection within {self._timeout_s}s")

    def give_back(self, holder: object) -> None:
        self._limiter.release_on_behalf_of(holder)


class Database:
    """A pool plus the named queries of sql/<area>.sql (see named_sql)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        url: str,
        queries: dict[str, str],
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ):
        self._pool = pool
        self._turns = Turns(pool.get_max_size(), timeout_s)
        self.url = url
        self.queries = queries
        self.timeout_s = timeout_s

    def sql(self, name: str) -> str:
        return self.queries[name]

    async def run(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """Run `work` (an asyncio coroutine function) with one pooled connection.
        Raises DatabaseBusy when no connection or no answer comes within the bound."""

        async def on_asyncio() -> T:
            con = await _acquire(self._pool, self.timeout_s)
            try:
                return await _bounded(work(con))
            finally:
                await self._pool.release(con, timeout=self.timeout_s)

        turn = object()
        await self._turns.take(turn)
        try:
            done: T = await trio_asyncio.aio_as_trio(on_asyncio)()
            return done
        finally:
            self._turns.give_back(turn)

    async def fetch(self, name: str, *args: Any) -> list[asyncpg.Record]:
        sql = self.queries[name]
        return await self.run(lambda con: con.fetch(sql, *args))

    async def fetch_within(self, name: str, *args: Any, timeout_s: float) -> list[asyncpg.Record]:
        """`fetch`, cut off by the server after `timeout_s` (its own `statement_timeout`,
        in a read-only transaction of its own): raises StatementCut then, the connection
        fine for the next call. For reads whose cost the caller's input decides (a
        search), so one too broad answers plainly instead of holding a connection."""
        sql = self.queries[name]
        bound_ms = max(int(timeout_s * 1000), 1)

        async def bounded(con: asyncpg.Connection) -> list[asyncpg.Record]:
            async with con.transaction(readonly=True):
                await con.execute(f"SET LOCAL statement_timeout = {bound_ms}")
                rows: list[asyncpg.Record] = await con.fetch(sql, *args)
                return rows

        try:
            return await self.run(bounded)
        except asyncpg.QueryCanceledError as e:
            raise StatementCut(f"{name} read past {timeout_s}s") from e

    async def fetchrow(self, name: str, *args: Any) -> asyncpg.Record | None:
        sql = self.queries[name]
        return await self.run(lambda con: con.fetchrow(sql, *args))

    async def fetchval(self, name: str, *args: Any) -> Any:
        sql = self.queries[name]
        return await self.run(lambda con: con.fetchval(sql, *args))

    async def execute(self, name: str, *args: Any) -> str:
        sql = self.queries[name]
        return await self.run(lambda con: con.execute(sql, *args))

    @contextlib.asynccontextmanager
    async def pinned(self) -> AsyncIterator[Pinned]:
        """A pooled connection kept for many calls (see Pinned); back in the pool on exit.

        Cancellation: handing the connection back on exit is shielded.
        """
        pin = Pinned(self._pool, self._turns, self.timeout_s)
        try:
            yield pin
        finally:
            with trio.CancelScope(shield=True):
                await pin.close()

    @contextlib.asynccontextmanager
    async def listen(
        self, channel: str = JOURNAL_CHANNEL, on_payload: Callable[[str], None] | None = None
    ) -> AsyncIterator[Listener]:
        """A dedicated connection LISTENing on `channel`; with `on_payload`, each payload
        goes to it instead of `payloads` (see Listener).

        Cancellation: leaving the block (also by cancellation) closes the connection
        under a shield, so no listener outlives its caller.
        """
        con = await _connect(self.url)
        listener = Listener(con, on_payload)
        try:
            await trio_asyncio.aio_as_trio(con.add_listener)(channel, listener._on_notify)
            yield listener
        finally:
            with trio.CancelScope(shield=True):
                await trio_asyncio.aio_as_trio(con.close)()


class Pinned:
    """One pooled connection kept across calls, for a caller that makes many in a row:
    each call still crosses once but skips the pool's acquire and release (on this
    bridge they cost more CPU than a short statement). A call that fails or is cancelled
    hands the connection back to the pool, which rolls back what it left open (or drops
    a broken connection), and the next call takes a fresh one: the pool's guarantees
    hold on every path that is not the plain successful one.

    It holds a turn (see Turns) as long as it holds the connection.

    Cancellation: like Database.run.
    """

    def __init__(
        self, pool: asyncpg.Pool, turns: Turns, timeout_s: float | None = DEFAULT_TIMEOUT_S
    ):
        self._pool = pool
        self._turns = turns
        self._timeout_s = timeout_s
        self._con: asyncpg.Connection | None = None
        self._has_turn = False

    async def run(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        async def on_asyncio() -> T:
            if self._con is None:
                self._con = await _acquire(self._pool, self._timeout_s)
            con = self._con
            try:
                return await _bounded(work(con))
            except BaseException:
                self._con = None
                await self._pool.release(con, timeout=self._timeout_s)
                raise

        if not self._has_turn:
            await self._turns.take(self)
            self._has_turn = True
        try:
            done: T = await trio_asyncio.aio_as_trio(on_asyncio)()
            return done
        finally:
            if self._con is None:  # handed back (or never taken): so is the turn
                self._give_back_turn()

    async def close(self) -> None:
        try:
            if self._con is not None:
                con, self._con = self._con, None
                await trio_asyncio.aio_as_trio(self._pool.release)(con)
        finally:
            self._give_back_turn()

    def _give_back_turn(self) -> None:
        if self._has_turn:
            self._has_turn = False
            self._turns.give_back(self)


class Listener:
    """Notifications of one channel as a trio receive channel of payload strings.

    `lost` is set when the connection ends (server restart, network): the owner then
    reconnects and treats it as "anything may have happened".

    `on_payload`, if given, is called with each payload as it arrives, instead of
    `payloads` (which then stays empty): for a caller that only sets a trio event or
    the like (the pipeline's wake-up), one hop less than a task reading the channel;
    it must not block or raise.
    """

    def __init__(self, con: asyncpg.Connection, on_payload: Callable[[str], None] | None = None):
        self._send, self.payloads = trio.open_memory_channel[str](1024)
        self.lost = trio.Event()
        self._on_payload = on_payload
        con.add_termination_listener(lambda _con: self.lost.set())

    def _on_notify(self, _con: Any, _pid: int, _channel: str, payload: str) -> None:
        # Runs on the asyncio side of the same thread (trio-asyncio runs it inside a trio
        # task, so trio's synchronous calls work here); a full buffer drops the payload,
        # which is safe because wake-ups are hints and the poll is the fallback.
        if self._on_payload is not None:
            self._on_payload(payload)
            return
        with contextlib.suppress(trio.WouldBlock):
            self._send.send_nowait(payload)


async def _acquire(pool: asyncpg.Pool, timeout_s: float | None) -> asyncpg.Connection:
    """A pooled connection within the bound (on the asyncio side), else DatabaseBusy."""
    try:
        return await pool.acquire(timeout=timeout_s)
    except TimeoutError as e:
        raise DatabaseBusy(f"no database connection within {timeout_s}s") from e


async def _bounded(work: Awaitable[T]) -> T:
    """`work`'s statements are bounded by the pool's command_timeout; its expiry, a
    TimeoutError, becomes DatabaseBusy. (The release after it is bounded too, and drops
    a connection whose query could not be cancelled in time.)"""
    try:
        return await work
    except TimeoutError as e:
        raise DatabaseBusy("the database did not answer within the bound") from e


async def _json_codecs(con: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await con.set_type_codec(name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _keep_session(con: asyncpg.Connection) -> None:
    """The pool's reset on release, replaced: asyncpg still rolls back an open
    transaction and drops listeners itself; its default query (advisory unlock, CLOSE
    ALL, UNLISTEN, RESET ALL) would cost a round trip after every call, for session state
    pooled connections never hold (LISTEN has its own connection, locks are per
    transaction)."""


async def _connect(url: str) -> asyncpg.Connection:
    try:
        con = await trio_asyncio.aio_as_trio(asyncpg.connect)(url, server_settings=SERVER_SETTINGS)
        await trio_asyncio.aio_as_trio(_json_codecs)(con)
        return con
    except _CONNECT_ERRORS as e:
        raise DatabaseUnreachable(url, e) from e


@contextlib.asynccontextmanager
async def open_database(
    url: str,
    *,
    min_size: int = 2,
    max_size: int = 10,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    extra_areas: Iterable[str] = (),
) -> AsyncIterator[Database]:
    """A pool on `url`; must run inside `trio_asyncio.open_loop()`. Every statement and
    every wait for a connection is bounded by `timeout_s` (None: unbounded). The named
    queries are the service's, plus those of `extra_areas` (the benchmarks' "bench").

    Raises DatabaseUnreachable when the first connections cannot be made.
    Cancellation: closing the pool on exit is shielded.
    """
    try:
        pool = await trio_asyncio.aio_as_trio(asyncpg.create_pool)(
            url,
            min_size=min_size,
            max_size=max_size,
            server_settings=SERVER_SETTINGS,
            init=_json_codecs,
            reset=_keep_session,
            command_timeout=timeout_s,
            **({"timeout": timeout_s} if timeout_s else {}),
        )
    except (TimeoutError, *_CONNECT_ERRORS) as e:
        raise DatabaseUnreachable(url, e) from e
    try:
        yield Database(pool, url, load_queries(extra_areas), timeout_s)
    finally:
        with trio.CancelScope(shield=True):
            await trio_asyncio.aio_as_trio(pool.close)()
