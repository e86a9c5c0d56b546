"""Retried writes (openspec/specs/storage): a queue write whose statement committed but
whose reply was lost on the way back is retried (the server seemed away), and the retry
recognises its own earlier success — one journal event, the first try's answer. The
reply is lost for real: the statement runs on the real database, then the connection
wrapper raises the error asyncpg raises when a connection drops."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
import pytest
import trio

from tests.helpers.pg_pipeline import accept, journal, state, table
from transcriber.db.database import Database
from transcriber.milestones import NORMALIZED, RECEIVED
from transcriber.pipeline import operator
from transcriber.pipeline.pg_queue import PgQueue, Saved

T = TypeVar("T")

COMMIT = "COMMIT"
"""Lose the reply of a transaction's COMMIT rather than of one named statement."""


class LosingConnection:
    """A connection whose reply to one statement (or to a COMMIT) is lost once, after
    the server did the work."""

    def __init__(self, con: asyncpg.Connection, owner: LosingDatabase):
        self._con = con
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def _maybe_lose(self, sql: str) -> None:
        if self._owner.armed and sql == self._owner.target:
            self._owner.armed = False
            self._owner.lost += 1
            raise asyncpg.ConnectionDoesNotExistError(
                "connection was closed in the middle of operation (the reply was lost)"
            )

    async def fetch(self, sql: str, *args: Any) -> Any:
        rows = await self._con.fetch(sql, *args)
        self._maybe_lose(sql)
        return rows

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        row = await self._con.fetchrow(sql, *args)
        self._maybe_lose(sql)
        return row

    async def fetchval(self, sql: str, *args: Any) -> Any:
        value = await self._con.fetchval(sql, *args)
        self._maybe_lose(sql)
        return value

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with self._con.transaction():
            yield
        self._maybe_lose(COMMIT)  # committed; only the answer is gone


class LosingDatabase:
    """The real database as a queue sees it; `arm(name)` loses the next reply of the
    named query (or of a COMMIT)."""

    def __init__(self, db: Database):
        self.db = db
        self.target = ""
        self.armed = False
        self.lost = 0

    def sql(self, name: str) -> str:
        return self.db.sql(name)

    def arm(self, name: str) -> None:
        self.target = COMMIT if name == COMMIT else self.db.sql(name)
        self.armed = True

    async def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        return await self.db.run(lambda con: work(LosingConnection(con, self)))


async def setup(
    db: Database, owner_id: int, **limits: Any
) -> tuple[Any, LosingDatabase, PgQueue, Any]:
    rid = await accept(db, owner_id)
    losing = LosingDatabase(db)
    queue = PgQueue(losing, table(**limits))  # type: ignore[arg-type]
    job = await queue.next_job()
    assert job is not None and job.claim.id == rid
    return rid, losing, queue, job


def kinds(events: list[Any]) -> list[str]:
    return [e["kind"] for e in events]


@pytest.mark.scenario(
    "storage", "A write retried after its reply was lost answers as the first try"
)
async def test_a_commit_whose_reply_was_lost(db: Database, owner_id: int) -> None:
    rid, losing, queue, job = await setup(db, owner_id)
    losing.arm("commit")
    assert await queue.commit(job, queue.steps[RECEIVED], None) is True
    assert losing.lost == 1  # the reply really was lost, and the commit sent again
    assert (await state(db, rid))["milestone"] == NORMALIZED
    assert kinds(await journal(db, rid)) == ["accepted", "milestone_reached"]


@pytest.mark.scenario(
    "storage", "A write retried after its reply was lost answers as the first try"
)
async def test_a_commit_with_results_whose_transaction_reply_was_lost(
    db: Database, owner_id: int
) -> None:
    rid, losing, queue, job = await setup(db, owner_id)
    losing.arm(COMMIT)
    saved = Saved("save_normalized", ("/audio/a.wav", 2.5))
    assert await queue.commit(job, queue.steps[RECEIVED], saved) is True
    assert losing.lost == 1
    after = await state(db, rid)
    assert (after["milestone"], after["audio_path"], after["duration_s"]) == (
        NORMALIZED,
        "/audio/a.wav",
        2.5,
    )
    assert kinds(await journal(db, rid)) == ["accepted", "milestone_reached"]


