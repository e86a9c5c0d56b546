"""The queue protocol's drivers for tests/integration/test_queue_protocol.py: one adapter
per implementation of `actors.Queue` (the in-memory queue of actors.testing and the
PostgreSQL queue), so one behaviour suite runs against both, as River runs one driver
suite against every driver.

An adapter is a Queue itself (every protocol call goes to the queue it wraps, as the
adapter's time stands now) and adds what a test needs around it: a new record, time
passing, the record's queue state and its journal."""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable
from typing import Any, Protocol

import attrs
from trio.testing import MockClock

from actors import Queue
from actors.testing import MemoryQueue
from tests.helpers.pg_pipeline import accept, journal, state
from transcriber.db.database import Database
from transcriber.pipeline.pg_queue import PgQueue


@attrs.frozen
class Held:
    """A record's queue state, as both queues keep it."""

    milestone: str
    attempts: int
    token: Hashable | None
    stop_reason: str | None
    progress: float | None


class QueueDriver(Queue, Protocol):
    name: str

    async def add(self) -> Hashable:
        """A new record at the first milestone, entered now."""

    def advance(self, seconds: float) -> None:
        """Let `seconds` pass on the queue's clock."""

    async def held(self, id: Hashable) -> Held: ...

    async def journal(self, id: Hashable) -> list[tuple[str, Hashable | None, dict[str, Any]]]:
        """The record's events: kind, claim token, detail."""


class _Forwarding:
    """Every other attribute (the protocol's calls) is the wrapped queue's, as of now."""

    def _queue(self) -> Any:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue(), name)


@attrs.define
class MemoryDriver(_Forwarding):
    """The in-memory queue reads trio's clock: the test runs on `clock` (a MockClock that
    only moves when told), and time passes by jumping it."""

    queue: MemoryQueue
    clock: MockClock
    name: str = "memory"

    def _queue(self) -> MemoryQueue:
        return self.queue

    async def add(self) -> Hashable:
        return self.queue.add()

    def advance(self, seconds: float) -> None:
        self.clock.jump(seconds)

    async def held(self, id: Hashable) -> Held:
        rec = self.queue.records[id]
        return Held(rec.milestone, rec.attempts, rec.claim_token, rec.stop_reason, rec.progress)

    async def journal(self, id: Hashable) -> list[tuple[str, Hashable | None, dict[str, Any]]]:
        return [(e.kind, e.token, e.detail) for e in self.queue.journal if e.recording_id == id]


@attrs.define
class PgDriver(_Forwarding):
    """The PostgreSQL queue's statements take an optional `now` (DESIGN.md): the driver
    starts at the database's time and passes its own, `seconds` later at each advance."""

    queue: PgQueue
    db: Database
    owner_id: int
    start: dt.datetime
    elapsed_s: float = 0.0
    name: str = "postgres"

    def _queue(self) -> PgQueue:
        return attrs.evolve(self.queue, now=self.start + dt.timedelta(seconds=self.elapsed_s))

    async def add(self) -> Hashable:
        return await accept(self.db, self.owner_id)

    def advance(self, seconds: float) -> None:
        self.elapsed_s += seconds

    async def held(self, id: Hashable) -> Held:
        row = await state(self.db, id)
        return Held(
            row["milestone"],
            row["attempts"],
            row["claim_token"],
            row["stop_reason"],
            row["progress"],
        )

    async def journal(self, id: Hashable) -> list[tuple[str, Hashable | None, dict[str, Any]]]:
        return [(e["kind"], e["claim_token"], e["detail"]) for e in await journal(self.db, id)]
