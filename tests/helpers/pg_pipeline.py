"""Helpers for pipeline tests on a real database: records, steps and time."""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
from collections.abc import Iterator
from typing import Any

import attrs
import trio

from actors import Backoff, Job, StepTable
from transcriber.db.database import Database
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.step_table import step_table


async def noop(job: Job, progress: Any) -> None:
    return None


def table(normalize: Any = noop, recognize: Any = noop, **changes: Any) -> StepTable:
    """The real step table with other step functions and, optionally, other limits
    (the same changes on both steps)."""
    steps = step_table(normalize=normalize, recognize=recognize)
    if not changes:
        return steps
    return StepTable({m: attrs.evolve(s, **changes) for m, s in steps.steps.items()})


FAST_RETRY = {"backoff": Backoff(base_s=0.001, cap_s=0.001)}


async def accept(db: Database, owner_id: int, name: str = "a.wav") -> Any:
    return await db.fetchval("accept", owner_id, name, 1000, f"/uploads/{name}", None, None, None)


async def db_now(db: Database) -> dt.datetime:
    return await db.run(lambda con: con.fetchval("SELECT now()"))


def at(queue: PgQueue, now: dt.datetime, seconds: float = 0.0) -> PgQueue:
    """The same queue, its clock set to `now + seconds`."""
    return attrs.evolve(queue, now=now + dt.timedelta(seconds=seconds))


async def state(db: Database, rid: Any) -> Any:
    return await db.fetchrow("recording", rid)


async def journal(db: Database, rid: Any | None = None) -> list[Any]:
    """Every committed event of one record (or of all: None), in the readers' order:
    not only the settled ones the followers read (operator.sql's journal_after), which
    an unrelated transaction still running would hold back."""
    return await db.run(
        lambda con: con.fetch(
            "SELECT id, recording_id, at, origin, kind, milestone, claim_token, detail"
            " FROM journal WHERE $1::uuid IS NULL OR recording_id = $1 ORDER BY xid, id",
            rid,
        )
    )


class Gate:
    """A step that waits until the test opens the gate; `entered` says it is inside."""

    def __init__(self, result: Any = None):
        self.entered = trio.Event()
        self.open = trio.Event()
        self.result = result
        self.ran_to_end = False

    async def __call__(self, job: Job, progress: Any) -> Any:
        self.entered.set()
        await self.open.wait()
        self.ran_to_end = True
        return self.result


_watchers: list[list[Any]] = []
_hooked = False


def _audit(name: str, args: tuple[Any, ...]) -> None:
    if name == "socket.connect":
        for seen in _watchers:
            seen.append(args[1])


@contextlib.contextmanager
def outbound_connects() -> Iterator[list[Any]]:
    """The addresses of every socket connect made inside the block. Connections a pool
    already holds are not new; any outbound call would show. (An audit hook cannot be
    removed, so one hook serves every block.)"""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    seen: list[Any] = []
    _watchers.append(seen)
    try:
        yield seen
    finally:
        _watchers.remove(seen)
