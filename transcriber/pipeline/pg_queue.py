"""The durable queue on PostgreSQL: every queue column is written here, through the
named queries of sql/queue.sql, and every write is fenced by the claim's token.

Commits and claims travel on shared trips (shared_trips.py: who leads a trip, who waits,
what a cut one releases); their statements are sent from here, as are the single writes
(fail, stop, progress, renew, release), one statement each."""

from __future__ import annotations

import datetime as dt
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, TypeVar

import asyncpg
import attrs
import trio

from actors import (
    RELEASE_TIMEOUT_S,
    Claim,
    FailOutcome,
    Job,
    ResultRefused,
    Step,
    StepTable,
    describe,
)
from actors.log import event
from transcriber.db.database import (
    CONNECTION_LOST,
    Pinned,
    connection_lost,
    retry_while_unreachable,
)
from transcriber.pipeline.shared_trips import Ask, SharedTrips, Trip

T = TypeVar("T")

Now = dt.datetime | None
"""None: the database's now(). Tests pass a time to control the clock."""


@attrs.frozen
class Saved:
    """A step's result: the named query that stores it, and its arguments after the id.
    It runs in the commit's transaction, only once the fenced commit succeeded."""

    query: str
    args: tuple[Any, ...] = ()
    next_milestone: str | None = None
    """A milestone past the step's own next one, for a record that needs none of the steps
    between (its speakers off: no diarization); None: the step's."""
    on_refused: Callable[[], Awaitable[None]] | None = attrs.field(default=None, eq=False)
    """What undoes the result when its commit is refused (the claim was lost, or the
    record deleted meanwhile): the normalize step's published audio, which no record
    will ever name. Awaited shielded, once the refusal is certain; a commit whose
    outcome is unknown (the database unreachable) leaves it to the startup sweep."""


_INPUTS = (
    "source_path",
    "language",
    "audio_path",
    "duration_s",
    "options",
    "owner_audio_s",
    "owner_id",
)
"""The columns a step may read as its inputs."""


