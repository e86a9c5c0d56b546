"""The durable queue on PostgreSQL: every queue column is written here, through the
named queries of sql/queue.sql, and every write is fenced by the claim's token."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
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
    Database,
    Pinned,
    connection_lost,
    retry_while_unreachable,
)

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
class _Ask:
    """One caller's part of a shared trip: a commit to write, a record wanted, or both;
    and, once the trip is back, the answers."""

    commit: tuple[Job, Step, Saved | None] | None
    wants_job: bool
    wake: trio.Event = attrs.field(factory=trio.Event)
    answered: bool = False
    resend: bool = False
    """The trip was cut (its leader was cancelled): send what is unanswered again."""
    committed: bool | None = None
    job_answered: bool = False
    job: Job | None = None
    error: BaseException | None = None
    gone: bool = False
    """Its caller stopped waiting (cancelled, and the trip outlasted its patience): a
    record the trip claims for it is released at once."""


@attrs.define(eq=False)
class _Trip:
    """Tokens a trip's claim statements were sent with and not yet handed to an ask:
    what a cut trip may have claimed for nobody, released by token."""

    offered: list[uuid.UUID] = attrs.field(factory=list)

    def tokens(self, n: int) -> list[uuid.UUID]:
        """Fresh claim tokens, one per record wanted: made here so that a caller whose
        reply was lost still knows what its statement may have claimed."""
        fresh = [uuid.uuid4() for _ in range(n)]
        self.offered += fresh
        return fresh

    def take(self) -> list[uuid.UUID]:
        """The tokens offered and not handed on, forgotten here: the caller releases them."""
        taken, self.offered = self.offered, []
        return taken


@attrs.define(eq=False)
class PgQueue:
    db: Database
    steps: StepTable
    rng: random.Random = attrs.field(factory=random.Random)
    now: Now = None
    """A fixed time for every query (tests); None: the database's clock."""
    patience_s: float = 120.0
    """How long a queue call keeps retrying while the database is unreachable."""
    trips_at_once: int = 3
    """Trips out at the same time at most: enough for the database to work on one while
    the next is on the way and the answers of a third are handled, few enough that trips
    stay shared (a pipeline lowers it for few workers: runner.MIN_FULL_TRIP)."""
    announce: Callable[[], None] = lambda: None
    """Called after each trip that made commits, for the journal's notification of them
    (a pipeline's Announcer.news): the commit statement sends none itself."""
    full_trip: int = 1
    """How many asks make a trip worth sending beside one already out (a pipeline sets
    its workers' share of the trips out at once)."""
    trips: int = attrs.field(init=False, default=0)
    """Shared trips made (commits and claims of workers asking at once); for benchmarks."""
    trip_asks: int = attrs.field(init=False, default=0)
    """Asks those trips answered."""
    _claim_args: tuple[list[Any], ...] = attrs.field(init=False)
    _asks: list[_Ask] = attrs.field(init=False, factory=list)
    _trips_out: int = attrs.field(init=False, default=0)
    _pins: list[Pinned] = attrs.field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        steps = list(self.steps.steps.values())
        self._claim_args = (
            [s.milestone for s in steps],
            [s.lease.base_s for s in steps],
            [s.lease.per_audio_s for s in steps],
        )

    @contextlib.asynccontextmanager
    async def pinned(self) -> AsyncIterator[None]:
        """Inside this block the shared trips keep their connections (one per trip that
        may be out at once) instead of taking one from the pool each time. For a long
        run of work, such as a pipeline's.

        Cancellation: the connections go back to the pool on the way out, shielded.
        """
        async with contextlib.AsyncExitStack() as stack:
            self._pins = [
                await stack.enter_async_context(self.db.pinned()) for _ in range(self.trips_at_once)
            ]
            try:
                yield
            finally:
                self._pins = []

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
        trip = _Trip()

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
        return (await self._share(_Ask(None, wants_job=True))).job

    async def commit(self, job: Job, step: Step, result: Saved | None) -> bool:
        ask = await self._share(_Ask((job, step, result), wants_job=False))
        await self._undo_refused(ask, result)
        return bool(ask.committed)

    async def commit_then_next(
        self, job: Job, step: Step, result: Saved | None
    ) -> tuple[bool, Job | None]:
        """Commit, then claim and read the next record: a worker that just finished a
        step is about to ask for more anyway."""
        ask = await self._share(_Ask((job, step, result), wants_job=True))
        await self._undo_refused(ask, result)
        return bool(ask.committed), ask.job

    async def _undo_refused(self, ask: _Ask, result: Saved | None) -> None:
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

    # -- Shared trips -------------------------------------------------------------------
    # Workers of one process that commit or ask for work at the same moment share one
    # trip to the database: their commits go in one statement (each fenced by its own
    # token and journaled on its own), their claims in one claim statement (a fresh
    # token per record, one record per asking worker), their reads in one read. There
    # is no timer: an ask that finds no trip out leaves at once; asks made while a trip
    # is out leave together when it is back. An idle queue answers as fast as ever; a
    # busy one pays one round of statements for many workers instead of one each.

    async def _share(self, ask: _Ask) -> _Ask:
        """Send `ask` with the next trip (leading it if none is out) and wait for its
        answer; raises what the trip raised.

        Cancellation: an ask whose trip has not left is withdrawn. One whose trip is out
        waits for it, shielded, at most RELEASE_TIMEOUT_S, and a record claimed for it
        is released, so nothing stays claimed for a caller that is gone. A trip cut by
        its leader's cancellation sends its other asks again with the next trip, minus
        what it had already answered: every write is fenced, so a repeat is harmless.
        """
        while True:
            self._asks.append(ask)
            try:
                while not ask.answered:
                    if not self._may_leave():
                        await ask.wake.wait()
                        ask.wake = trio.Event()
                    else:
                        await self._lead()
            except trio.Cancelled:
                await self._abandon(ask)
                raise
            if not ask.resend:
                break
            ask.answered = ask.resend = False
        if ask.error is not None:
            raise ask.error
        return ask

    def _may_leave(self) -> bool:
        """Whether a trip may leave now with the asks waiting: at once when none is out;
        beside one that is out only with a full load (a trip that left half empty would
        cost the database a round of statements for few asks)."""
        return self._trips_out == 0 or (
            self._trips_out < self.trips_at_once and len(self._asks) >= self.full_trip
        )

    async def _lead(self) -> None:
        """Take every waiting ask on one trip, answer them all, pass the lead on.

        A trip that fails with anything but a cut connection (those `_run` retries): a
        statement the server cancelled or refused, after earlier ones of the same trip
        may have committed. What it claimed and handed to nobody is released at once,
        journaled; an ask keeps the parts the trip answered (a commit that succeeded is
        answered as such, with no record to go on with) and raises only for a part left
        unanswered.

        Cancellation: what the cut trip may have claimed is released at once (shielded,
        at most RELEASE_TIMEOUT_S); its asks are sent again with the next trip. A record
        the trip brought for an ask whose caller has gone meanwhile (its patience ran
        out while the trip was out, at any point of it) is released the same way.
        """
        self._trips_out += 1
        # One scheduling round before the trip takes its asks (not a timer: the tasks
        # already runnable run, then it leaves). The workers the last trip answered are
        # runnable together and ask again at once; without the round the first of them
        # would leave alone, the others on the next trip (two asks a trip on average for
        # four workers, in the drain). Shielded: no cancellation point is added here.
        await trio.lowlevel.cancel_shielded_checkpoint()
        asks, self._asks = self._asks, []
        pin = self._pins.pop() if self._pins else None
        trip = _Trip()
        try:
            await self._run(lambda con: self._trip_on(con, asks, trip), pin)
            self.trips += 1
            self.trip_asks += len(asks)
        except trio.Cancelled:
            for a in asks:
                a.resend = True
            await self._release_shielded(trip.take(), "trip cut")
            raise
        except Exception as e:
            await self._release_shielded(trip.take(), "trip failed")
            for a in asks:
                if a.error is None and self._unanswered(a):
                    a.error = e
                elif a.wants_job and not a.job_answered:
                    a.job_answered = True  # its commit was answered: no record this time
        finally:
            if pin is not None:
                self._pins.append(pin)
            self._trips_out -= 1
            for a in asks:
                a.answered = True  # from here on no ask of this trip turns `gone`
            left = [a.job for a in asks if a.gone and a.job is not None]
            for a in asks:
                if a.gone:
                    a.job = None
                a.wake.set()
            if self._asks:
                self._asks[0].wake.set()  # the next leader
            if left:
                await self._release_shielded([j.claim.token for j in left], "worker stopping")

    @staticmethod
    def _unanswered(ask: _Ask) -> bool:
        """Whether the failed trip answered nothing of `ask` that its caller needs: its
        commit (if it has one) is not known to have been written."""
        if ask.commit is not None:
            return ask.committed is None
        return ask.wants_job and not ask.job_answered

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

    async def _abandon(self, ask: _Ask) -> None:
        """The caller of `ask` was cancelled: nothing may stay claimed for it.

        Cancellation: runs shielded, at most RELEASE_TIMEOUT_S.
        """
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + RELEASE_TIMEOUT_S
            if ask in self._asks:  # its trip has not left: withdraw it
                self._asks.remove(ask)
                if self._asks and self._may_leave():
                    self._asks[0].wake.set()  # it may have been woken to lead
                if ask.commit is not None and ask.committed is None:
                    # Its commit never left: its record would stay claimed till the lease.
                    await self.release(ask.commit[0], "worker stopping")
                return
            try:
                while not ask.answered:
                    await ask.wake.wait()
                    ask.wake = trio.Event()
            finally:
                # Not answered in time (the trip retries while the server is away):
                # the trip releases what it claims for this ask itself.
                ask.gone = not ask.answered
            if ask.job is not None:
                await self.release(ask.job, "worker stopping")

    async def _release_claims_on(
        self, con: asyncpg.Connection, tokens: Sequence[Hashable], why: str
    ) -> None:
        """Release what claims with these tokens may have taken (nothing, if none)."""
        if tokens:
            await con.fetchrow(self.db.sql("release_claims"), tokens, why)

    async def _trip_on(self, con: asyncpg.Connection, asks: list[_Ask], trip: _Trip) -> None:
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
        trip.take()  # every claim is handed to an ask now (one gone: see _lead)
        for i, a in enumerate(wanting):
            a.job, a.job_answered = (jobs[i] if i < len(jobs) else None), True

    async def _commit_on(
        self, con: asyncpg.Connection, asks: list[_Ask], tokens: list[uuid.UUID]
    ) -> tuple[dict[_Ask, bool | Exception], list[Job]]:
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
            outcome: dict[_Ask, bool | Exception] = {}
            for a in asks:
                outcome |= (await self._commit_on(con, [a], []))[0]
            return outcome, []

    async def _commit_together_on(
        self, con: asyncpg.Connection, asks: list[_Ask], tokens: list[uuid.UUID]
    ) -> tuple[dict[_Ask, bool | Exception], list[Job]]:
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
        outcome: dict[_Ask, bool | Exception] = {
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

    async def _next_jobs_on(self, con: asyncpg.Connection, n: int, trip: _Trip) -> list[Job]:
        """Up to `n` claimed and read records, oldest first (one round trip)."""
        return await self._claim_read_on(con, trip.tokens(n))

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
