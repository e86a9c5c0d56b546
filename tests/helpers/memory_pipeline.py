"""A two-step table shaped like transcriber/pipeline/step_table.py, with short limits, and the
small helpers the runtime tests share. Domain-free: the steps are the test's own."""

from __future__ import annotations

import random
from collections.abc import Callable

import trio
import trio.testing

from actors import Backoff, Lease, RunLimit, Step, StepFn, StepTable, Wakeup, Worker
from actors.testing import MemoryQueue

RECEIVED, NORMALIZED, TRANSCRIBED = "received", "normalized", "transcribed"

LEASE_S = 10.0
"""Time without a sign of life; a live worker renews it every third of it."""
RUN_LIMIT_S = 60.0
TIME_LIMIT_S = 3600.0
MAX_ATTEMPTS = 3
BACKOFF = Backoff(base_s=4.0, cap_s=100.0)
IDLE_POLL_S = 1000.0
"""A poll so long that anything a test sees within a minute was caused by a hint."""


async def instant(job, progress) -> str:
    return f"done at {job.milestone}"


def pipeline(normalize: StepFn = instant, recognize: StepFn = instant) -> StepTable:
    def step(name: str, start: str, end: str, run: StepFn) -> Step:
        return Step(
            name=name,
            milestone=start,
            next_milestone=end,
            run=run,
            lease=Lease(base_s=LEASE_S),
            time_limit_s=TIME_LIMIT_S,
            max_attempts=MAX_ATTEMPTS,
            backoff=BACKOFF,
            run_limit=RunLimit(base_s=RUN_LIMIT_S),
        )

    return StepTable.of(
        [
            step("normalize", RECEIVED, NORMALIZED, normalize),
            step("recognize", NORMALIZED, TRANSCRIBED, recognize),
        ]
    )


def single(run: StepFn) -> StepTable:
    """A one-step table (received → normalized)."""
    return StepTable.of([pipeline(normalize=run).steps[RECEIVED]])


def rig(
    steps: StepTable, *, poll_s: float = IDLE_POLL_S, seed: int = 0, workers: int = 1
) -> tuple[MemoryQueue, Wakeup, list[Worker]]:
    """A seeded queue, a wake-up and workers over them."""
    queue = MemoryQueue(steps, rng=random.Random(seed))
    wakeup = Wakeup(poll_s, rng=random.Random(seed + 1))
    return queue, wakeup, [Worker(f"w{i}", queue, steps, wakeup) for i in range(workers)]


async def until(predicate: Callable[[], bool], *, limit_s: float = 3600.0) -> None:
    """Let the workers run until `predicate` holds; virtual time passes in small steps
    (the clock jumps, nothing really sleeps), and a hang fails after `limit_s`."""
    with trio.fail_after(limit_s):
        while not predicate():
            await trio.testing.wait_all_tasks_blocked()
            if not predicate():
                await trio.sleep(0.25)
