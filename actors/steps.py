"""The step table: per milestone with a step, what runs and under which limits."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import attrs

from actors.jobs import Job

Progress = Callable[[float], Awaitable[None]]
"""Reports the fraction of the step done; cancels the step when the claim is gone."""

StepFn = Callable[[Job, Progress], Awaitable[Any]]
"""Runs one step on a claimed record and returns its result, which the queue commits."""


class StopRecord(Exception):
    """Raised by a step when retrying cannot help: the record stops with `reason`."""

    def __init__(self, reason: str, error: str):
        super().__init__(f"{reason}: {error}")
        self.reason = reason
        self.error = error


@attrs.frozen
class _ByDuration:
    """A length of time that grows with the record: `base_s + per_audio_s * duration_s`
    (the record's `duration_s` input; none counts as 0)."""

    base_s: float
    per_audio_s: float = 0.0

    def seconds(self, duration_s: float | None) -> float:
        return self.base_s + self.per_audio_s * (duration_s or 0.0)


@attrs.frozen
class Lease(_ByDuration):
    """How long a claim lasts without a sign of life from its holder:
    `base_s + per_audio_s * duration_s` of the record. A live holder renews it every
    `renew_s` (a third of the base unless set), so a step may run far longer than its
    lease; a holder that dies or freezes stops renewing and loses the record within
    the lease."""

    renew_s: float | None = None

    def __attrs_post_init__(self) -> None:
        # A renewal no sooner than the lease's end keeps nothing: refuse it up front
        # rather than lose every slow step's record to another worker.
        if not self.base_s > 0:
            raise ValueError(f"a lease must last some time, not {self.base_s}s")
        if self.renew_s is not None and not 0 < self.renew_s < self.base_s:
            raise ValueError(
                f"the renewal interval ({self.renew_s}s) must be shorter "
                f"than the lease ({self.base_s}s)"
            )

    @property
    def renew_every_s(self) -> float:
        return self.renew_s if self.renew_s is not None else self.base_s / 3


@attrs.frozen
class RunLimit(_ByDuration):
    """How long one attempt of a step may run, renewals or not:
    `base_s + per_audio_s * duration_s` of the record. A step still running then is hung
    (or hopelessly slow): it is cut and the attempt counts as failed."""


@attrs.frozen
class Backoff:
    """Exponential backoff with jitter: a pause in [½, 1] × min(cap, base × 2^attempts)."""

    base_s: float
    cap_s: float

    def delay(self, attempts_before: int, rng: random.Random) -> float:
        ceiling = min(self.cap_s, self.base_s * 2.0 ** min(attempts_before, 30))
        return ceiling * rng.uniform(0.5, 1.0)


@attrs.frozen
class Step:
    name: str
    milestone: str
    """The milestone a record must have reached for this step to run."""
    next_milestone: str
    run: StepFn = attrs.field(eq=False)
    lease: Lease
    time_limit_s: float
    """How long a record may stay at `milestone` before a claimer stops it."""
    max_attempts: int
    """Claims allowed per milestone (each claim counts one, whether its holder fails,
    dies or is cut off); a claimer that finds them used up stops the record."""
    backoff: Backoff
    run_limit: RunLimit | None = None
    """None: an attempt may run as long as its holder renews the lease."""


def _as_dict(steps: Mapping[str, Step]) -> dict[str, Step]:
    return dict(steps)


@attrs.frozen
class StepTable:
    """Milestone → step. The one place that says what runs where, and with what limits."""

    steps: Mapping[str, Step] = attrs.field(converter=_as_dict)

    @classmethod
    def of(cls, steps: Iterable[Step]) -> StepTable:
        table: dict[str, Step] = {}
        for step in steps:
            if step.milestone in table:
                raise ValueError(f"two steps start at milestone {step.milestone!r}")
            table[step.milestone] = step
        return cls(table)

    def __getitem__(self, milestone: str) -> Step:
        return self.steps[milestone]

    def get(self, milestone: str) -> Step | None:
        return self.steps.get(milestone)

    @property
    def milestones(self) -> list[str]:
        """Milestones that have a step, in order."""
        return list(self.steps)

    @property
    def final(self) -> list[str]:
        """Milestones reached by a step that have no step of their own."""
        return [s.next_milestone for s in self.steps.values() if s.next_milestone not in self.steps]

    def replace(self, **runs: StepFn) -> StepTable:
        """The same table with other step functions, by step name (tests, benchmarks)."""
        unknown = set(runs) - {s.name for s in self.steps.values()}
        if unknown:
            raise KeyError(f"no such steps: {sorted(unknown)}")
        return StepTable(
            {m: attrs.evolve(s, run=runs.get(s.name, s.run)) for m, s in self.steps.items()}
        )
