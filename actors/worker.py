"""A milestone-agnostic worker actor: claim, read, run the step against the lease
(renewed by a fenced heartbeat while the step lives) and its run limit, then a fenced
write (commit, fail or stop)."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator
from typing import Any

import attrs
import trio

from actors.jobs import Job
from actors.log import describe, event
from actors.metrics import FencedWrite, RuntimeMetrics
from actors.queue import Queue, ResultRefused
from actors.steps import Step, StepTable, StopRecord
from actors.wakeup import Wakeup

RELEASE_TIMEOUT_S = 5.0
"""How long a cancelled worker may still spend handing its record back (a shielded,
fenced release); a queue that hands back claims when cut bounds those by it too."""


@attrs.frozen
class _Outcome:
    """What the step came to inside the lease race; written after the race, not in it."""

    kind: str  # "done", "stop", "error", "lease_expired", "lease_lost", "run_limit"
    result: Any = None
    reason: str = ""
    error: str = ""
    renewals: int = 0


@attrs.define(eq=False)
class _Beat:
    """The step in flight, as the worker's heartbeat sees it."""

    job: Job
    step: Step
    lease_s: float
    scope: trio.CancelScope
    """The race's scope: its deadline is the lease's end (moved on by each renewal) or
    the run limit, whichever is first."""
    limit_at: float
    last: float
    """When the last sign of life left: the claim's read, or the last renewal."""
    lost: bool = False
    renewals: int = 0
    out: trio.Event | None = None
    """Set while a renewal is on its way; the race waits for it before its write."""
    renewing: trio.CancelScope | None = None
    """The renewal on its way, to cut when the step ends first."""

    def lose(self) -> None:
        """A fenced write found the token gone: stop the step at once."""
        self.lost = True
        self.scope.cancel()


def _one(group: BaseExceptionGroup) -> BaseException:
    """What a nursery of a body and a helper task raised, as the body alone would have:
    a cancel from outside reaches both tasks, and the helper raises nothing else."""
    cancelled, rest = group.split(trio.Cancelled)
    if rest is None and cancelled is not None:
        first: BaseException = cancelled
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        return first
    if (
        rest is not None
        and len(rest.exceptions) == 1
        and not isinstance(rest.exceptions[0], BaseExceptionGroup)
    ):
        return rest.exceptions[0]
    return group


