"""An in-memory queue for tests of the runtime, with the semantics of the SQL queue.

It follows the named queries `claim`, `read_claimed`, `commit`, `fail`, `stop`,
`progress`, `renew`, `release` and `resume` of the product's SQL queue, write for write,
so a test on it proves something about the runtime against the real queue too. Time is
`trio.current_time()`, so it runs under trio's virtual clock (`autojump_clock`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

import attrs
import trio

from actors.jobs import Claim, Job
from actors.queue import FailOutcome
from actors.steps import Step, StepTable


@attrs.frozen
class Event:
    """One journal event: enough for a history check (each milestone reached once,
    every refused write recorded)."""

    recording_id: Hashable
    kind: str
    milestone: str
    token: Hashable | None = None
    origin: str = "pipeline"
    at: float = 0.0
    detail: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.define
class Record:
    """The queue columns of one record, plus the step inputs and results."""

    id: Hashable
    milestone: str
    milestone_entered_at: float
    accepted_at: float
    """When the record was added: the claim's order (with the id), as in the SQL queue."""
    inputs: dict[str, Any] = attrs.field(factory=dict)
    """What `read` hands the step; `duration_s` here grows the lease like the SQL claim."""
    claim_token: Hashable | None = None
    lease_expires_at: float | None = None
    attempts: int = 0
    retry_at: float | None = None
    stopped_at: float | None = None
    stop_reason: str | None = None
    stop_error: str | None = None
    progress: float | None = None
    results: dict[str, Any] = attrs.field(factory=dict)
    """Step name → the result its commit stored."""

    @property
    def stopped(self) -> bool:
        return self.stopped_at is not None


