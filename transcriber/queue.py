"""The durable queue on PostgreSQL: every queue column is written here, through the
named queries of sql/queries.sql, and every write is fenced by the claim's token."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
import attrs

from actors import Claim, FailOutcome, Job, Step, StepTable
from transcriber.db import Database, retry_while_unreachable

T = TypeVar("T")

Now = dt.datetime | None
"""None: the database's now(). Tests pass a time to control the clock."""


@attrs.frozen
class Saved:
    """A step's result: the named query that stores it, and its arguments after the id.
    It runs in the commit's transaction, only once the fenced commit succeeded."""

    query: str
    args: tuple[Any, ...] = ()


@attrs.frozen
class Resumed:
    id: Any
    milestone: str


class NotStopped(Exception):
    """Resume of a record that is not stopped (or does not exist): nothing changed."""


@attrs.define(eq=False)
class PgQueue:
    db: Database
    steps: StepTable
    rng: random.Random = attrs.field(factory=random.Random)
    now: Now = None
    """A fixed time for every query (tests); None: the database's clock."""
    patience_s: float = 120.0
    """How long a queue call keeps retrying while the database is unreachable."""
    _claim_args: tuple[list[Any], ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        steps = list(self.steps.steps.values())
        self._claim_args = ([s.milestone for s in steps], [s.lease.base_s for s in steps],
                            [s.lease.per_audio_s for s in steps])

    async def _run(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """db.run, retried with backoff while the server is away (a restart, a network
        cut): every queue write is fenced by its token, so a repeat changes nothing.

        Cancellation: like db.run; a pause between retries is a plain sleep.
        """
        async for attempt in retry_while_unreachable(self.patience_s):
            with attempt:
                return await self.db.run(work)
        raise AssertionError("unreachable")

    async def _fetchrow(self, name: str, *args: Any) -> Any:
        sql = self.db.sql(name)
        return await self._run(lambda con: con.fetchrow(sql, *args))

    async def _fetchval(self, name: str, *args: Any) -> Any:
        sql = self.db.sql(name)
        return await self._run(lambda con: con.fetchval(sql, *args))

    async def claim(self) -> Claim | None:
        return await self._run(self._claim_on)

    async def read(self, claim: Claim) -> Job | None:
        return await self._run(lambda con: self._read_on(con, claim))

    async def next_job(self) -> Job | None:
        """Claim, then read, in one trip to the database's side of the bridge: still
        two statements, the claim returning only the id and the token."""
        return await self._run(self._next_job_on)

    async def commit(self, job: Job, step: Step, result: Saved | None) -> bool:
        return await self._run(lambda con: self._commit_on(con, job, step, result))

    async def commit_then_next(self, job: Job, step: Step, result: Saved | None
                               ) -> tuple[bool, Job | None]:
        """Commit, then claim and read the next record, in one trip: a worker that just
        finished a step is about to ask for more anyway."""

        async def both(con: asyncpg.Connection) -> tuple[bool, Job | None]:
            committed = await self._commit_on(con, job, step, result)
            return committed, await self._next_job_on(con)

        return await self._run(both)

    async def _claim_on(self, con: asyncpg.Connection) -> Claim | None:
        row = await con.fetchrow(self.db.sql("claim"), *self._claim_args, self.now)
        return None if row is None else Claim(row["id"], row["claim_token"])

    async def _read_on(self, con: asyncpg.Connection, claim: Claim) -> Job | None:
        row = await con.fetchrow(self.db.sql("read_claimed"), claim.id, claim.token, self.now)
        if row is None:
            return None
        inputs = {k: row[k] for k in ("source_path", "language", "audio_path", "duration_s")}
        return Job(claim=claim, milestone=row["milestone"], attempts=row["attempts"],
                   lease_remaining_s=row["lease_remaining_s"],
                   in_milestone_s=row["in_milestone_s"], inputs=inputs)

    async def _next_job_on(self, con: asyncpg.Connection) -> Job | None:
        while (claim := await self._claim_on(con)) is not None:
            job = await self._read_on(con, claim)
            if job is not None:
                return job
            # Lost between the claim and the read (resumed meanwhile): try the next.
        return None

    async def _commit_on(self, con: asyncpg.Connection, job: Job, step: Step,
                         result: Saved | None) -> bool:
        c = job.claim
        args = (c.id, c.token, job.milestone, step.next_milestone,
                {"step": step.name, "attempt": job.attempts + 1}, self.now)
        commit_sql = self.db.sql("commit")
        if result is None:
            return await con.fetchval(commit_sql, *args)
        async with con.transaction():
            if not await con.fetchval(commit_sql, *args):
                return False  # the lease_lost event commits; the result is dropped
            await con.execute(self.db.sql(result.query), c.id, *result.args)
            return True

    async def fail(self, job: Job, step: Step, error: str) -> tuple[FailOutcome, float | None]:
        pause = step.backoff.delay(job.attempts, self.rng)
        row = await self._fetchrow("fail", job.claim.id, job.claim.token, step.max_attempts,
                                     pause, error, job.milestone, self.now)
        assert row is not None
        return row["outcome"], pause if row["outcome"] == "retry" else None

    async def stop(self, job: Job, reason: str, error: str) -> bool:
        return await self._fetchval("stop", job.claim.id, job.claim.token, reason, error,
                                      job.milestone, self.now)

    async def progress(self, job: Job, fraction: float) -> bool:
        return await self._fetchval("progress", job.claim.id, job.claim.token, fraction,
                                      job.milestone)

    async def release(self, job: Job, why: str) -> bool:
        return await self._fetchval("release", job.claim.id, job.claim.token, job.milestone,
                                      why)

    async def resume(self, recording_id: Any, *, by: str) -> Resumed:
        """A person returns a stopped record to work, from the milestone it reached.

        Raises NotStopped, changing nothing, if the record is unknown or not stopped.
        """
        row = await self._fetchrow("resume", recording_id, {"by": by}, self.now)
        if row is None:
            raise NotStopped(recording_id)
        return Resumed(row["id"], row["milestone"])
