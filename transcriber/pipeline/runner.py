"""The pipeline in one process: N worker actors and the LISTEN wake-up connection,
each under a supervisor that restarts it alone when it crashes, and the announcer of
their commits."""

from __future__ import annotations

import logging
import math
import random

import attrs
import trio

from actors import Backoff, Child, Job, RuntimeMetrics, StepTable, Supervisor, Wakeup, Worker
from actors.log import event
from transcriber.db.database import WORK_CHANNEL, Database
from transcriber.pipeline.announcer import Announcer
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.prometheus import RUNTIME_METRICS


async def listen_for_work(db: Database, wakeup: Wakeup) -> None:
    """Turn work notifications (a record accepted, resumed or released) into wake-ups
    until the connection ends.

    Raises ConnectionError when the connection is lost, so the supervisor reconnects
    after its backoff. Cancellation: the LISTEN connection is closed on the way out.
    """
    # Each notification wakes a worker from the connection's own callback: no task in
    # between to schedule on the way to an idle worker.
    async with db.listen(WORK_CHANNEL, on_payload=lambda _payload: wakeup.wake_one()) as listener:
        # Anything may have happened while this connection was not listening.
        wakeup.wake_all()
        await listener.lost.wait()
    raise ConnectionError("the LISTEN connection was lost")


MIN_FULL_TRIP = 3
"""The fewest asks a trip needs to leave beside another trip out (see Pipeline)."""


@attrs.define(eq=False)
class Pipeline:
    db: Database
    steps: StepTable
    workers: int = 2
    poll_s: float = 5.0
    rng: random.Random = attrs.field(factory=random.Random)
    metrics: RuntimeMetrics = RUNTIME_METRICS
    """Where its workers and supervisors count: the one /metrics shows."""
    wakeup: Wakeup = attrs.field(init=False)
    queue: PgQueue = attrs.field(init=False)
    announcer: Announcer = attrs.field(init=False)
    worker_supervisor: Supervisor = attrs.field(init=False)
    listener_supervisor: Supervisor = attrs.field(init=False)
    _workers: list[Worker] = attrs.field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        self.wakeup = Wakeup(self.poll_s, rng=self.rng)
        self.announcer = Announcer(self.db)
        self.queue = PgQueue(self.db, self.steps, rng=self.rng, announce=self.announcer.news)
        # Another trip beside those out only for a full load of at least MIN_FULL_TRIP
        # asks: with fewer workers, one trip at a time carries them all (four workers in
        # two trips of two cost the server and the client twice as much per transition
        # as in one of four, and drained no faster). Eight workers: three trips of three
        # (the drain 7 % faster than two of four, at the same server CPU per transition).
        # The most trips, within the queue's cap, whose share ceil(workers / trips) is
        # still MIN_FULL_TRIP: that holds while workers > (MIN_FULL_TRIP - 1) * trips.
        self.queue.trips_at_once = max(
            1, min(self.queue.trips_at_once, (self.workers - 1) // (MIN_FULL_TRIP - 1))
        )
        self.queue.full_trip = max(1, math.ceil(self.workers / self.queue.trips_at_once))
        self.worker_supervisor = Supervisor(rng=self.rng, metrics=self.metrics)
        # Reconnects quickly at first: wake-ups are missed while it is away.
        self.listener_supervisor = Supervisor(
            restart=Backoff(base_s=0.1, cap_s=10.0), rng=self.rng, metrics=self.metrics
        )

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run until drained (every worker returned), or until cancelled.

        Cancellation: cancels steps in flight; their claims stay until the lease ends.
        """
        self._workers = [
            Worker(f"worker-{i + 1}", self.queue, self.steps, self.wakeup, self.metrics)
            for i in range(self.workers)
        ]
        async with self.queue.pinned(), trio.open_nursery() as nursery:
            nursery.start_soon(self.announcer.run)
            await nursery.start(
                self.listener_supervisor.run,
                [Child("listener", lambda: listen_for_work(self.db, self.wakeup))],
            )
            event(logging.INFO, "pipeline_started", workers=self.workers)
            await self.worker_supervisor.run(
                [Child(w.name, w.run) for w in self._workers], task_status=task_status
            )
            # Every worker has returned: nobody needs wake-ups any more.
            nursery.cancel_scope.cancel()

    def held(self) -> list[tuple[str, Job]]:
        """What each worker holds now: (worker's name, job) for each step in flight."""
        return [(w.name, w.current) for w in self._workers if w.current is not None]

    async def drain(self, grace_s: float) -> bool:
        """Stop claiming; steps in flight may finish within `grace_s`, then are cancelled.
        True when all finished in time."""
        self.wakeup.close()
        return await self.worker_supervisor.drain(grace_s)
