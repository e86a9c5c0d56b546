"""Two daemons against one database share the work, with nothing done twice."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import trio

from tests.helpers.pg_pipeline import accept, journal, table
from transcriber.db.database import Database, open_database
from transcriber.milestones import TRANSCRIBED
from transcriber.pipeline.runner import Pipeline


@pytest.mark.scenario("operations", "Two daemons share one database")
async def test_two_daemons_share_the_work(db: Database, db_url: str, owner_id: int) -> None:
    ids = [await accept(db, owner_id, f"{i}.wav") for i in range(30)]
    worked: Counter[str] = Counter()
    both_started = trio.Event()

    def step_for(daemon: str) -> Any:
        async def step(job: Any, progress: Any) -> None:
            worked[daemon] += 1
            if len(worked) == 2:
                both_started.set()
            # The first steps wait until each daemon has one: both surely work.
            await both_started.wait()

        return step

    async with open_database(db_url, max_size=4) as other:
        daemons = [
            Pipeline(
                d, table(normalize=step_for(name), recognize=step_for(name)), workers=2, poll_s=0.5
            )
            for name, d in (("a", db), ("b", other))
        ]
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                for daemon in daemons:
                    await nursery.start(daemon.run)
                while await db.run(
                    lambda con: con.fetchval(
                        "SELECT count(*) FROM recordings WHERE milestone <> $1", TRANSCRIBED
                    )
                ):
                    await trio.sleep(0.05)
                for daemon in daemons:
                    assert await daemon.drain(10)
    assert worked["a"] > 0 and worked["b"] > 0
    assert worked["a"] + worked["b"] == 2 * len(ids)  # each step ran once in all
    reached = Counter(
        (e["recording_id"], e["milestone"])
        for e in await journal(db)
        if e["kind"] == "milestone_reached"
    )
    assert len(reached) == 2 * len(ids) and set(reached.values()) == {1}