@attrs.define(eq=False)
class MemoryQueue:
    """Implements `actors.queue.Queue`. Every method checkpoints before it looks at the
    records, so it is a cancellation point like a query, and a cancel changes nothing."""

    steps: StepTable
    rng: random.Random = attrs.field(factory=random.Random)
    records: dict[Hashable, Record] = attrs.field(factory=dict)
    journal: list[Event] = attrs.field(factory=list)
    claims: int = 0
    """Claim calls, empty ones included: a test bounds it to prove there is no busy loop."""
    renewals: int = 0
    """Lease renewals that found their token (the SQL queue journals none of them)."""
    _ids: Iterator[int] = attrs.field(factory=lambda: itertools.count(1), init=False)
    _tokens: Iterator[int] = attrs.field(factory=lambda: itertools.count(1), init=False)

    def add(
        self,
        id: Hashable | None = None,
        milestone: str = "received",
        *,
        inputs: Mapping[str, Any] | None = None,
    ) -> Hashable:
        """A new record at `milestone`, entered now, journaled as `accepted`."""
        if id is None:
            id = next(self._ids)
        if id in self.records:
            raise KeyError(f"record {id!r} exists")
        now = trio.current_time()
        self.records[id] = Record(id, milestone, now, now, inputs=dict(inputs or {}))
        self._note(id, "accepted", milestone, None)
        return id

    def events(self, kind: str, id: Hashable | None = None) -> list[Event]:
        return [e for e in self.journal if e.kind == kind and (id is None or e.recording_id == id)]

    async def claim(self, *, exclude: Hashable | None = None) -> Claim | None:
        await trio.lowlevel.checkpoint()
        self.claims += 1
        now = trio.current_time()
        eligible = [r for r in self.records.values() if self._eligible(r, now) and r.id != exclude]
        if not eligible:
            return None
        rec = min(eligible, key=lambda r: (r.accepted_at, r.id))
        lease = self.steps[rec.milestone].lease
        rec.claim_token = next(self._tokens)
        rec.lease_expires_at = now + lease.seconds(rec.inputs.get("duration_s"))
        rec.attempts += 1  # counted when claimed, whatever becomes of the holder
        rec.progress = None
        return Claim(rec.id, rec.claim_token)

    async def read(self, claim: Claim) -> Job | None:
        await trio.lowlevel.checkpoint()
        rec = self.records.get(claim.id)
        if rec is None or rec.claim_token != claim.token:
            return None
        assert rec.lease_expires_at is not None  # a token always comes with a lease
        now = trio.current_time()
        return Job(
            claim=claim,
            milestone=rec.milestone,
            attempt=rec.attempts,
            lease_remaining_s=rec.lease_expires_at - now,
            in_milestone_s=now - rec.milestone_entered_at,
            inputs=dict(rec.inputs),
        )

    async def commit(self, job: Job, step: Step, result: Any) -> bool:
        await trio.lowlevel.checkpoint()
        rec = self._held(job)
        if rec is None:
            self._note(job.claim.id, "lease_lost", job.milestone, job.claim.token, write="commit")
            return False
        rec.results[step.name] = result
        rec.milestone = step.next_milestone
        rec.milestone_entered_at = trio.current_time()
        rec.claim_token = rec.lease_expires_at = rec.retry_at = rec.progress = None
        rec.attempts = 0
        self._note(
            rec.id,
            "milestone_reached",
            step.next_milestone,
            job.claim.token,
            step=step.name,
            attempt=job.attempt,
            renewals=job.renewals,
        )
        return True

    async def next_job(self, *, exclude: Hashable | None = None) -> Job | None:
        while (claim := await self.claim(exclude=exclude)) is not None:
            job = await self.read(claim)
            if job is not None:
                return job
        return None

    async def commit_then_next(self, job: Job, step: Step, result: Any) -> tuple[bool, Job | None]:
        # As the SQL queue's trip: its statement cannot write a record twice, so it claims
        # among the others, and only a second claim, when none was eligible, finds the
        # record just committed.
        committed = await self.commit(job, step, result)
        nxt = await self.next_job(exclude=job.claim.id) or await self.next_job()
        return committed, nxt

    async def fail(self, job: Job, step: Step, error: str) -> tuple[FailOutcome, float | None]:
        await trio.lowlevel.checkpoint()
        rec = self._held(job)
        if rec is None:
            self._note(
                job.claim.id,
                "lease_lost",
                job.milestone,
                job.claim.token,
                write="fail",
                error=error,
            )
            return "lease_lost", None
        now = trio.current_time()
        pause = step.backoff.delay(rec.attempts - 1, self.rng)
        rec.progress = None
        if rec.attempts >= step.max_attempts:
            # Like the SQL: the token and lease stay on a stopped record until resume.
            rec.retry_at = None
            rec.stopped_at, rec.stop_reason, rec.stop_error = now, "attempts_exhausted", error
            self._note(
                rec.id,
                "attempt_failed",
                job.milestone,
                job.claim.token,
                attempt=rec.attempts,
                error=error,
                retry_at=None,
            )
            self._note(
                rec.id,
                "stopped",
                job.milestone,
                job.claim.token,
                reason="attempts_exhausted",
                error=error,
            )
            return "stopped", None
        rec.claim_token = rec.lease_expires_at = None
        rec.retry_at = now + pause
        self._note(
            rec.id,
            "attempt_failed",
            job.milestone,
            job.claim.token,
            attempt=rec.attempts,
            error=error,
            retry_at=rec.retry_at,
        )
        return "retry", pause

    async def stop(self, job: Job, reason: str, error: str) -> bool:
        await trio.lowlevel.checkpoint()
        rec = self._held(job)
        if rec is None or rec.stopped:
            self._note(
                job.claim.id,
                "lease_lost",
                job.milestone,
                job.claim.token,
                write="stop",
                reason=reason,
            )
            return False
        rec.stopped_at, rec.stop_reason, rec.stop_error = trio.current_time(), reason, error
        rec.progress = None
        self._note(rec.id, "stopped", job.milestone, job.claim.token, reason=reason, error=error)
        return True

    async def progress(self, job: Job, fraction: float) -> bool:
        await trio.lowlevel.checkpoint()
        rec = self._held(job)
        if rec is None:
            self._note(job.claim.id, "lease_lost", job.milestone, job.claim.token, write="progress")
            return False
        rec.progress = fraction
        return True

    async def renew(self, job: Job, step: Step) -> bool:
        await trio.lowlevel.checkpoint()
        rec = self._held(job)
        if rec is None or rec.stopped:
            self._note(job.claim.id, "lease_lost", job.milestone, job.claim.token, write="renew")
            return False
        rec.lease_expires_at = trio.current_time() + step.lease.seconds(
            rec.inputs.get("duration_s")
        )
        self.renewals += 1
        return True

    async def release(self, job: Job, why: str) -> bool:
        await trio.lowlevel.checkpoint()
        rec = self._held(job)
        if rec is None or rec.stopped:
            self._note(
                job.claim.id, "lease_lost", job.milestone, job.claim.token, write="release", why=why
            )
            return False
        rec.claim_token = rec.lease_expires_at = rec.progress = None
        rec.attempts = max(rec.attempts - 1, 0)  # not an attempt: its claim's is given back
        self._note(rec.id, "released", job.milestone, job.claim.token, why=why)
        return True

    async def resume(self, id: Hashable, *, by: str = "test") -> bool:
        """A person returns a stopped record to work; False (nothing changed) if it is
        unknown or not stopped."""
        await trio.lowlevel.checkpoint()
        rec = self.records.get(id)
        if rec is None or not rec.stopped:
            return False
        rec.stopped_at = rec.stop_reason = rec.stop_error = None
        rec.claim_token = rec.lease_expires_at = rec.retry_at = rec.progress = None
        rec.attempts = 0
        rec.milestone_entered_at = trio.current_time()
        self._note(rec.id, "resumed", rec.milestone, None, origin="human", by=by)
        return True

    def _eligible(self, rec: Record, now: float) -> bool:
        return (
            self.steps.get(rec.milestone) is not None
            and not rec.stopped
            and (rec.lease_expires_at is None or rec.lease_expires_at <= now)
            and (rec.retry_at is None or rec.retry_at <= now)
        )

    def _held(self, job: Job) -> Record | None:
        """The record if this job's claim token is still on it: the fence of every write."""
        rec = self.records.get(job.claim.id)
        return rec if rec is not None and rec.claim_token == job.claim.token else None

    def _note(
        self,
        id: Hashable,
        kind: str,
        milestone: str,
        token: Hashable | None,
        *,
        origin: str = "pipeline",
        **detail: Any,
    ) -> None:
        self.journal.append(Event(id, kind, milestone, token, origin, trio.current_time(), detail))
