"""The queue's guards, each pinned on the real PostgreSQL queue by a case that only the
guard decides: broken on purpose (see tools/mutate.py, `just mutate`), each of these
fails. What the guards are is the seed's (openspec/specs/pipeline): the key breaks ties
of the claim order, resume clears everything the stop and the previous run left, every
write is fenced by its token, renewal moves the lease, the lease is the step's and grows
with the recording, nothing spent is silently kept out of selection, and one record has
one claimer."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import asyncpg
import attrs
import pytest
import trio

from actors import Backoff, Job, Lease, StepTable, Wakeup, Worker
from tests.helpers.pg_pipeline import accept, at, db_now, journal, state, table
from transcriber.db.database import Database
from transcriber.milestones import NORMALIZED, RECEIVED
from transcriber.pipeline import operator
from transcriber.pipeline.pg_queue import PgQueue, Saved

ENTERED = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


async def claimed_job(queue: PgQueue) -> Job:
    claim = await queue.claim()
    assert claim is not None
    job = await queue.read(claim)
    assert job is not None
    return job


async def test_the_key_breaks_ties_whatever_the_plan(db: Database, owner_id: int) -> None:
    """Records accepted at the same moment are claimed in key order even when no index
    hands them over in that order: here the claim's index is gone and the records lie in
    the table in the reverse of their keys."""
    ids = [uuid.UUID(int=n) for n in (6, 5, 4, 3, 2, 1)]  # stored in this order

    async def setup(con: asyncpg.Connection) -> None:
        await con.execute("DROP INDEX recordings_claimable")
        await con.executemany(
            "INSERT INTO recordings (id, owner_id, filename, created_at, milestone_entered_at)"
            " VALUES ($1, $2, 'tie.wav', $3, $3)",
            [(i, owner_id, ENTERED) for i in ids],
        )

    await db.run(setup)
    queue = PgQueue(db, table())
    assert [(await queue.claim()).id for _ in ids] == sorted(ids)  # type: ignore[union-attr]
    # The shared trips' statement (the commit's claims) keeps the same order.
    more = [uuid.UUID(int=n) for n in (12, 11, 10)]
    await db.run(
        lambda con: con.executemany(
            "INSERT INTO recordings (id, owner_id, filename, created_at, milestone_entered_at)"
            " VALUES ($1, $2, 'tie.wav', $3, $3)",
            [(i, owner_id, ENTERED) for i in more],
        )
    )
    assert (await queue.next_job()).claim.id == min(more)  # type: ignore[union-attr]


async def test_resume_clears_everything_the_stop_and_the_run_left(
    db: Database, owner_id: int
) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    steps = table(backoff=Backoff(base_s=10, cap_s=10))
    queue = at(PgQueue(db, steps), now)
    step = steps[RECEIVED]
    first = await claimed_job(queue)
    assert (await queue.fail(first, step, "a transient failure"))[0] == "retry"
    later = at(queue, now, 60)
    second = await claimed_job(later)  # attempt 2, its retry pause in the past
    assert await later.stop(second, "operator_stop", "the error text of the stop")
    assert await later.progress(second, 0.5)  # still its holder's claim, progress on
    stopped = await state(db, rid)
    assert stopped["stop_error"] == "the error text of the stop"
    assert (stopped["attempts"], stopped["progress"]) == (2, 0.5)
    assert stopped["retry_at"] is not None and stopped["claim_token"] is not None

    resumed_at = now + dt.timedelta(seconds=120)
    await operator.resume(db, rid, by="operator", now=resumed_at)
    after = await state(db, rid)
    assert {
        k: after[k]
        for k in (
            "stopped_at",
            "stop_reason",
            "stop_error",
            "claim_token",
            "lease_expires_at",
            "attempts",
            "retry_at",
            "progress",
        )
    } == {
        "stopped_at": None,
        "stop_reason": None,
        "stop_error": None,
        "claim_token": None,
        "lease_expires_at": None,
        "attempts": 0,
        "retry_at": None,
        "progress": None,
    }
    assert after["milestone_entered_at"] == resumed_at  # its time limit starts again
    again = await claimed_job(at(queue, resumed_at))
    assert (again.claim.id, again.attempt, again.in_milestone_s) == (rid, 1, 0)
    # The stopped claim's token is gone with the stop: its writes are refused.
    assert not await at(queue, resumed_at).progress(second, 0.9)


async def test_every_write_of_a_stale_token_is_refused(db: Database, owner_id: int) -> None:
    """The fence on each write: a token that is no longer on its record changes nothing,
    whether another claim holds the record now or nobody does (released, committed)."""
    rids = [await accept(db, owner_id, f"{i}.wav") for i in range(2)]
    now = await db_now(db)
    queue = at(PgQueue(db, table()), now)
    step = table()[RECEIVED]

    async def refused_everywhere(stale: Job, own: str | None = None) -> None:
        """`own`: the write this token itself made last; sent again, it answers as its
        first try did (a retry after a lost reply), still changing nothing."""
        before = await state(db, stale.claim.id)
        late = Saved("save_normalized", ("/late", 9.0))
        assert await queue.commit(stale, step, late) is (own == "commit")
        assert (await queue.fail(stale, step, "late"))[0] == "lease_lost"
        assert await queue.stop(stale, "late_stop", "late") is False
        assert await queue.progress(stale, 0.5) is False
        assert await queue.renew(stale, step) is False
        assert await queue.release(stale, "late") is (own == "release")
        assert await state(db, stale.claim.id) == before

    # Another claim holds the record: its lease ran out and it was claimed again.
    taken = await claimed_job(queue)
    later = at(queue, now, taken.lease_remaining_s + 1)
    holder = await claimed_job(later)
    assert holder.claim.id == taken.claim.id
    await refused_everywhere(taken)
    # Nobody holds it: its holder released it.
    gone = await claimed_job(queue)
    assert gone.claim.id == rids[1]
    assert await queue.release(gone, "worker stopping")
    await refused_everywhere(gone, own="release")
    # The record moved on: committed by its holder.
    assert await later.commit(holder, step, None)
    await refused_everywhere(holder, own="commit")
    assert (await state(db, holder.claim.id))["milestone"] == NORMALIZED
    for rid in rids:
        reached = [e for e in await journal(db, rid) if e["kind"] == "milestone_reached"]
        winners = [holder.claim.token] if rid == rids[0] else []
        assert [e["claim_token"] for e in reached] == winners


async def test_renewal_moves_the_lease_on_postgresql(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    steps = table(lease=Lease(base_s=30))
    queue = at(PgQueue(db, steps), now)
    job = await claimed_job(queue)
    assert (await state(db, rid))["lease_expires_at"] == now + dt.timedelta(seconds=30)
    assert await at(queue, now, 20).renew(job, steps[RECEIVED])
    assert (await state(db, rid))["lease_expires_at"] == now + dt.timedelta(seconds=50)
    # Past the first lease, inside the renewed one: nobody else may claim it.
    assert await at(queue, now, 40).claim() is None
    assert await at(queue, now, 40).commit(job, steps[RECEIVED], None)
    # A stopped record's lease is not renewed.
    nxt = await claimed_job(at(queue, now, 41))
    assert await at(queue, now, 41).stop(nxt, "operator_stop", "")
    before = (await state(db, rid))["lease_expires_at"]
    assert not await at(queue, now, 50).renew(nxt, steps[NORMALIZED])
    assert (await state(db, rid))["lease_expires_at"] == before


async def test_the_lease_is_the_steps_and_grows_with_the_recording(
    db: Database, owner_id: int
) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    base = table()
    steps = StepTable(
        {
            RECEIVED: attrs.evolve(base[RECEIVED], lease=Lease(base_s=10, per_audio_s=1)),
            NORMALIZED: attrs.evolve(base[NORMALIZED], lease=Lease(base_s=100, per_audio_s=2)),
        }
    )
    queue = at(PgQueue(db, steps), now)
    job = await claimed_job(queue)
    assert job.lease_remaining_s == pytest.approx(10)  # no duration known yet
    assert await queue.commit(job, steps[RECEIVED], Saved("save_normalized", ("/a", 50.0)))
    nxt = await claimed_job(queue)
    assert nxt.lease_remaining_s == pytest.approx(100 + 2 * 50)
    assert (await state(db, rid))["lease_expires_at"] == now + dt.timedelta(seconds=200)
    assert await at(queue, now, 150).renew(nxt, steps[NORMALIZED])
    assert (await state(db, rid))["lease_expires_at"] == now + dt.timedelta(seconds=350)
    # Through the shared trip's claim as well (the commit's statement).
    other = await accept(db, owner_id, "b.wav")
    first = await claimed_job(at(queue, now, 1))
    assert first.claim.id == other
    committed, handed = await at(queue, now, 1).commit_then_next(
        first, steps[RECEIVED], Saved("save_normalized", ("/b", 20.0))
    )
    assert committed and handed is not None and handed.claim.id == other
    assert handed.lease_remaining_s == pytest.approx(100 + 2 * 20)


async def test_no_condition_keeps_a_spent_record_out_of_selection(
    db: Database, owner_id: int
) -> None:
    """A record whose holders kept dying (attempts over the limit), one past its
    milestone's time limit, one whose retry pause ended, one whose lease ran out: each
    is selected again, so a worker stops or works it; none waits unseen forever."""
    names = ("over_attempts", "past_time_limit", "pause_over", "lease_over")
    rids = {n: await accept(db, owner_id, f"{n}.wav") for n in names}
    now = await db_now(db)
    # The real limits at `received` (5 attempts, a day), and only its step: a record
    # moved on is not claimed again, so each of the four is worked once.
    steps = StepTable.of([table()[RECEIVED]])
    limit = steps[RECEIVED].max_attempts

    async def set_row(name: str, sql: str, *args: Any) -> None:
        await db.run(lambda con: con.execute(sql, rids[name], *args))

    await set_row(
        "over_attempts",
        "UPDATE recordings SET attempts = $2, claim_token = gen_random_uuid(),"
        " lease_expires_at = $3 WHERE id = $1",
        limit,
        now - dt.timedelta(seconds=1),
    )
    await set_row(
        "past_time_limit",
        "UPDATE recordings SET milestone_entered_at = $2 WHERE id = $1",
        now - dt.timedelta(seconds=steps[RECEIVED].time_limit_s + 3600),
    )
    await set_row(
        "pause_over",
        "UPDATE recordings SET attempts = 1, retry_at = $2 WHERE id = $1",
        now - dt.timedelta(seconds=1),
    )
    await set_row(
        "lease_over",
        "UPDATE recordings SET attempts = 1, claim_token = gen_random_uuid(),"
        " lease_expires_at = $2 WHERE id = $1",
        now,
    )
    queue = at(PgQueue(db, steps), now)
    worker = Worker("w", queue, steps, Wakeup())
    for _ in names:
        assert await worker.work_once()
    reasons = {n: (await state(db, rids[n]))["stop_reason"] for n in names}
    assert reasons == {
        "over_attempts": "worker_lost",
        "past_time_limit": "milestone_time_limit",
        "pause_over": None,
        "lease_over": None,
    }
    for n in ("pause_over", "lease_over"):
        assert (await state(db, rids[n]))["milestone"] == NORMALIZED


async def test_one_record_has_one_claimer_while_another_claim_is_in_flight(
    db: Database, owner_id: int
) -> None:
    """The race forced: another claimer's claim statement has run on the oldest record
    and its transaction is still open (the row locked, the new token not yet visible).
    A claim now passes that record by and takes the next one at once; without SKIP
    LOCKED it would wait for the other transaction (or, without the row lock, take the
    same record) — every time, not one run in ten."""
    rids = [await accept(db, owner_id, f"{i}.wav") for i in range(3)]
    queue = PgQueue(db, table())
    other_token = uuid.uuid4()
    claim_sql = db.sql("claim")
    args = (*queue._claim_args, None, [other_token])
    other = await _connect(db)
    try:
        tx = other.transaction()
        await trio_asyncio_call(tx.start)
        rows = await trio_asyncio_call(other.fetch, claim_sql, *args)
        assert [r["id"] for r in rows] == [rids[0]]
        with trio.fail_after(5):
            mine = await queue.claim()
        assert mine is not None and mine.id == rids[1]
        await trio_asyncio_call(tx.commit)
    finally:
        await trio_asyncio_call(other.close)
    assert (await state(db, rids[0]))["claim_token"] == other_token
    assert (await state(db, rids[1]))["claim_token"] == mine.token
    # Each record counted one attempt, for its one claimer.
    assert [(await state(db, r))["attempts"] for r in rids] == [1, 1, 0]


async def _connect(db: Database) -> asyncpg.Connection:
    return await trio_asyncio_call(asyncpg.connect, db.url)


async def trio_asyncio_call(fn: Any, *args: Any) -> Any:
    import trio_asyncio

    return await trio_asyncio.aio_as_trio(fn)(*args)
