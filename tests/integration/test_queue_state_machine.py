"""A stateful property test of the PostgreSQL queue: hypothesis drives claim, commit,
fail, stop, resume, renew, progress, release and the lease's expiry (a controlled clock:
every call passes its `now`) on a few records, against a small model of what each call
must do; after every step the database must agree with the model and the seed's
invariants must hold:

- one holder at a time: a record carries at most one token, the model's holder's;
- only the holder's writes land: every write answers and changes exactly as the model
  says, which refuses every token but the current one;
- a stopped record is never claimed;
- resume resets the named list (stop flag and error, claim and lease, attempts, retry
  pause, progress, the milestone's entry time);
- the milestone never goes back.

Hypothesis runs in a thread of its own; each call crosses to the trio loop of the test.
Bounded (EXAMPLES runs of at most STEPS steps) so it stays fast in the default run.
"""

from __future__ import annotations

import datetime as dt
import random
import uuid
from typing import Any

import attrs
import trio
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from actors import Job, Lease, StepTable
from tests.helpers.pg_pipeline import db_now, table
from transcriber.db.database import Database
from transcriber.milestones import MILESTONES, NORMALIZED, RECEIVED
from transcriber.pipeline import operator
from transcriber.pipeline.operator import NotStopped
from transcriber.pipeline.pg_queue import PgQueue

EXAMPLES = 20
STEPS = 30
RECORDS = 3
MAX_ATTEMPTS = 3
LEASE_S = {RECEIVED: 10, NORMALIZED: 20}
"""Each step its own lease, so a claim at the wrong step's lease shows."""

FIELDS = ("milestone", "claim_token", "lease_expires_at", "attempts", "retry_at", "stopped_at")


def steps() -> StepTable:
    base = table(max_attempts=MAX_ATTEMPTS)
    return StepTable(
        {m: attrs.evolve(s, lease=Lease(base_s=LEASE_S[m])) for m, s in base.steps.items()}
    )


@attrs.define
class Rec:
    id: uuid.UUID
    accepted: dt.datetime
    """The claim's order (with the id); `entered` moves on at each commit and resume."""
    entered: dt.datetime
    milestone: str = RECEIVED
    token: uuid.UUID | None = None
    lease: dt.datetime | None = None
    attempts: int = 0
    retry: dt.datetime | None = None
    stopped: dt.datetime | None = None

    def row(self) -> dict[str, Any]:
        return {
            "milestone": self.milestone,
            "claim_token": self.token,
            "lease_expires_at": self.lease,
            "attempts": self.attempts,
            "retry_at": self.retry,
            "stopped_at": self.stopped,
        }


class Steps:
    ran = 0


