"""Daemons register when they start and beat while they run, so the operator's screen
(and `transcriber daemons`) can say which are alive and what their workers hold.

A heartbeat is not a lease: its statements touch the `daemons` table only — no record
is taken out of or put into selection by it, and a daemon that stops beating changes
nothing for the queue (its claims end by their own leases, as ever).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import trio

from actors import Job, StepTable
from actors.log import event
from transcriber.db.database import Database
from transcriber.milestones import NORMALIZED

BEAT_EVERY_S = 10.0


@attrs.define
class RecognitionTotals:
    """Recognition done in this process: seconds of audio, seconds it took."""

    audio_s: float = 0.0
    taken_s: float = 0.0


def timed_recognition(steps: StepTable, totals: RecognitionTotals) -> StepTable:
    """The same steps, recognition's timed into `totals` (a finished run only: a failed
    or cut one recognized nothing)."""
    step = steps.steps.get(NORMALIZED)
    if step is None:
        return steps
    inner = step.run

    async def run(job: Job, progress: Any) -> Any:
        started = trio.current_time()
        result = await inner(job, progress)
        totals.taken_s += trio.current_time() - started
        totals.audio_s += float(job.inputs.get("duration_s") or 0.0)
        return result

    return StepTable({**steps.steps, NORMALIZED: attrs.evolve(step, run=run)})


@attrs.frozen
class DaemonInfo:
    workers: int
    model: str | None
    device: str | None
    version: str
    host: str = attrs.field(factory=socket.gethostname)
    pid: int = attrs.field(factory=os.getpid)


async def register(db: Database, info: DaemonInfo, beat_every_s: float = BEAT_EVERY_S) -> uuid.UUID:
    """This daemon, registered as starting now. Cancellation: one statement."""
    daemon_id = uuid.uuid4()
    await db.execute(
        "daemon_register",
        daemon_id,
        info.host,
        info.pid,
        info.version,
        info.workers,
        info.model,
        info.device,
        beat_every_s,
    )
    return daemon_id


async def beat(
    db: Database,
    daemon_id: uuid.UUID,
    claims: Sequence[dict[str, Any]],
    totals: RecognitionTotals,
) -> None:
    """One beat: the time, the claims, the recognition totals. Cancellation: one
    statement."""
    await db.execute("daemon_beat", daemon_id, list(claims), totals.audio_s, totals.taken_s)


async def heartbeat(
    db: Database,
    daemon_id: uuid.UUID,
    held: Callable[[], Sequence[tuple[str, Job]]],
    totals: RecognitionTotals,
    every_s: float = BEAT_EVERY_S,
) -> None:
    """Beat every `every_s` until cancelled, reporting what `held()` says the workers
    hold ((worker, job) pairs) and since when this process has seen each claim. A beat
    that fails is logged and skipped: a missing beat only marks the daemon silent.

    Cancellation: the only way out; a beat in flight is abandoned (the next start
    registers anew).
    """
    seen: dict[Any, dt.datetime] = {}
    while True:
        try:
            seen = await beat_once(db, daemon_id, held(), totals, seen)
        except Exception as e:  # the database is away: the screen shows it silent
            event(logging.WARNING, "heartbeat_missed", error=str(e))
        await trio.sleep(every_s)


async def beat_once(
    db: Database,
    daemon_id: uuid.UUID,
    held: Sequence[tuple[str, Job]],
    totals: RecognitionTotals,
    seen: dict[Any, dt.datetime],
) -> dict[Any, dt.datetime]:
    """One beat of `heartbeat`: the claims `held` with since when each was first seen
    (`seen`, by token, as the last beat returned it). Cancellation: one statement."""
    now = dt.datetime.now(dt.UTC)
    seen = {job.claim.token: seen.get(job.claim.token, now) for _, job in held}
    claims = [
        {
            "worker": worker,
            "id": str(job.claim.id),
            "token": str(job.claim.token),
            "since": seen[job.claim.token].isoformat(),
        }
        for worker, job in held
    ]
    await beat(db, daemon_id, claims, totals)
    return seen


async def stopped(db: Database, daemon_id: uuid.UUID) -> None:
    """This daemon drained and stops. Cancellation: one statement."""
    await db.execute("daemon_stopped", daemon_id)
