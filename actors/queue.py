"""What the runtime needs from a durable queue (its values are in actors.jobs)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from actors.jobs import Claim, Job
from actors.steps import Step

FailOutcome = Literal["retry", "stopped", "lease_lost"]


class ResultRefused(Exception):
    """The store refused a step's result (say text it cannot hold): the attempt fails
    with the store's message; the worker and the other commits carry on."""


class Queue(Protocol):
    """A durable queue. Every write is fenced by the claim's token: a write whose token
    is no longer on the record changes nothing, records `lease_lost`, and says so."""

    async def claim(self) -> Claim | None:
        """Claim one eligible record, or None for "no work right now" (not an error)."""

    async def read(self, claim: Claim) -> Job | None:
        """The claimed record's milestone, lease and inputs; None if the token is gone."""

    async def next_job(self) -> Job | None:
        """`claim` then `read`: the next record to work on, or None for no work."""

    async def commit(self, job: Job, step: Step, result: Any) -> bool:
        """Store the step's result and move to the next milestone; False: lease lost.
        Raises ResultRefused when the store cannot hold the result."""

    async def commit_then_next(self, job: Job, step: Step, result: Any) -> tuple[bool, Job | None]:
        """`commit`, then `next_job`: one trip where the queue can make it one. The
        record just committed is handed out only when no other is eligible."""

    async def fail(self, job: Job, step: Step, error: str) -> tuple[FailOutcome, float | None]:
        """One failed attempt: a retry pause (its length in seconds is returned), or a
        stop once attempts are exhausted."""

    async def stop(self, job: Job, reason: str, error: str) -> bool:
        """Park the record with a reason; the milestone stays. False: lease lost."""

    async def progress(self, job: Job, fraction: float) -> bool:
        """Record the fraction done; False: lease lost, the step must stop at once."""

    async def renew(self, job: Job, step: Step) -> bool:
        """The live holder's heartbeat: the lease runs its full length from now again.
        False: lease lost, the step must stop at once."""

    async def release(self, job: Job, why: str) -> bool:
        """Give the record back unfinished, so another worker may take it at once; not a
        failed attempt. False: lease lost."""