class QueueMachine(RuleBasedStateMachine):
    """The PostgreSQL queue against a model of a few records (see the module's notes)."""

    jobs = Bundle("jobs")
    db: Database
    owner_id: int
    t0: dt.datetime

    def __init__(self) -> None:
        super().__init__()
        self.t = 0
        self.steps = steps()
        self.queue = PgQueue(self.db, self.steps, rng=random.Random(0), patience_s=5)
        ids = sorted(uuid.uuid4() for _ in range(RECORDS))
        # Accepted (and entered) one second apart before the clock starts, in the reverse
        # of their keys' order: claimed in the order accepted, whatever their milestones.
        self.recs = {}
        for i, rid in enumerate(reversed(ids)):
            at = self.t0 - dt.timedelta(seconds=RECORDS - i)
            self.recs[rid] = Rec(rid, at, at)
        self.highest = dict.fromkeys(ids, 0)
        self._call(self._reset)

    # -- the bridge and the clock

    def _call(self, fn: Any, *args: Any) -> Any:
        return trio.from_thread.run(fn, *args)

    @property
    def now(self) -> dt.datetime:
        return self.t0 + dt.timedelta(seconds=self.t)

    def _q(self) -> PgQueue:
        return attrs.evolve(self.queue, now=self.now)

    async def _reset(self) -> None:
        async def work(con: Any) -> None:
            await con.execute("TRUNCATE journal, recordings CASCADE")
            await con.executemany(
                "INSERT INTO recordings (id, owner_id, filename, created_at, milestone_entered_at)"
                " VALUES ($1, $2, 'model.wav', $3, $3)",
                [(r.id, self.owner_id, r.entered) for r in self.recs.values()],
            )

        await self.db.run(work)

    def _held_by(self, job: Job) -> Rec | None:
        """The record if `job`'s token is the one on it now."""
        rec = self.recs[job.claim.id]  # type: ignore[index]
        return rec if rec.token == job.claim.token else None

    def _eligible(self) -> list[Rec]:
        return sorted(
            (
                r
                for r in self.recs.values()
                if r.stopped is None
                and r.milestone != MILESTONES[-1]
                and (r.lease is None or r.lease <= self.now)
                and (r.retry is None or r.retry <= self.now)
            ),
            key=lambda r: (r.accepted, r.id),
        )

    # -- rules

    @rule(target=jobs)
    def claim(self) -> Any:
        Steps.ran += 1
        expected = self._eligible()
        job = self._call(self._q().next_job)
        if not expected:
            assert job is None
            return None
        rec = expected[0]
        assert job is not None and job.claim.id == rec.id, (job, rec)
        assert rec.stopped is None  # a stopped record is never claimed
        rec.token, rec.attempts = job.claim.token, rec.attempts + 1
        rec.lease = self.now + dt.timedelta(seconds=LEASE_S[rec.milestone])
        assert (job.milestone, job.attempt) == (rec.milestone, rec.attempts)
        return job

    @rule(job=consumes(jobs))
    def commit(self, job: Job | None) -> None:
        Steps.ran += 1
        if job is None:
            return
        rec = self._held_by(job)
        ok = self._call(self._q().commit, job, self.steps[job.milestone], None)
        assert ok is (rec is not None and rec.milestone == job.milestone)
        if rec is not None and ok:
            # The step's own next milestone: recognition without a diarize step reaches
            # `transcribed` itself, past `recognized`.
            rec.milestone = self.steps[rec.milestone].next_milestone
            rec.token = rec.lease = rec.retry = None
            rec.attempts, rec.entered = 0, self.now

    @rule(job=consumes(jobs))
    def fail(self, job: Job | None) -> None:
        Steps.ran += 1
        if job is None:
            return
        rec = self._held_by(job)
        outcome, pause = self._call(self._q().fail, job, self.steps[job.milestone], "boom")
        if rec is None or rec.stopped is not None:
            assert outcome == "lease_lost"
            return
        if rec.attempts >= MAX_ATTEMPTS:
            assert outcome == "stopped"
            rec.stopped, rec.retry = self.now, None
        else:
            assert outcome == "retry" and pause is not None
            rec.token = rec.lease = None
            rec.retry = self.now + dt.timedelta(seconds=pause)

    @rule(job=consumes(jobs))
    def stop(self, job: Job | None) -> None:
        Steps.ran += 1
        if job is None:
            return
        rec = self._held_by(job)
        ok = self._call(self._q().stop, job, "model_stop", f"stopped at {self.t}")
        assert ok is (rec is not None and rec.stopped is None)
        if ok and rec is not None:
            rec.stopped = self.now

    @rule(job=consumes(jobs))
    def release(self, job: Job | None) -> None:
        Steps.ran += 1
        if job is None:
            return
        rec = self._held_by(job)
        ok = self._call(self._q().release, job, "model release")
        assert ok is (rec is not None and rec.stopped is None)
        if ok and rec is not None:
            rec.token = rec.lease = None
            rec.attempts = max(rec.attempts - 1, 0)

    @rule(job=jobs)
    def renew(self, job: Job | None) -> None:
        Steps.ran += 1
        if job is None:
            return
        rec = self._held_by(job)
        ok = self._call(self._q().renew, job, self.steps[job.milestone])
        assert ok is (rec is not None and rec.stopped is None)
        if ok and rec is not None:
            rec.lease = self.now + dt.timedelta(seconds=LEASE_S[job.milestone])

    @rule(job=jobs, fraction=st.sampled_from([0.0, 0.5, 1.0]))
    def progress(self, job: Job | None, fraction: float) -> None:
        Steps.ran += 1
        if job is None:
            return
        ok = self._call(self._q().progress, job, fraction)
        assert ok is (self._held_by(job) is not None)

    @rule(i=st.integers(0, RECORDS - 1))
    def resume(self, i: int) -> None:
        Steps.ran += 1
        rec = sorted(self.recs.values(), key=lambda r: r.id)[i]

        async def call() -> Any:
            try:
                return await operator.resume(
                    self.db, rec.id, by="model", now=self.now, patience_s=5
                )
            except NotStopped as e:
                return e

        got = self._call(call)
        if rec.stopped is None:
            assert isinstance(got, NotStopped)
            return
        assert not isinstance(got, NotStopped) and got.milestone == rec.milestone
        rec.stopped = rec.token = rec.lease = rec.retry = None
        rec.attempts, rec.entered = 0, self.now
        row = self._call(self.db.fetchrow, "recording", rec.id)
        # Resume resets the named list, the stop's error text and progress included.
        assert (row["stop_reason"], row["stop_error"], row["progress"]) == (None, None, None)
        assert row["milestone_entered_at"] == self.now

    @rule(seconds=st.sampled_from([1, 5, 11, 21]))
    def advance(self, seconds: int) -> None:
        """The clock moves on: past 11 s a received claim's lease ends, past 21 s any."""
        Steps.ran += 1
        self.t += seconds

    # -- after every step

    @invariant()
    def database_agrees_with_the_model(self) -> None:
        rows = self._call(
            self.db.run, lambda con: con.fetch(f"SELECT id, {', '.join(FIELDS)} FROM recordings")
        )
        for row in rows:
            rec = self.recs[row["id"]]
            # One holder at a time, and only the holder's writes landed.
            assert {k: row[k] for k in FIELDS} == rec.row(), (row["id"], rec)
            level = MILESTONES.index(row["milestone"])
            assert level >= self.highest[rec.id]  # the milestone never goes back
            self.highest[rec.id] = level
        assert len(rows) == RECORDS


async def test_the_queue_keeps_its_invariants_under_any_sequence(
    db: Database, owner_id: int
) -> None:
    class Machine(QueueMachine):
        pass

    Machine.db, Machine.owner_id, Machine.t0 = db, owner_id, await db_now(db)
    Steps.ran = 0
    config = settings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    await trio.to_thread.run_sync(lambda: run_state_machine_as_test(Machine, settings=config))
    print(f"stateful queue test: {Steps.ran} steps in {EXAMPLES} runs")
    assert Steps.ran >= EXAMPLES * 5  # it really drove the queue
