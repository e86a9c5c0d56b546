"""The bench's instruments: the queue with its claims timed and commits counted, no-op
steps with a probe, and the summaries of what they time."""

from __future__ import annotations

import math
import statistics
import sys
import time
from typing import Any

import asyncpg
import trio

from actors import Job, Step, StepTable
from transcriber.milestones import TRANSCRIBED
from transcriber.pipeline.pg_queue import PgQueue, Saved
from transcriber.pipeline.step_table import step_table


def note(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(sorted_xs: list[float], p: float) -> float:
    """Nearest-rank percentile (the same as the peers' bench)."""
    return sorted_xs[max(0, math.ceil(p / 100 * len(sorted_xs)) - 1)]


def summary_ms(values_s: list[float]) -> dict[str, float]:
    xs = sorted(v * 1e3 for v in values_s)
    if not xs:
        return {"n": 0}
    return {
        "n": len(xs),
        "p50_ms": percentile(xs, 50),
        "p90_ms": percentile(xs, 90),
        "p99_ms": percentile(xs, 99),
        "max_ms": xs[-1],
        "min_ms": xs[0],
        "mean_ms": statistics.fmean(xs),
    }


class TimedQueue:
    """Wraps the Pipeline's PgQueue: times every claim, counts successful commits, and
    signals when a record reaches the final milestone. Everything else delegates."""

    def __init__(self, inner: PgQueue, target_commits: int):
        self.inner = inner
        self.claim_s: list[float] = []
        """Claim + read in one trip, when a worker asks for work."""
        self.chained_s: list[float] = []
        """Commit + claim + read in one trip, when a worker finished a step."""
        self.empty_claims = 0
        self.commits = 0
        self.lost_commits = 0
        self.target_commits = target_commits
        self.t_target: float | None = None
        self.reached = trio.Event()
        self._final: dict[Any, trio.Event] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def final(self, record_id: Any) -> trio.Event:
        """Set once `record_id` is committed at the final milestone (either side may ask
        first: the commit can land before the producer's own call returns)."""
        return self._final.setdefault(record_id, trio.Event())

    async def next_job(self) -> Job | None:
        t = time.perf_counter()
        job = await self.inner.next_job()
        self._timed(t, job)
        return job

    async def commit(self, job: Job, step: Step, result: Saved | None) -> bool:
        ok = await self.inner.commit(job, step, result)
        self._count(ok, job, step)
        return ok

    async def commit_then_next(
        self, job: Job, step: Step, result: Saved | None
    ) -> tuple[bool, Job | None]:
        t = time.perf_counter()
        ok, following = await self.inner.commit_then_next(job, step, result)
        self._count(ok, job, step)
        self._timed(t, following, self.chained_s)
        return ok, following

    def _timed(self, t: float, job: Job | None, into: list[float] | None = None) -> None:
        if job is None:
            self.empty_claims += 1
        else:
            (self.claim_s if into is None else into).append(time.perf_counter() - t)

    def _count(self, ok: bool, job: Job, step: Step) -> None:
        if not ok:
            self.lost_commits += 1
            return
        self.commits += 1
        if self.commits == self.target_commits:
            self.t_target = time.perf_counter()
            self.reached.set()
        if step.next_milestone == TRANSCRIBED:
            self.final(job.claim.id).set()


class Probe:
    """No-op steps; normalize notes when it first ran for each record."""

    def __init__(self) -> None:
        self.t1: dict[Any, float] = {}

    async def normalize(self, job: Job, progress: Any) -> None:
        t1 = time.monotonic()
        self.t1.setdefault(job.claim.id, t1)

    async def recognize(self, job: Job, progress: Any) -> None:
        return None

    def steps(self) -> StepTable:
        return step_table(normalize=self.normalize, recognize=self.recognize)


def counts(rows: list[asyncpg.Record], key: str) -> dict[str, int]:
    return {r[key]: r["n"] for r in rows}