@attrs.define(eq=False)
class Worker:
    name: str
    queue: Queue
    steps: StepTable
    wakeup: Wakeup
    metrics: RuntimeMetrics = attrs.field(factory=RuntimeMetrics)
    """The product's: the one its /metrics shows (each worker its own unless given)."""
    _beat: _Beat | None = attrs.field(init=False, default=None)
    _beating: bool = attrs.field(init=False, default=False)

    @property
    def current(self) -> Job | None:
        """The job of the step in flight, if any (what a daemon reports it holds)."""
        return None if self._beat is None else self._beat.job

    @contextlib.asynccontextmanager
    async def _heart(self) -> AsyncIterator[None]:
        """The worker's heartbeat runs for the block: one task for all its steps (a
        task per step would cost each transition ~0.1 ms of CPU).

        Cancellation: the heartbeat ends with the block; a cancel from outside
        propagates as one Cancelled, an error of the block as itself.
        """
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._heartbeats)
                self._beating = True
                try:
                    yield
                finally:
                    self._beating = False
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _one(group) from None

    async def _heartbeats(self) -> None:
        """Renew the lease of the step in flight: checked every half renewal interval,
        renewed once half of it passed without a sign of life (so at least every
        `renew_every_s`). Never raises: a renewal that cannot get through is simply no
        sign of life, and the race's lease deadline ends the step."""
        tick = min(s.lease.renew_every_s for s in self.steps.steps.values()) / 2
        while True:
            await trio.sleep(tick)
            beat = self._beat
            if (
                beat is None
                or beat.lost
                or trio.current_time() - beat.last < beat.step.lease.renew_every_s / 2
            ):
                continue
            beat.out, beat.renewing = trio.Event(), trio.CancelScope()
            sent = trio.current_time()
            renewed: bool | None = None
            with beat.renewing:
                try:
                    renewed = await self.queue.renew(beat.job, beat.step)
                except Exception as e:  # no renewal is no sign of life
                    event(
                        logging.WARNING,
                        "renew_failed",
                        worker=self.name,
                        id=beat.job.claim.id,
                        error=describe(e),
                    )
            beat.out.set()
            beat.out = None
            if renewed is False:
                beat.lose()
            elif renewed:
                beat.renewals += 1
                beat.last = sent
                # Measured from before the renewal left: the server's expiry is no
                # earlier than this, whatever the trip took.
                beat.scope.deadline = min(
                    max(beat.scope.deadline, sent + beat.lease_s), beat.limit_at
                )

    async def run(self) -> None:
        """Claim and work until the wake-up is closed (drain); returns then.

        Cancellation: a cancel inside a step abandons its result and releases the claim
        (a fenced write, shielded for at most RELEASE_TIMEOUT_S); between steps a cancel
        simply ends the loop.
        """
        async with self._heart():
            await self._loop()

    async def _loop(self) -> None:
        job: Job | None = None
        try:
            while not self.wakeup.closed:
                seen = self.wakeup.seq
                if job is None:
                    job = await self._next()
                    if job is None:
                        # "No work right now" is not a failure: wait for a hint or the poll.
                        await self.wakeup.wait(seen)
                        continue
                # work_on releases its own record if cancelled; `job` holds only one
                # claimed ahead by a commit and not started yet.
                current, job = job, None
                job = await self.work_on(current, then_next=True)
        finally:
            if job is not None:  # claimed with the last commit, just as the drain began
                with trio.CancelScope(shield=True) as release:
                    release.deadline = trio.current_time() + RELEASE_TIMEOUT_S
                    await self.queue.release(job, "worker stopping")

    async def work_once(self) -> bool:
        """Claim one record and take it through its step. False: there was no work."""
        job = await self._next()
        if job is None:
            return False
        async with self._heart():
            await self.work_on(job, then_next=False)
        return True

    async def _next(self) -> Job | None:
        job = await self.queue.next_job()
        if job is not None:
            self.metrics.claims.inc()
            self.wakeup.wake_one()  # there may be more: let an idle peer look too
        return job

    async def work_on(self, job: Job, *, then_next: bool) -> Job | None:
        """Take a claimed record through its step and write the outcome. With
        `then_next`, a successful commit also claims the next record, returned here."""
        step = self.steps.get(job.milestone)
        if step is None:  # the claim only picks milestones of this table
            raise LookupError(f"claimed {job.claim.id} at {job.milestone!r}, which has no step")
        event(
            logging.INFO,
            "claimed",
            worker=self.name,
            id=job.claim.id,
            milestone=job.milestone,
            step=step.name,
            attempt=job.attempt,
            lease_s=round(job.lease_remaining_s, 3),
        )
        if job.in_milestone_s > step.time_limit_s:
            error = (
                f"at {job.milestone} for {job.in_milestone_s:.0f}s, limit {step.time_limit_s:.0f}s"
            )
            await self._stop(job, "milestone_time_limit", error)
            return None
        if job.attempt > step.max_attempts:
            # Every attempt is counted when claimed; one that ended in a failure was
            # written by its worker, and the last of those stops the record. Claims
            # past the limit mean the last holders died, froze or were cut off before
            # any write: a recording that kills its worker must not be retried forever.
            error = (
                f"{step.name}: the last of {step.max_attempts} attempts ended without "
                f"a word from its worker (killed, frozen or cut off)"
            )
            await self._stop(job, "worker_lost", error)
            return None
        started = trio.current_time()
        try:
            outcome = await self._race(job, step)
        except trio.Cancelled:
            # Cancelled from outside (a drain past its grace, a shutdown): hand the
            # record back so another worker takes it now, not after the lease.
            with trio.CancelScope(shield=True) as release:
                release.deadline = trio.current_time() + RELEASE_TIMEOUT_S
                if await self.queue.release(job, "worker stopping"):
                    event(
                        logging.WARNING,
                        "released",
                        worker=self.name,
                        id=job.claim.id,
                        milestone=job.milestone,
                    )
            raise
        self.metrics.step_ended(step.name, outcome.kind, trio.current_time() - started)
        if outcome.renewals:
            job = attrs.evolve(job, renewals=outcome.renewals)
        if outcome.kind == "done":
            return await self._commit(
                job, step, outcome.result, then_next=then_next and not self.wakeup.closed
            )
        await self._write(job, step, outcome)
        return None

    async def _commit(self, job: Job, step: Step, result: Any, *, then_next: bool) -> Job | None:
        following = None
        try:
            if then_next:
                committed, following = await self.queue.commit_then_next(job, step, result)
                if following is not None:
                    self.metrics.claims.inc()
                    self.wakeup.wake_one()
            else:
                committed = await self.queue.commit(job, step, result)
        except ResultRefused as e:
            # The store cannot hold this result: a failed attempt like any other (it
            # may retry, and stops when attempts are exhausted), never a dead worker.
            event(
                logging.WARNING,
                "result_refused",
                worker=self.name,
                id=job.claim.id,
                step=step.name,
                error=str(e),
            )
            await self._write(job, step, _Outcome("error", error=str(e)))
            return None
        if committed:
            event(
                logging.INFO,
                "milestone_reached",
                worker=self.name,
                id=job.claim.id,
                milestone=step.next_milestone,
            )
        else:
            self._lost(job, "commit")
        return following

    async def _race(self, job: Job, step: Step) -> _Outcome:
        """Run the step until it ends, its lease runs out without a renewal, or its run
        limit passes, whichever is first. While it runs, the worker's heartbeat renews
        the lease; a renewal (or progress write) that finds the token gone cancels the
        step at once.

        Cancellation: from outside, the step is cancelled and Cancelled propagates (the
        caller releases the claim).
        """
        if not self._beating:
            raise RuntimeError("a step runs inside Worker.run or work_once (its heartbeat)")
        duration = job.inputs.get("duration_s")
        lease_s = step.lease.seconds(duration)
        started = trio.current_time()
        limit_at = started + (step.run_limit.seconds(duration) if step.run_limit else math.inf)
        outcome: _Outcome | None = None
        with trio.move_on_at(min(started + job.lease_remaining_s, limit_at)) as scope:
            beat = _Beat(job, step, lease_s, scope, limit_at, last=started)

            async def progress(fraction: float) -> None:
                if not await self.queue.progress(job, min(1.0, max(0.0, fraction))):
                    beat.lose()
                    await trio.lowlevel.checkpoint()  # the step stops here, at once

            self._beat = beat
            try:
                outcome = _Outcome("done", result=await step.run(job, progress))
            except StopRecord as s:
                outcome = _Outcome("stop", reason=s.reason, error=s.error)
            except Exception as e:
                event(
                    logging.WARNING,
                    "step_error",
                    worker=self.name,
                    id=job.claim.id,
                    step=step.name,
                    error=describe(e),
                )
                outcome = _Outcome("error", error=describe(e))
            finally:
                self._beat = None
        if beat.out is not None and beat.renewing is not None:
            # A renewal is on its way: cut it and let it land before this step's write,
            # so no renewal follows the commit (it would journal a lost lease).
            beat.renewing.cancel()
            await beat.out.wait()
        if outcome is not None:
            # Most steps end before their first renewal: no copy for them.
            return attrs.evolve(outcome, renewals=beat.renewals) if beat.renewals else outcome
        if beat.lost:
            return _Outcome("lease_lost", renewals=beat.renewals)
        if trio.current_time() >= limit_at:
            return _Outcome(
                "run_limit",
                renewals=beat.renewals,
                error=f"{step.name} ran past its run limit of {limit_at - started:.1f}s",
            )
        return _Outcome(
            "lease_expired",
            renewals=beat.renewals,
            error=f"lease of {lease_s:.1f}s ran out during {step.name} without a renewal",
        )

    async def _write(self, job: Job, step: Step, outcome: _Outcome) -> None:
        cid = job.claim.id
        if outcome.kind == "stop":
            await self._stop(job, outcome.reason, outcome.error)
        elif outcome.kind == "lease_lost":
            self._lost(job, "progress")
        else:  # a failed attempt: the step raised, or outlived its lease
            result, pause = await self.queue.fail(job, step, outcome.error)
            if result == "retry":
                assert pause is not None
                event(
                    logging.WARNING,
                    "attempt_failed",
                    worker=self.name,
                    id=cid,
                    milestone=job.milestone,
                    attempt=job.attempt,
                    retry_in_s=round(pause, 3),
                    error=outcome.error,
                )
                self.wakeup.wake_at(trio.current_time() + pause)
            elif result == "stopped":
                event(
                    logging.ERROR,
                    "stopped",
                    worker=self.name,
                    id=cid,
                    milestone=job.milestone,
                    reason="attempts_exhausted",
                    error=outcome.error,
                )
            else:
                self._lost(job, "fail")

    def _lost(self, job: Job, at: FencedWrite) -> None:
        """A fenced write found another claim's token (or none): nothing was written."""
        self.metrics.lease_lost.labels(at).inc()
        event(
            logging.WARNING,
            "lease_lost",
            worker=self.name,
            id=job.claim.id,
            at=at,
            milestone=job.milestone,
        )

    async def _stop(self, job: Job, reason: str, error: str) -> None:
        if await self.queue.stop(job, reason, error):
            event(
                logging.ERROR,
                "stopped",
                worker=self.name,
                id=job.claim.id,
                milestone=job.milestone,
                reason=reason,
                error=error,
            )
        else:
            self._lost(job, "stop")
