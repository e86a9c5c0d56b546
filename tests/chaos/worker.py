"""A chaos worker daemon: `python -m tests.chaos.worker URL SEED`.

A real Pipeline (2 workers, poll 0.2 s) on synthetic steps whose durations straddle a
short lease (renewed while they live); some attempts fail (retry), some stop the record.
Runs until SIGTERM, then drains and exits 0. Each step's begin and end is appended to
$CHAOS_STEP_LOG (if set), so the harness can tell when this process is inside a step
(to freeze it there).

Records are steered by their file name: `stop-*` always stop (`chaos_always_stop`),
`flaky-*` fail their first attempt of every step, `poison-*` kill the worker process
that runs them (SIGKILL of itself, as the OOM killer would), `slow-*` run several
leases long (alive: their lease is renewed).
"""

from __future__ import annotations

import logging
import os
import random
import signal
import sys
from typing import Any

import trio
import trio_asyncio

from actors import Backoff, Lease, RunLimit, StepTable, StopRecord
from tests.helpers.pg_pipeline import table
from transcriber.db.database import open_database
from transcriber.pipeline.runner import Pipeline

LEASE_S = 0.5
RENEW_S = 0.15
RUN_LIMIT_S = 3.0
MAX_ATTEMPTS = 6
SLOW_S = (1.0, 1.5)
"""How long a `slow-*` step runs: two to three leases."""


def chaos_steps(step: Any = None) -> StepTable:
    async def noop(job: Any, progress: Any) -> None:
        return None

    fn = step or noop
    return table(
        normalize=fn,
        recognize=fn,
        lease=Lease(LEASE_S, renew_s=RENEW_S),
        run_limit=RunLimit(RUN_LIMIT_S),
        max_attempts=MAX_ATTEMPTS,
        backoff=Backoff(0.01, 0.05),
    )


def make_step(rng: random.Random, log_path: str | None) -> Any:
    log = open(log_path, "a", buffering=1) if log_path else None  # noqa: SIM115 - open while the daemon lives

    def note(what: str, job: Any) -> None:
        if log is not None:
            log.write(f"{what} {job.claim.id} {job.claim.token}\n")

    async def step(job: Any, progress: Any) -> None:
        name = os.path.basename(job.inputs.get("source_path") or "")
        note("begin", job)
        try:
            if name.startswith("stop-"):
                raise StopRecord("chaos_always_stop", f"{name} always stops")
            if name.startswith("flaky-") and job.attempt == 1:
                raise RuntimeError(f"{name}: first attempt always fails")
            if name.startswith("poison-"):
                os.kill(os.getpid(), signal.SIGKILL)
            if name.startswith("slow-"):
                await trio.sleep(rng.uniform(*SLOW_S))
                return
            # Mostly inside the lease, sometimes past it (renewed, so it completes).
            duration = rng.uniform(0.02, 0.4) if rng.random() < 0.8 else rng.uniform(0.4, 0.8)
            await trio.sleep(duration)
            roll = rng.random()
            if roll < 0.10:
                raise RuntimeError("chaos: transient failure")
            if roll < 0.13:
                raise StopRecord("chaos_stop", "chaos: retrying cannot help")
        finally:
            note("end", job)

    return step


async def main(url: str, seed: int) -> None:
    rng = random.Random(seed)
    steps = chaos_steps(make_step(rng, os.environ.get("CHAOS_STEP_LOG")))
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio_asyncio.open_loop():
            async with open_database(url, min_size=1, max_size=4) as db:
                pipeline = Pipeline(db, steps, workers=2, poll_s=0.2, rng=rng)
                async with trio.open_nursery() as nursery:
                    await nursery.start(pipeline.run)
                    print("ready", flush=True)
                    async for _ in signals:
                        break
                    await pipeline.drain(5.0)
                    nursery.cancel_scope.cancel()


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(process)d %(message)s"
    )
    trio.run(main, sys.argv[1], int(sys.argv[2]))
    sys.exit(0)
