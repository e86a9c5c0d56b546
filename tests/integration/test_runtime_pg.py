"""The runtime on the real queue: LISTEN wake-ups, reconnection, the announcement of
commits, the claim's plan."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
import trio

from tests.helpers.pg_pipeline import Gate, accept, journal, noop, state
from transcriber.db.database import JOURNAL_CHANNEL, Database
from transcriber.milestones import TRANSCRIBED
from transcriber.pipeline.runner import Pipeline
from transcriber.pipeline.step_table import step_table


async def test_a_new_record_wakes_an_idle_worker(db: Database, owner_id: int) -> None:
    gate = Gate()
    gate.open.set()
    # An hour's poll: only the notification can wake the worker in this test.
    pipeline = Pipeline(db, step_table(normalize=noop, recognize=gate), workers=2, poll_s=3600)
    async with trio.open_nursery() as nursery:
        await nursery.start(pipeline.run)
        await wait_idle(pipeline)
        rid = await accept(db, owner_id)
        with trio.fail_after(30):
            await gate.entered.wait()
        assert await pipeline.drain(grace_s=30)
    assert (await state(db, rid))["milestone"] == TRANSCRIBED


async def wait_idle(pipeline: Pipeline) -> None:
    """Until every worker waits for a hint (the listener has started by then too)."""
    while pipeline.wakeup.waiting < pipeline.workers:
        await trio.sleep(0.01)


@pytest.mark.scenario("storage", "A pipeline's commits are announced after their transactions")
async def test_commits_are_announced_once_for_many_after_their_transactions(
    db: Database, owner_id: int
) -> None:
    pipeline = Pipeline(db, step_table(normalize=noop, recognize=noop), workers=1, poll_s=3600)
    # The next announcement an hour after the first: all the commits after the first
    # wait for it, so one notification is all a listener can hear of them.
    pipeline.announcer.gap_s = 3600
    async with db.listen(JOURNAL_CHANNEL) as listener, trio.open_nursery() as nursery:
        await nursery.start(pipeline.run)
        rids = [await accept(db, owner_id, f"{i}.wav") for i in range(2)]
        with trio.fail_after(30):
            for rid in rids:
                while (await state(db, rid))["milestone"] != TRANSCRIBED:
                    await trio.sleep(0.01)
        commits = sum(e["kind"] == "milestone_reached" for e in await journal(db))
        # Notifications reach a listener in the order their transactions committed: once
        # the test's own is heard, every one sent before it has been.
        await db.run(lambda con: con.execute(f"NOTIFY {JOURNAL_CHANNEL}, 'end'"))
        heard = []
        with trio.fail_after(30):
            while (payload := await listener.payloads.receive()) != "end":
                heard.append(payload)
        nursery.cancel_scope.cancel()
    assert commits == 4
    announced = [p for p in heard if p.endswith(" commit")]
    assert len(announced) == 1 and pipeline.announcer.sent == 1, heard
    # The two records' acceptances are notified in their own transactions, as before.
    assert sorted(p.split()[1] for p in heard if p not in announced) == ["accepted"] * 2


async def test_the_listener_reconnects_after_losing_its_connection(
    db: Database, owner_id: int
) -> None:
    gate = Gate()
    gate.open.set()
    pipeline = Pipeline(db, step_table(normalize=noop, recognize=gate), workers=1, poll_s=3600)
    async with trio.open_nursery() as nursery:
        await nursery.start(pipeline.run)
        await wait_idle(pipeline)
        killed = await db.run(
            lambda con: con.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN%'"
            )
        )
        assert killed == 1
        # The supervisor restarts the listener; a record accepted afterwards wakes it.
        while "listener" not in pipeline.listener_supervisor.restarts:
            await trio.sleep(0.01)
        while await listeners(db) == 0:
            await trio.sleep(0.01)
        rid = await accept(db, owner_id)
        with trio.fail_after(30):
            await gate.entered.wait()
        assert await pipeline.drain(grace_s=30)
    assert (await state(db, rid))["milestone"] == TRANSCRIBED


async def listeners(db: Database) -> int:
    return await db.run(
        lambda con: con.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND query LIKE 'LISTEN%'"
        )
    )


async def test_claim_uses_the_partial_index(db: Database, owner_id: int) -> None:
    # Many finished records and a few eligible, statistics fresh.
    await db.run(
        lambda con: con.execute(
            "INSERT INTO recordings (owner_id, milestone) "
            "SELECT $1, 'transcribed' FROM generate_series(1, 20000)",
            owner_id,
        )
    )
    for i in range(20):
        await accept(db, owner_id, f"{i}.wav")
    await db.run(lambda con: con.execute("ANALYZE recordings"))
    steps = step_table(normalize=noop, recognize=noop)
    from transcriber.bench.claim_plans import claim_statement
    from transcriber.pipeline.pg_queue import PgQueue

    args = PgQueue(db, steps)._claim_args

    async def explain(con: Any) -> str:
        async with con.transaction():
            claim = await claim_statement(con)
            rows = await con.fetch("EXPLAIN " + claim, *args, None, [uuid.uuid4()], [])
            return "\n".join(r[0] for r in rows)

    plan = await db.run(explain)
    assert "recordings_claimable" in plan, plan


def test_the_final_milestone_in_sql_matches_the_step_table() -> None:
    """The claim's partial index holds the records not `finished`, a column the database
    derives from the milestone named literally (a parameter would keep the planner from
    using the index); it must be the table's only final milestone."""
    from transcriber.db.named_sql import load_queries, schema_text

    steps = step_table(normalize=noop, recognize=noop)
    assert steps.final == [TRANSCRIBED]
    schema = schema_text()
    finished = re.search(
        r"ADD COLUMN finished boolean GENERATED ALWAYS AS \((.*?)\) STORED", schema
    )
    assert finished is not None and finished.group(1) == f"milestone = '{TRANSCRIBED}'"
    index = re.findall(r"CREATE INDEX recordings_claimable .*?;", schema, re.S)[-1]
    assert "WHERE stopped_at IS NULL AND NOT finished" in index
    claim = re.findall(r"CREATE (?:OR REPLACE )?FUNCTION claim_next.*?\$claim\$;", schema, re.S)[-1]
    assert "NOT r.finished" in claim
    assert "claim_next(" in load_queries()["claim"]
