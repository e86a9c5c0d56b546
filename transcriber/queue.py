"""The durable queue on PostgreSQL: every queue column is written here, through the
named queries of sql/queries.sql, and every write is fenced by the claim's token."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import asyncpg
import attrs

from actors import Claim, FailOutcome, Job, Step, StepTable
from transcriber.db import Database

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
    _claim_args: tuple[list[Any], ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        steps = list(self.steps.steps.values())
        self._claim_args = ([s.milestone for s in steps], [s.lease.base_s for s in steps],
                            [s.lease.per_audio_s for s in steps])

    async def claim(self) -> Claim | None:
        row = await self.db.fetchrow("claim", *self._claim_args, self.now)
        return None if row is None else Claim(row["id"], row["claim_token"])

    async def read(self, claim: Claim) -> Job | None:
        row = await self.db.fetchrow("read_claimed", claim.id, claim.token, self.now)
        if row is None:
            return None
        inputs = {k: row[k] for k in ("source_path", "language", "audio_path", "duration_s")}
        return Job(claim=claim, milestone=row["milestone"], attempts=row["attempts"],
                   lease_remaining_s=row["lease_remaining_s"],
                   in_milestone_s=row["in_milestone_s"], inputs=inputs)

    async def commit(self, job: Job, step: Step, result: Saved | None) -> bool:
        c = job.claim
        args = (c.id, c.token, job.milestone, step.next_milestone,
                {"step": step.name, "attempt": job.attempts + 1}, self.now)
        commit_sql = self.db.sql("commit")
        if result is None:
            return await self.db.run(lambda con: con.fetchval(commit_sql, *args))
        save_sql = self.db.sql(result.query)

        async def commit_and_save(con: asyncpg.Connection) -> bool:
            async with con.transaction():
                if not await con.fetchval(commit_sql, *args):
                    return False  # the lease_lost event commits; the result is dropped
                await con.execute(save_sql, c.id, *result.args)
                return True

        return await self.db.run(commit_and_save)

    async def fail(self, job: Job, step: Step, error: str) -> tuple[FailOutcome, float | None]:
        pause = step.backoff.delay(job.attempts, self.rng)
        row = await self.db.fetchrow("fail", job.claim.id, job.claim.token, step.max_attempts,
                                     pause, error, job.milestone, self.now)
        assert row is not None
        return row["outcome"], pause if row["outcome"] == "retry" else None

    async def stop(self, job: Job, reason: str, error: str) -> bool:
        return await self.db.fetchval("stop", job.claim.id, job.claim.token, reason, error,
                                      job.milestone, self.now)

    async def progress(self, job: Job, fraction: float) -> bool:
        return await self.db.fetchval("progress", job.claim.id, job.claim.token, fraction,
                                      job.milestone)

    async def release(self, job: Job, why: str) -> bool:
        return await self.db.fetchval("release", job.claim.id, job.claim.token, job.milestone,
                                      why)

    async def resume(self, recording_id: Any, *, by: str) -> Resumed:
        """A person returns a stopped record to work, from the milestone it reached.

        Raises NotStopped, changing nothing, if the record is unknown or not stopped.
        """
        row = await self.db.fetchrow("resume", recording_id, {"by": by}, self.now)
        if row is None:
            raise NotStopped(recording_id)
        return Resumed(row["id"], row["milestone"])
