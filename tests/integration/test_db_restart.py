"""A PostgreSQL restart in the middle of a run: every record still completes, and a
step cut by the restart loses nothing but its attempt."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors import Lease
from tests.helpers.pg_pipeline import FAST_RETRY, accept, journal, table
from transcriber.db import embedded
from transcriber.db.database import Database, open_database
from transcriber.db.migrations import migrate
from transcriber.milestones import TRANSCRIBED
from transcriber.owners import add_owner
from transcriber.pipeline.runner import Pipeline


@pytest.fixture
def own_server() -> Iterator[Any]:
    """A server of this test's own, so stopping it disturbs no other test."""
    home = Path(tempfile.mkdtemp(prefix="transcriber-restart-"))
    server = embedded.start(home, cleanup_mode="delete")
    yield server
    server.cleanup()
    shutil.rmtree(home, ignore_errors=True)


def restart(server: Any) -> None:
    """Stop the server (fast shutdown: sessions are cut) and start it again."""
    server.restart()


@pytest.mark.scenario("operations", "A database restart loses no record")
async def test_records_complete_across_a_database_restart(own_server: Any, aio_loop: None) -> None:
    url = own_server.get_uri()
    in_step = trio.Event()
    release = trio.Event()
    steps_run: Counter[str] = Counter()

    async def step(job: Any, progress: Any) -> None:
        steps_run[job.milestone] += 1
        in_step.set()
        await release.wait()

    async with open_database(url, min_size=1, max_size=6) as db:
        await migrate(db)
        owner = (await add_owner(db, "alice")).id
        ids = [await accept(db, owner, f"{i}.wav") for i in range(20)]
        # A claim whose answer the restart swallowed is held by a token nobody has;
        # its lease is what frees it, so leases are short here.
        pipeline = Pipeline(
            db,
            table(normalize=step, recognize=step, lease=Lease(3.0), **FAST_RETRY),
            workers=3,
            poll_s=0.5,
        )
        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                await nursery.start(pipeline.run)
                await in_step.wait()  # steps are running: now the database goes away
                await trio.to_thread.run_sync(restart, own_server)
                release.set()
                while await done(db) < len(ids):
                    await trio.sleep(0.1)
                assert await pipeline.drain(30)
    async with open_database(url, min_size=1, max_size=1) as db:
        events = await journal(db)
    reached = Counter(
        (e["recording_id"], e["milestone"]) for e in events if e["kind"] == "milestone_reached"
    )
    assert set(reached) == {(r, m) for r in ids for m in ("normalized", TRANSCRIBED)}
    assert set(reached.values()) == {1}  # nothing done twice
    # The restart really happened under the run: the LISTEN connection was cut.
    assert pipeline.listener_supervisor.restarts.get("listener", 0) > 0


async def done(db: Database) -> int:
    try:
        return await db.run(
            lambda con: con.fetchval(
                "SELECT count(*) FROM recordings WHERE milestone = $1", TRANSCRIBED
            )
        )
    except Exception:  # the server is still coming back
        return 0
