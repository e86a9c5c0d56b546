"""What the watched folders' and prefixes' tests share: the quiet period they run with,
a clock they set by hand, a watcher on it, a scan at a time they choose, the pipeline
worked until every record taken is done, both in the order a file goes through them,
and the takes as the database holds them."""

from __future__ import annotations

from typing import Any

import attrs

from actors import Wakeup, Worker
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.storage.blobs import Blobs
from transcriber.storage.configured import blobs_of
from transcriber.watch.scanning import Watcher

QUIET_S = 1.0
"""The tests' quiet period: a file unchanged this long (by the Clock) is taken."""


@attrs.define
class Clock:
    """The scan's clock, moved by the test."""

    t: float = 0.0

    def __call__(self) -> float:
        return self.t


def watcher(db: Database, config: Config, clock: Clock, blobs: Blobs | None = None) -> Watcher:
    """A daemon's watcher on the test's clock (and store, unless `blobs` stands in)."""
    return Watcher(db, blobs or blobs_of(config), config, clock=clock)


async def scan_at(w: Watcher, clock: Clock, t: float) -> None:
    """One scan with the clock at `t`."""
    clock.t = t
    await w.scan()


async def work_all(db: Database, config: Config) -> None:
    """The pipeline's steps run on every waiting record until none is left."""
    steps = audio_steps(config)
    w = Worker("w", PgQueue(db, steps), steps, Wakeup())
    while await w.work_once():
        pass


async def taken_and_written(
    db: Database, config: Config, w: Watcher, clock: Clock, t: float
) -> None:
    """What a new file goes through from `t`: seen, taken once quiet, its record worked
    to the end, its transcript (or stop note) written by the next scan."""
    await scan_at(w, clock, t)
    await scan_at(w, clock, t + QUIET_S)
    await work_all(db, config)
    await scan_at(w, clock, t + 2 * QUIET_S)


async def takes(db: Database) -> list[Any]:
    """Every row of watch_takes."""
    return await db.run(lambda con: con.fetch("SELECT * FROM watch_takes"))
