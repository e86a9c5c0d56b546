"""The SQL queue beyond the spec's scenarios and the protocol suite
(tests/integration/test_queue_protocol.py runs the rules every queue keeps against it and
the in-memory queue): order by key, leases from the real step table, resume, repeats
after a lost reply, and many workers at once."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from typing import Any

import pytest
import trio

from actors import Child, Lease, RunLimit, Supervisor, Wakeup, Worker
from tests.helpers.pg_pipeline import FAST_RETRY, accept, at, db_now, journal, state, table
from transcriber.db.database import Database
from transcriber.milestones import NORMALIZED, TRANSCRIBED
from transcriber.pipeline import operator
from transcriber.pipeline.operator import NotStopped
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.step_table import step_table


async def test_claim_order_breaks_ties_by_key(db: Database, owner_id: int) -> None:
    ids = [await accept(db, owner_id, f"{i}.wav") for i in range(6)]
    # The same acceptance time for all: only the key can order them.
    await db.run(
        lambda con: con.execute("UPDATE recordings SET created_at = '2026-01-01T00:00:00Z'")
    )
    queue = PgQueue(db, table())
    claimed = [(await queue.claim()).id for _ in ids]
    assert claimed == sorted(ids)
    assert await queue.claim() is None


async def test_lease_grows_with_the_recordings_duration(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    steps = step_table(normalize=None, recognize=None)  # type: ignore[arg-type]
    queue = at(PgQueue(db, steps), now)
    job = await queue.read(await queue.claim())
    from transcriber.pipeline.pg_queue import Saved

    assert await queue.commit(job, steps["received"], Saved("save_normalized", ("/a", 600.0)))
    await queue.claim()
    lease = (await state(db, rid))["lease_expires_at"]
    rec = steps["normalized"].lease
    assert (lease - now).total_seconds() == pytest.approx(rec.base_s + rec.per_audio_s * 600.0)


async def test_resume_refuses_unknown_and_not_stopped(db: Database, owner_id: int) -> None:
    import uuid

    rid = await accept(db, owner_id)
    before = await journal(db)
    queue = PgQueue(db, table())
    with pytest.raises(NotStopped):
        await operator.resume(
            queue.db, rid, by="operator", now=queue.now, patience_s=queue.patience_s
        )
    with pytest.raises(NotStopped):
        await operator.resume(
            queue.db, uuid.uuid4(), by="operator", now=queue.now, patience_s=queue.patience_s
        )
    assert await journal(db) == before


async def test_many_workers_random_steps_short_leases(db: Database, owner_id: int) -> None:
    """Several workers, many records, step durations around a short lease (renewed) and
    run limit: every record ends transcribed, each (record, milestone) reached once,
    every late write refused."""
    rng = random.Random(20261130)
    records = [await accept(db, owner_id, f"{i}.wav") for i in range(60)]
    lease_s = 0.05

    async def step(job: Any, progress: Any) -> None:
        # Mostly inside the run limit, sometimes past it (then cancelled, retried).
        await trio.sleep(rng.choice([0.0, 0.005, 0.02, 0.03, 0.045, 0.06]))
        if rng.random() < 0.1:
            raise RuntimeError("a transient failure")

    steps = table(
        normalize=step,
        recognize=step,
        lease=Lease(lease_s),
        run_limit=RunLimit(lease_s),
        max_attempts=1000,
        **FAST_RETRY,
    )
    queue = PgQueue(db, steps, rng=rng)
    wakeup = Wakeup(poll_s=0.02, rng=rng)
    workers = [Worker(f"w{i}", queue, steps, wakeup) for i in range(6)]
    supervisor = Supervisor()

    async def all_done() -> None:
        sql = "SELECT count(*) FROM recordings WHERE milestone <> $1"
        while await db.run(lambda con: con.fetchval(sql, TRANSCRIBED)):
            await trio.sleep(0.05)

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervisor.run, [Child(w.name, w.run) for w in workers])
            await all_done()
            wakeup.close()
    assert supervisor.restarts == {}  # no worker crashed (a double commit would)
    rows = await db.run(lambda con: con.fetch("SELECT milestone, stopped_at FROM recordings"))
    assert {(r["milestone"], r["stopped_at"]) for r in rows} == {(TRANSCRIBED, None)}
    events = await journal(db)
    reached = Counter(
        (e["recording_id"], e["milestone"]) for e in events if e["kind"] == "milestone_reached"
    )
    # The two steps' milestones (this step table has no diarization: no `recognized`).
    assert set(reached) == {(r, m) for r in records for m in (NORMALIZED, TRANSCRIBED)}
    assert set(reached.values()) == {1}
    # Every refused write carries a token that was superseded, never the winning one.
    winners = {e["claim_token"] for e in events if e["kind"] == "milestone_reached"}
    assert all(e["claim_token"] not in winners for e in events if e["kind"] == "lease_lost")
    kinds = Counter(e["kind"] for e in events)
    # The run really raced: steps failed and outlived their limit, so attempts were retried.
    assert kinds["attempt_failed"] > 0
    assert any("run limit" in e["detail"]["error"] for e in events if e["kind"] == "attempt_failed")


async def test_a_repeated_release_answers_as_the_first(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    queue = at(PgQueue(db, table()), now)
    job = await queue.read(await queue.claim())
    assert await queue.release(job, "worker stopping")
    again = await queue.claim()
    assert again is not None and again.id == rid
    # The same release again (a retry after a lost reply) answers as the first did and
    # changes nothing; a write of the old claim is fenced out.
    assert await queue.release(job, "worker stopping")
    assert not await queue.progress(job, 0.5)
    assert (await state(db, rid))["claim_token"] == again.token
    kinds = [(e["kind"], e["claim_token"]) for e in await journal(db, rid)]
    assert kinds[1:] == [("released", job.claim.token), ("lease_lost", job.claim.token)]


@pytest.mark.scenario("storage", "A claim's unflushed commit ends with its transaction")
async def test_a_claims_unflushed_commit_ends_with_its_transaction(
    db: Database, owner_id: int
) -> None:
    """claim_read commits without waiting for the WAL's flush, and only itself: the next
    statement on the same connection (a step's commit, say) is durable again."""
    rid = await accept(db, owner_id)
    queue = PgQueue(db, table())
    sql = db.sql("claim_read")

    async def claim_then_show(con: Any) -> tuple[list[Any], str, str]:
        async with con.transaction():
            rows = await con.fetch(sql, *queue._claim_args, None, [uuid.uuid4()])
            inside = await con.fetchval("SHOW synchronous_commit")
        return rows, inside, await con.fetchval("SHOW synchronous_commit")

    rows, inside, after = await db.run(claim_then_show)
    assert [r["id"] for r in rows] == [rid]
    assert (inside, after) == ("off", "on")


@pytest.mark.scenario("pipeline", "A commit to a milestone with a step writes no index entry")
async def test_only_the_commit_to_the_final_milestone_writes_index_entries(
    db: Database, owner_id: int
) -> None:
    """The queue's own statements, in one transaction so that the table's counters of
    this transaction (updates, and those of them HOT) can be read in it."""
    await accept(db, owner_id)
    queue = PgQueue(db, table())
    counts = (
        "SELECT pg_stat_get_xact_tuples_updated('recordings'::regclass) AS updated,"
        " pg_stat_get_xact_tuples_hot_updated('recordings'::regclass) AS hot"
    )

    async def claim_and_commit(con: Any, to: str) -> tuple[int, int]:
        claim = await con.fetchrow(db.sql("claim"), *queue._claim_args, None, [uuid.uuid4()])
        milestone = await con.fetchval("SELECT milestone FROM recordings WHERE id = $1", claim[0])
        rows = await con.fetch(
            db.sql("commit"),
            [claim[0]],
            [claim[1]],
            [milestone],
            [to],
            ["step"],
            [1],
            [0],
            None,
            *queue._claim_args,
            [],
        )
        assert [r["ok"] for r in rows] == [True]
        row = await con.fetchrow(counts)
        return row["updated"], row["hot"]

    async def through(con: Any) -> list[tuple[int, int]]:
        async with con.transaction():
            return [await claim_and_commit(con, to) for to in (NORMALIZED, TRANSCRIBED)]

    # Each pair: this transaction's updates of records so far, and how many were HOT.
    assert await db.run(through) == [(2, 2), (4, 3)]