@attrs.define(eq=False)
class PgQueue(SharedTrips):
    """The queue: its shared trips' statements (commit, claim, read, in one round trip)
    and its single writes. `trips_at_once` and `full_trip` (keywords) shape the trips."""

    steps: StepTable
    rng: random.Random = attrs.field(factory=random.Random)
    now: Now = None
    """A fixed time for every query (tests); None: the database's clock."""
    patience_s: float = 120.0
    """How long a queue call keeps retrying while the database is unreachable."""
    announce: Callable[[], None] = lambda: None
    """Called after each trip that made commits, for the journal's notification of them
    (a pipeline's Announcer.news): the commit statement sends none itself."""
    _claim_args: tuple[list[Any], ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        steps = list(self.steps.steps.values())
        self._claim_args = (
            [s.milestone for s in steps],
            [s.lease.base_s for s in steps],
            [s.lease.per_audio_s for s in steps],
        )

    async def _run(
        self, work: Callable[[asyncpg.Connection], Awaitable[T]], on: Pinned | None = None
    ) -> T:
        """db.run, retried with backoff while the server is away or busy (a restart, a
        network cut, no answer within the bound). A repeat is safe: every queue write is
        fenced by its token, and one whose first try committed but lost its reply finds
        its own journal event and answers as that first try did.

        Cancellation: like db.run; a pause between retries is a plain sleep.
        """
        # The first try without the retrying machinery, which costs more client CPU than
        # a short statement's round trip (tenacity, about 36 µs a call here): it is only
        # needed once a try has failed.
        started = time.monotonic()
        try:
            return await (on or self.db).run(work)
        except Exception as e:
            if not connection_lost(e):
                raise
        patience_s = max(0.0, self.patience_s - (time.monotonic() - started))
        async for attempt in retry_while_unreachable(patience_s):
            with attempt:
                return await (on or self.db).run(work)
        raise AssertionError("unreachable")

    async def _fetchrow(self, name: str, *args: Any) -> Any:
        sql = self.db.sql(name)
        return await self._run(lambda con: con.fetchrow(sql, *args))

    async def _fetchval(self, name: str, *args: Any) -> Any:
        sql = self.db.sql(name)
        return await self._run(lambda con: con.fetchval(sql, *args))

    async def claim(self) -> Claim | None:
        trip = Trip()

        async def once(con: asyncpg.Connection) -> list[Claim]:
            # A retry after a lost reply: what that statement claimed goes back first.
            await self._release_claims_on(con, trip.take(), "claim retried")
            claims = await self._claim_on(con, trip.tokens(1))
            trip.take()  # answered
            return claims

        claims = await self._run(once)
        return claims[0] if claims else None

    async def read(self, claim: Claim) -> Job | None:
        jobs = await self._run(lambda con: self._read_on(con, [claim]))
        return jobs[0] if jobs else None

    async def next_job(self) -> Job | None:
        """Claim, then read: two statements in one round trip (`claim_read`)."""
        return (await self._share(Ask(None, wants_job=True))).job

    async def commit(self, job: Job, step: Step, result: Saved | None) -> bool:
        ask = await self._share(Ask((job, step, result), wants_job=False))
        await self._undo_refused(ask, result)
        return bool(ask.committed)

    async def commit_then_next(
        self, job: Job, step: Step, result: Saved | None
    ) -> tuple[bool, Job | None]:
        """Commit, then claim and read the next record: a worker that just finished a
        step is about to ask for more anyway."""
        ask = await self._share(Ask((job, step, result), wants_job=True))
        await self._undo_refused(ask, result)
        return bool(ask.committed), ask.job

    async def _undo_refused(self, ask: Ask, result: Saved | None) -> None:
        """A refused commit's result undone (`Saved.on_refused`). Cancellation: shielded,
        at most RELEASE_TIMEOUT_S."""
        if ask.committed is False and result is not None and result.on_refused is not None:
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + RELEASE_TIMEOUT_S
                try:
                    await result.on_refused()
                except Exception as e:  # the store is away: the startup sweep removes it
                    event(
                        logging.WARNING,
                        "refused_result_kept",
                        id=ask.commit[0].claim.id if ask.commit else None,
                        error=str(e),
                    )

    # -- The shared trips' statements (shared_trips.py sends the asks on them) ---------

    async def _send(self, asks: list[Ask], trip: Trip, pin: Pinned | None) -> None:
        await self._run(lambda con: self._trip_on(con, asks, trip), pin)

    async def _release_shielded(self, tokens: Sequence[Hashable], why: str) -> None:
        """Release what claims with `tokens` took; shielded, at most RELEASE_TIMEOUT_S.
        A release that fails too is logged: the lease ends those claims in time."""
        if not tokens:
            return
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + RELEASE_TIMEOUT_S
            try:
                await self._run(lambda con: self._release_claims_on(con, tokens, why))
            except Exception as e:
                event(logging.WARNING, "release_failed", why=why, n=len(tokens), error=describe(e))

    async def _release_claims_on(
        self, con: asyncpg.Connection, tokens: Sequence[Hashable], why: str
    ) -> None:
        """Release what claims with these tokens may have taken (nothing, if none)."""
        if tokens:
            await con.fetchrow(self.db.sql("release_claims"), tokens, why)

    async def _trip_on(self, con: asyncpg.Connection, asks: list[Ask], trip: Trip) -> None:
        """One trip: the commits, with the claims for the asks that want a record and
        the read of what they claimed, in one statement. Claims again for what that left short
        (the commit's statement does not claim the records it moves on). Run again, for
        what it has not answered yet, if the connection is lost on the way: first
        releasing what the lost run may have claimed (its reply never came, so nobody
        knows those records but by their tokens)."""
        await self._release_claims_on(con, trip.take(), "trip retried")
        commits = [a for a in asks if a.commit is not None and a.committed is None]
        wanting = [a for a in asks if a.wants_job and not a.job_answered and not a.gone]
        jobs: list[Job] = []
        if commits:
            outcome, jobs = await self._commit_on(con, commits, trip.tokens(len(wanting)))
            self.announce()
            for a, result in outcome.items():
                if isinstance(result, Exception):
                    a.error = result
                else:
                    a.committed = result
            wanting = [a for a in wanting if a.error is None]
        if len(jobs) < len(wanting):
            jobs += await self._next_jobs_on(con, len(wanting) - len(jobs), trip)
        trip.take()  # every claim is handed to an ask now (one gone: see SharedTrips._lead)
        for i, a in enumerate(wanting):
            a.job, a.job_answered = (jobs[i] if i < len(jobs) else None), True

    async def _commit_on(
        self, con: asyncpg.Connection, asks: list[Ask], tokens: list[uuid.UUID]
    ) -> tuple[dict[Ask, bool | Exception], list[Job]]:
        """Commit in one statement that also claims a record per token; with the
        results' saves, in one transaction. A result the database refuses (say text it
        cannot store) must not cost the other commits theirs: then each commit goes
        alone, claiming nothing, and its caller gets ResultRefused with the database's
        message."""
        if not any(a.commit and a.commit[2] is not None for a in asks):
            return await self._commit_together_on(con, asks, tokens)
        try:
            async with con.transaction():
                return await self._commit_together_on(con, asks, tokens)
        except asyncpg.PostgresError as e:
            if isinstance(e, CONNECTION_LOST):
                raise
            if len(asks) == 1:
                return {asks[0]: ResultRefused(describe(e))}, []
            outcome: dict[Ask, bool | Exception] = {}
            for a in asks:
                outcome |= (await self._commit_on(con, [a], []))[0]
            return outcome, []

    async def _commit_together_on(
        self, con: asyncpg.Connection, asks: list[Ask], tokens: list[uuid.UUID]
    ) -> tuple[dict[Ask, bool | Exception], list[Job]]:
        commits = [a.commit for a in asks if a.commit is not None]
        rows = await con.fetch(
            self.db.sql("commit"),
            [j.claim.id for j, _, _ in commits],
            [j.claim.token for j, _, _ in commits],
            [j.milestone for j, _, _ in commits],
            [
                r.next_milestone if r is not None and r.next_milestone else s.next_milestone
                for _, s, r in commits
            ],
            [s.name for _, s, _ in commits],
            [j.attempt for j, _, _ in commits],
            [j.renewals for j, _, _ in commits],
            self.now,
            *self._claim_args,
            tokens,
        )
        # A commit found done by an earlier run of itself (`again`) stored its results
        # then: they are not saved twice.
        reached = {
            (r["id"], r["token"])
            for r in rows
            if r["row"] == "commit" and r["ok"] and not r["again"]
        }
        answered = {(r["id"], r["token"]) for r in rows if r["row"] == "commit" and r["ok"]}
        saved = await self._save_on(con, [(j, r) for j, _, r in commits if r is not None], reached)
        outcome: dict[Ask, bool | Exception] = {
            a: (a.commit[0].claim.id, a.commit[0].claim.token) in answered
            for a in asks
            if a.commit is not None
        }
        jobs = self._jobs([r for r in rows if r["row"] == "claim"], token="token")
        stale = [j for j in jobs if j.inputs["owner_audio_s"] is not None]
        if saved and stale:
            # The claims read their owners' audio before the saves that followed added
            # to it (a normalized result of the same owner): read those claims again,
            # after the saves, as the quota needs. The claims' own records the saves
            # never touch: the statement does not claim the records it commits.
            again = {j.claim: j for j in await self._read_on(con, [j.claim for j in stale])}
            jobs = [again.get(j.claim, j) if j in stale else j for j in jobs]
            jobs = [j for j in jobs if j.inputs["owner_audio_s"] is None or j.claim in again]
        return outcome, jobs

    async def _save_on(
        self,
        con: asyncpg.Connection,
        saves: list[tuple[Job, Saved]],
        reached: set[tuple[Hashable, Hashable]],
    ) -> bool:
        """The results of the commits that reached their milestone, in the commit's
        transaction; the results of claims that lost their token are dropped. True when
        anything was saved."""
        if not saves:
            return False
        by_query: dict[str, list[tuple[Any, ...]]] = {}
        # In the order of the records' owners: a normalized result adds to its owner's
        # audio total (a trigger, sql/0014), locking the owner's row to the end of the
        # transaction; every trip taking those locks in one order, none waits on another
        # in a cycle.
        for job, saved in sorted(saves, key=lambda s: s[0].inputs.get("owner_id") or 0):
            if (job.claim.id, job.claim.token) in reached:
                by_query.setdefault(saved.query, []).append((job.claim.id, *saved.args))
        for query, rows in by_query.items():
            await con.executemany(self.db.sql(query), rows)
        return bool(by_query)

    async def _claim_on(self, con: asyncpg.Connection, tokens: list[uuid.UUID]) -> list[Claim]:
        rows = await con.fetch(self.db.sql("claim"), *self._claim_args, self.now, tokens)
        return [Claim(row["id"], row["claim_token"]) for row in rows]

    async def _claim_read_on(self, con: asyncpg.Connection, tokens: list[uuid.UUID]) -> list[Job]:
        """Claimed, then read: two statements in one round trip."""
        return self._jobs(
            await con.fetch(self.db.sql("claim_read"), *self._claim_args, self.now, tokens)
        )

    async def _read_on(self, con: asyncpg.Connection, claims: list[Claim]) -> list[Job]:
        return self._jobs(
            await con.fetch(
                self.db.sql("read_claimed"),
                [c.id for c in claims],
                [c.token for c in claims],
                self.now,
            ),
        )

    @staticmethod
    def _jobs(rows: list[asyncpg.Record], token: str = "claim_token") -> list[Job]:
        """The jobs of the read's rows, oldest first: sorted here as the claim picked
        them, since a statement that unites them with other rows keeps no order."""
        rows = sorted(rows, key=lambda r: (r["milestone_entered_at"], r["id"]))
        return [
            Job(
                claim=Claim(row["id"], row[token]),
                milestone=row["milestone"],
                attempt=row["attempts"],
                lease_remaining_s=row["lease_remaining_s"],
                in_milestone_s=row["in_milestone_s"],
                inputs={k: row[k] for k in _INPUTS},
            )
            for row in rows
        ]

    async def _next_jobs_on(self, con: asyncpg.Connection, n: int, trip: Trip) -> list[Job]:
        """Up to `n` claimed and read records, oldest first (one round trip)."""
        return await self._claim_read_on(con, trip.tokens(n))

    # -- Single writes: one statement each, fenced by the claim's token ----------------

    async def fail(self, job: Job, step: Step, error: str) -> tuple[FailOutcome, float | None]:
        pause = step.backoff.delay(job.attempt - 1, self.rng)
        row = await self._fetchrow(
            "fail",
            job.claim.id,
            job.claim.token,
            step.max_attempts,
            pause,
            error,
            job.milestone,
            self.now,
        )
        assert row is not None
        return row["outcome"], row["pause_s"] if row["outcome"] == "retry" else None

    # The fenced writes answer whether the claim still held: an EXISTS, never NULL.

    async def stop(self, job: Job, reason: str, error: str) -> bool:
        return bool(
            await self._fetchval(
                "stop", job.claim.id, job.claim.token, reason, error, job.milestone, self.now
            )
        )

    async def progress(self, job: Job, fraction: float) -> bool:
        return bool(
            await self._fetchval("progress", job.claim.id, job.claim.token, fraction, job.milestone)
        )

    async def renew(self, job: Job, step: Step) -> bool:
        return bool(
            await self._fetchval(
                "renew",
                job.claim.id,
                job.claim.token,
                step.lease.seconds(job.inputs.get("duration_s")),
                job.milestone,
                self.now,
            )
        )

    async def release(self, job: Job, why: str) -> bool:
        return bool(
            await self._fetchval("release", job.claim.id, job.claim.token, job.milestone, why)
        )
