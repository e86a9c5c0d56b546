"""The 14 scenarios of the pipeline spec, on a real PostgreSQL."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import attrs
import pytest
import trio
import trio_asyncio

from actors import Claim, StopRecord, Wakeup, Worker
from tests.helpers.pg_pipeline import (
    FAST_RETRY,
    Gate,
    accept,
    at,
    db_now,
    journal,
    outbound_connects,
    state,
    table,
)
from transcriber.db.database import Database
from transcriber.pipeline import operator
from transcriber.pipeline.operator import card
from transcriber.pipeline.pg_queue import PgQueue, Saved

pytestmark = pytest.mark.usefixtures("owner_id")


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("pipeline", title)


def worker(queue: PgQueue, name: str = "w") -> Worker:
    return Worker(name, queue, queue.steps, Wakeup())


async def wait_for_lock_waiters(db: Database, n: int) -> None:
    """Until `n` sessions of this database wait on a lock: the race is then set up."""
    sql = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock'"
    )
    while await db.run(lambda con: con.fetchval(sql)) < n:
        await trio.sleep(0.005)


# --- A claim is indivisible -------------------------------------------------------------


@scenario("Three claim at once")
async def test_three_claim_at_once(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    queue = PgQueue(db, table())
    results: list[Any] = []

    async def claim() -> None:
        results.append(await queue.claim())

    # Hold the table so all three claims are inside their statement before any runs on.
    async def hold_table(locked: trio.Event, release: trio.Event) -> None:
        async def hold(con: Any) -> None:
            async with con.transaction():
                await con.execute("LOCK TABLE recordings IN EXCLUSIVE MODE")
                locked.set()
                await trio_asyncio.trio_as_aio(release.wait)()

        await db.run(hold)

    locked, release = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(hold_table, locked, release)
        await locked.wait()
        for _ in range(3):
            nursery.start_soon(claim)
        await wait_for_lock_waiters(db, 3)
        release.set()
    won = [c for c in results if c is not None]
    assert len(results) == 3
    assert len(won) == 1 and won[0].id == rid
    assert results.count(None) == 2  # "no work right now", not an error


@scenario("A claimed record is not handed out twice")
async def test_claimed_record_not_handed_out_twice(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    queue = PgQueue(db, table())
    first = await at(queue, now).claim()
    assert first is not None and first.id == rid
    lease = (await state(db, rid))["lease_expires_at"]
    # Any time before the lease expires, the record is not handed out again.
    assert await at(queue, now, 1).claim() is None
    just_before = (lease - now).total_seconds() - 0.001
    assert await at(queue, now, just_before).claim() is None


@scenario("The claim returns the id and its token")
async def test_claim_returns_id_and_token(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    queue = PgQueue(db, table())
    claim_sql = db.sql("claim")
    token = uuid.uuid4()  # the caller makes the token, fresh for each claim
    row = await db.run(lambda con: con.fetchrow(claim_sql, *queue._claim_args, None, [token]))
    # The statement returns exactly these two columns, nothing else of the record.
    assert list(row.keys()) == ["id", "claim_token"]
    assert row["id"] == rid
    stored = await state(db, rid)
    assert stored["claim_token"] == row["claim_token"] == token
    # The step's inputs come from a separate, ordinary read.
    job = await queue.read(Claim(row["id"], row["claim_token"]))
    assert job is not None and job.milestone == "received"
    assert job.inputs["source_path"] == "/uploads/a.wav"
    assert 0 < job.lease_remaining_s <= queue.steps["received"].lease.base_s


@scenario("A re-issued claim has a different token")
async def test_reissued_claim_has_different_token(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    queue = PgQueue(db, table())
    first = await queue.claim()
    job = await queue.read(first)
    assert await queue.stop(job, "test_stop", "stopped by the test")
    await operator.resume(queue.db, rid, by="tester", now=queue.now, patience_s=queue.patience_s)
    second = await queue.claim()
    assert second is not None and second.id == rid
    assert second.token != first.token


# --- Only the claim holder writes the result ---------------------------------------------


@scenario("The owner's edit survives the step's save")
async def test_owner_edit_survives_step_save(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    gate = Gate(result=Saved("save_normalized", ("/store/a.flac", 12.5)))
    w = worker(PgQueue(db, table(normalize=gate)))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(w.work_once)
        await gate.entered.wait()
        # The owner edits while the step holds its claim.
        await db.fetchval(
            "edit_owner_fields",
            owner_id,
            rid,
            "Board meeting",
            "Q3 budget",
            ["budget", "q3"],
            {"by": "owner"},
        )
        gate.open.set()
    after = await state(db, rid)
    assert after["milestone"] == "normalized"
    assert after["duration_s"] == 12.5  # the result is written
    assert (after["title"], after["summary"], list(after["topics"])) == (
        "Board meeting",
        "Q3 budget",
        ["budget", "q3"],
    )  # and the edit is still there


@scenario("The claim left under a working step")
async def test_claim_left_under_working_step(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    gate = Gate(result=Saved("save_normalized", ("/store/first.flac", 1.0)))
    queue = PgQueue(db, table(normalize=gate))
    first = at(queue, now)
    w = worker(first, "first")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(w.work_once)
        await gate.entered.wait()
        first_token = (await state(db, rid))["claim_token"]
        # The lease runs out under the working step; another worker claims the record.
        later = at(queue, now, queue.steps["received"].lease.base_s + 1)
        second = await later.claim()
        assert second is not None and second.id == rid
        gate.open.set()
    after = await state(db, rid)
    assert after["milestone"] == "received" and after["audio_path"] is None
    assert after["claim_token"] == second.token  # the second claim is untouched
    lost = [e for e in await journal(db, rid) if e["kind"] == "lease_lost"]
    assert [e["claim_token"] for e in lost] == [first_token]


@scenario("A person resumed the record under a working step")
async def test_person_resumed_under_working_step(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    gate = Gate(result=Saved("save_normalized", ("/store/first.flac", 1.0)))
    queue = PgQueue(db, table(normalize=gate))
    w = worker(at(queue, now), "first")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(w.work_once)
        await gate.entered.wait()
        # The record was stopped (by a later claimer), a person resumes it, which
        # releases the claim, and another worker takes it.
        later = at(queue, now, queue.steps["received"].lease.base_s + 1)
        b = await later.read(await later.claim())
        assert await later.stop(b, "test_stop", "stopped while the first step ran")
        await operator.resume(
            later.db, rid, by="operator", now=later.now, patience_s=later.patience_s
        )
        third = await later.claim()
        assert third is not None and third.id == rid
        gate.open.set()
    after = await state(db, rid)
    assert after["milestone"] == "received" and after["audio_path"] is None
    assert after["claim_token"] == third.token
    kinds = [(e["origin"], e["kind"]) for e in await journal(db, rid)]
    assert ("human", "resumed") in kinds and kinds[-1] == ("pipeline", "lease_lost")


# --- Stopping is a flag, not a milestone -------------------------------------------------


@scenario("A stopped record continues where it stopped")
async def test_stopped_record_continues_where_it_stopped(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    normalized: list[Any] = []
    recognized: list[Any] = []

    async def normalize(job: Any, progress: Any) -> Saved:
        normalized.append(job.claim.id)
        return Saved("save_normalized", ("/store/a.flac", 3.0))

    async def failing(job: Any, progress: Any) -> None:
        raise RuntimeError("recognizer unavailable")

    async def recognize(job: Any, progress: Any) -> Saved:
        recognized.append(job.milestone)
        return Saved("save_transcript", ("hello", [], "en", "test"))

    steps = table(normalize=normalize, recognize=failing, max_attempts=2, **FAST_RETRY)
    w = worker(PgQueue(db, steps))
    while (await state(db, rid))["stopped_at"] is None:
        if not await w.work_once():
            await trio.sleep(0.002)  # the retry pause is 1 ms of database time
    stopped = await state(db, rid)
    assert (stopped["milestone"], stopped["stop_reason"]) == ("normalized", "attempts_exhausted")

    await operator.resume(db, rid, by="operator")
    healed = worker(PgQueue(db, table(normalize=normalize, recognize=recognize)))
    assert await healed.work_once()
    assert recognized == ["normalized"]  # recognition came next
    assert normalized == [rid]  # and normalization ran once, before the stop
    reached = [e["milestone"] for e in await journal(db, rid) if e["kind"] == "milestone_reached"]
    assert reached == ["normalized", "transcribed"]


@scenario("A stopped record is not handed to a claim")
async def test_stopped_record_not_handed_to_claim(db: Database, owner_id: int) -> None:
    await accept(db, owner_id)
    now = await db_now(db)
    queue = PgQueue(db, table())
    job = await queue.read(await at(queue, now).claim())
    assert await queue.stop(job, "test_stop", "parked")
    # Neither now nor long after every lease and pause would have ended.
    assert await at(queue, now).claim() is None
    assert await at(queue, now, 365 * 24 * 3600).claim() is None


@scenario("Resuming resets every guard")
async def test_resuming_resets_every_guard(db: Database, owner_id: int, caplog: Any) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    queue = PgQueue(db, table())
    limit = queue.steps["received"].time_limit_s
    # A failed attempt: failures counted and a retry pause set.
    job = await at(queue, now).read(await at(queue, now).claim())
    outcome, _ = await at(queue, now).fail(job, queue.steps["received"], "boom")
    assert outcome == "retry"
    # Long after, past the time limit, a claimer finds it over the limit and stops it.
    late = at(queue, now, limit + 10)
    assert await worker(late).work_once()
    stopped = await state(db, rid)
    assert stopped["stop_reason"] == "milestone_time_limit"
    # Two claims counted: the failed attempt's, and the claimer's that stopped it.
    assert stopped["attempts"] == 2 and stopped["retry_at"] is not None

    later = at(queue, now, 2 * limit)
    await operator.resume(later.db, rid, by="operator", now=later.now, patience_s=later.patience_s)
    resumed = await state(db, rid)
    assert resumed["attempts"] == 0 and resumed["retry_at"] is None
    assert resumed["milestone_entered_at"] == later.now
    # The next claim hands it out and the step runs instead of stopping it again.
    ran = Gate()
    ran.open.set()
    assert await worker(attrs.evolve(later, steps=later.steps.replace(normalize=ran))).work_once()
    assert ran.ran_to_end
    assert (await state(db, rid))["milestone"] == "normalized"


@scenario("Resuming frees the claim")
async def test_resuming_frees_the_claim(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    now = await db_now(db)
    queue = at(PgQueue(db, table()), now)
    job = await queue.read(await queue.claim())
    assert await queue.stop(job, "test_stop", "parked with its claim")
    held = await state(db, rid)
    assert held["claim_token"] == job.claim.token and held["lease_expires_at"] > now

    await operator.resume(queue.db, rid, by="operator", now=queue.now, patience_s=queue.patience_s)
    freed = await state(db, rid)
    assert freed["claim_token"] is None and freed["lease_expires_at"] is None
    # Handed out at once, long before the old lease would have expired.
    again = await at(queue, now, 1).claim()
    assert again is not None and again.id == rid


@scenario("Resuming shows in the journal")
async def test_resuming_shows_in_journal(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)
    queue = PgQueue(db, table())
    job = await queue.read(await queue.claim())
    assert await queue.stop(job, "test_stop", "parked")
    await operator.resume(
        queue.db, rid, by="operator-ann", now=queue.now, patience_s=queue.patience_s
    )
    events = await journal(db, rid)
    human = [e for e in events if e["origin"] == "human"]
    assert [(e["kind"], e["milestone"], e["detail"]["by"]) for e in human] == [
        ("resumed", "received", "operator-ann")
    ]
    assert all(e["origin"] == "pipeline" for e in events if e["kind"] != "resumed")


# --- The pipeline sends nothing back to the sender ---------------------------------------


@scenario("The text does not go to the sender")
async def test_text_does_not_go_to_sender(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)

    async def recognize(job: Any, progress: Any) -> Saved:
        return Saved("save_transcript", ("the quarterly numbers", [], "en", "test"))

    with outbound_connects() as connects:
        w = worker(PgQueue(db, table(recognize=recognize)))
        assert await w.work_once() and await w.work_once()
    assert (await state(db, rid))["milestone"] == "transcribed"
    assert connects == []
    # The text waits at the record's own address.
    assert (await db.fetchrow("transcript", rid))["text"] == "the quarterly numbers"


@scenario("A stop shows on the card, not in a message")
async def test_stop_shows_on_card(db: Database, owner_id: int, caplog: Any) -> None:
    rid = await accept(db, owner_id)

    async def broken(job: Any, progress: Any) -> None:
        raise ValueError("decoder crashed")

    w = worker(PgQueue(db, table(normalize=broken, max_attempts=1)))
    caplog.set_level(logging.INFO, logger="transcriber")
    assert await w.work_once()
    shown = await card(db, rid)
    assert shown is not None
    assert shown["milestone"] == "received" and shown["done"] is False
    assert shown["stopped"]["reason"] == "attempts_exhausted"
    assert "decoder crashed" in shown["stopped"]["error"]
    stops = [r.getMessage() for r in caplog.records if "event=stopped" in r.getMessage()]
    assert len(stops) == 1
    assert "reason=attempts_exhausted" in stops[0] and f"id={rid}" in stops[0]
    assert "decoder crashed" in stops[0]


async def test_step_stop_record_keeps_milestone(db: Database, owner_id: int) -> None:
    rid = await accept(db, owner_id)

    async def hopeless(job: Any, progress: Any) -> None:
        raise StopRecord("empty_audio", "the file decodes to nothing")

    assert await worker(PgQueue(db, table(normalize=hopeless))).work_once()
    after = await state(db, rid)
    assert (after["milestone"], after["stop_reason"], after["attempts"]) == (
        "received",
        "empty_audio",
        1,
    )  # its one claim; no retry


@scenario("A result the database refuses fails the attempt, and the worker lives")
async def test_refused_result_fails_the_attempt_and_the_worker_lives(
    db: Database, owner_id: int
) -> None:
    first = await accept(db, owner_id, "first.wav")
    second = await accept(db, owner_id, "second.wav")

    async def step(job: Any, progress: Any) -> Saved:
        # PostgreSQL text cannot hold NUL: a result no cleaning at the edge caught.
        path = "/a\x00.wav" if job.claim.id == first else "/b.wav"
        return Saved("save_normalized", (path, 1.0))

    w = worker(PgQueue(db, table(normalize=step)))
    assert await w.work_once()  # no exception: the worker carries on
    assert await w.work_once()
    refused = await state(db, first)
    assert (refused["milestone"], refused["attempts"], refused["claim_token"]) == (
        "received",
        1,
        None,
    )
    assert refused["retry_at"] is not None and refused["stopped_at"] is None
    [failed] = [e for e in await journal(db, first) if e["kind"] == "attempt_failed"]
    assert "invalid byte sequence" in failed["detail"]["error"]  # the database's message
    assert (await state(db, second))["milestone"] == "normalized"