@pytest.mark.scenario(
    "storage", "A write retried after its reply was lost answers as the first try"
)
async def test_a_last_fail_whose_reply_was_lost(db: Database, owner_id: int) -> None:
    rid, losing, queue, job = await setup(db, owner_id, max_attempts=1)
    losing.arm("fail")
    assert await queue.fail(job, queue.steps[RECEIVED], "boom") == ("stopped", None)
    assert losing.lost == 1
    after = await state(db, rid)
    assert (after["attempts"], after["stop_reason"]) == (1, "attempts_exhausted")
    assert kinds(await journal(db, rid)) == ["accepted", "attempt_failed", "stopped"]


@pytest.mark.scenario(
    "storage", "A write retried after its reply was lost answers as the first try"
)
async def test_a_fail_whose_reply_was_lost(db: Database, owner_id: int) -> None:
    rid, losing, queue, job = await setup(db, owner_id)
    losing.arm("fail")
    outcome, pause = await queue.fail(job, queue.steps[RECEIVED], "boom")
    assert outcome == "retry" and pause is not None and pause > 0
    assert losing.lost == 1
    after = await state(db, rid)
    assert (after["attempts"], after["claim_token"], after["stopped_at"]) == (1, None, None)
    assert kinds(await journal(db, rid)) == ["accepted", "attempt_failed"]


@pytest.mark.scenario(
    "storage", "A write retried after its reply was lost answers as the first try"
)
async def test_a_stop_whose_reply_was_lost(db: Database, owner_id: int) -> None:
    rid, losing, queue, job = await setup(db, owner_id)
    losing.arm("stop")
    assert await queue.stop(job, "empty_audio", "nothing in it") is True
    assert losing.lost == 1
    assert (await state(db, rid))["stop_reason"] == "empty_audio"
    assert kinds(await journal(db, rid)) == ["accepted", "stopped"]


@pytest.mark.scenario(
    "storage", "A write retried after its reply was lost answers as the first try"
)
async def test_a_resume_whose_reply_was_lost(db: Database, owner_id: int) -> None:
    rid, losing, queue, job = await setup(db, owner_id)
    assert await queue.stop(job, "empty_audio", "nothing in it")
    losing.arm("resume")
    resumed = await operator.resume(
        queue.db, rid, by="operator", now=queue.now, patience_s=queue.patience_s
    )
    assert (resumed.id, resumed.milestone) == (rid, RECEIVED)
    assert losing.lost == 1
    assert (await state(db, rid))["stopped_at"] is None
    assert kinds(await journal(db, rid)) == ["accepted", "stopped", "resumed"]


async def test_a_claim_whose_reply_was_lost_leaves_nothing_claimed(
    db: Database, owner_id: int
) -> None:
    """The lost claim's record is released by its token before the claim is sent again
    (openspec/specs/storage: a cut trip leaks no claim)."""
    rid = await accept(db, owner_id)
    losing = LosingDatabase(db)
    queue = PgQueue(losing, table())  # type: ignore[arg-type]
    losing.arm("claim_read")  # the claim and its read: one round trip
    with trio.fail_after(30):
        job = await queue.next_job()
    assert losing.lost == 1
    assert job is not None and job.claim.id == rid and job.attempt == 1
    assert (await state(db, rid))["claim_token"] == job.claim.token
    events = await journal(db, rid)
    assert kinds(events) == ["accepted", "released"]
    assert events[1]["claim_token"] != job.claim.token
    assert events[1]["detail"]["why"] == "trip retried"


@pytest.mark.scenario(
    "storage", "A write retried after its reply was lost answers as the first try"
)
@pytest.mark.parametrize("write", ["commit", "fail", "stop", "release"])
async def test_a_refused_write_whose_reply_was_lost(
    db: Database, owner_id: int, write: str
) -> None:
    """A stale claim's write, refused, its refusal's reply lost: still refused, and its
    `lease_lost` journaled once."""
    rid, losing, queue, job = await setup(db, owner_id)
    assert await queue.release(job, "handed back")  # the token is gone from the record
    step = queue.steps[RECEIVED]
    losing.arm(write)
    if write == "commit":
        assert await queue.commit(job, step, None) is False
    elif write == "fail":
        assert await queue.fail(job, step, "late") == ("lease_lost", None)
    elif write == "stop":
        assert await queue.stop(job, "late", "too late") is False
    else:  # a second release after the first answered: the same answer, no new event
        assert await queue.release(job, "handed back") is True
    assert losing.lost == 1
    lost = [e for e in await journal(db, rid) if e["kind"] == "lease_lost"]
    assert len(lost) == (0 if write == "release" else 1)
