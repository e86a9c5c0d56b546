"""The queue protocol (actors.Queue), one behaviour suite run against every driver: the
in-memory queue the runtime tests use and the PostgreSQL queue the service uses
(`queue` fixture, tests/integration/conftest.py; drivers in tests/helpers/queue_drivers.py).
A rule one of them breaks fails here under that driver's name. What only one queue has
(the SQL's shared trips and lost-reply repeats, the memory queue's claim counter) is
tested beside it: tests/unit/test_memory_queue.py, tests/integration/test_queue.py."""

from __future__ import annotations

import pytest
from trio.testing import MockClock

from actors import Job, Wakeup, Worker
from tests.helpers.memory_pipeline import (
    BACKOFF,
    LEASE_S,
    MAX_ATTEMPTS,
    NORMALIZED,
    RECEIVED,
    TIME_LIMIT_S,
)
from tests.helpers.queue_drivers import QueueDriver

Clock = MockClock | None  # every test names `queue_clock`: see its fixture


async def claimed(queue: QueueDriver) -> Job:
    claim = await queue.claim()
    assert claim is not None
    job = await queue.read(claim)
    assert job is not None
    return job


async def lease_lost_writes(queue: QueueDriver, rid: object) -> list[str]:
    return [d["write"] for kind, _, d in await queue.journal(rid) if kind == "lease_lost"]


async def test_claim_takes_one_record_with_a_unique_token(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    assert await queue.claim() is None  # nothing at all
    first, second = await queue.add(), await queue.add()
    claims = [await queue.claim(), await queue.claim()]
    assert all(c is not None for c in claims)
    assert sorted(str(c.id) for c in claims) == sorted(str(r) for r in (first, second))  # type: ignore[union-attr]
    assert claims[0].token != claims[1].token  # type: ignore[union-attr]
    assert await queue.claim() is None  # both leased: nothing eligible
    for c in claims:
        assert (await queue.held(c.id)).token == c.token  # type: ignore[union-attr]


@pytest.mark.scenario("pipeline", "The record accepted first is worked on first at every milestone")
async def test_the_record_accepted_first_is_claimed_first_at_every_milestone(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    first = await queue.add()
    queue.advance(5)
    later = await queue.add()
    job = await claimed(queue)
    assert job.claim.id == first
    queue.advance(5)
    assert await queue.commit(job, queue.steps[RECEIVED], None) is True
    # `first` entered `normalized` after `later` entered `received`, and still goes first.
    again = await claimed(queue)
    assert (again.claim.id, again.milestone) == (first, NORMALIZED)
    assert (await claimed(queue)).claim.id == later


async def test_read_gives_milestone_attempt_and_lease(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    rid = await queue.add()
    queue.advance(30)
    claim = await queue.claim()
    assert claim is not None and claim.id == rid
    job = await queue.read(claim)
    assert job is not None and job.claim == claim
    assert (job.milestone, job.attempt) == (RECEIVED, 1)
    assert job.lease_remaining_s == pytest.approx(LEASE_S, abs=0.01)
    assert job.in_milestone_s == pytest.approx(30, abs=1)


async def test_commit_moves_to_the_next_milestone(queue: QueueDriver, queue_clock: Clock) -> None:
    rid = await queue.add()
    job = await claimed(queue)
    assert await queue.commit(job, queue.steps[RECEIVED], None) is True
    held = await queue.held(rid)
    assert (held.milestone, held.token, held.attempts) == (NORMALIZED, None, 0)
    kinds = [(kind, token) for kind, token, _ in await queue.journal(rid)]
    assert kinds[-1] == ("milestone_reached", job.claim.token)
    nxt = await claimed(queue)  # the next step's claim, at once
    assert (nxt.claim.id, nxt.milestone, nxt.attempt) == (rid, NORMALIZED, 1)


async def test_a_stale_tokens_writes_are_refused_and_change_nothing(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    rid = await queue.add()
    stale = await claimed(queue)
    queue.advance(LEASE_S + 0.5)  # the lease ran out: another worker claims
    fresh = await claimed(queue)
    assert fresh.claim.token != stale.claim.token
    before = await queue.held(rid)
    step = queue.steps[RECEIVED]

    assert await queue.commit(stale, step, None) is False
    assert await queue.fail(stale, step, "late failure") == ("lease_lost", None)
    assert await queue.stop(stale, "late_stop", "too late") is False
    assert await queue.progress(stale, 0.5) is False
    assert await queue.renew(stale, step) is False
    assert await queue.release(stale, "late release") is False

    assert await queue.held(rid) == before
    assert sorted(await lease_lost_writes(queue, rid)) == sorted(
        ["commit", "fail", "stop", "progress", "renew", "release"]
    )
    assert {t for k, t, _ in await queue.journal(rid) if k == "lease_lost"} == {stale.claim.token}
    assert await queue.commit(fresh, step, None) is True  # the live holder's write wins
    assert (await queue.held(rid)).milestone == NORMALIZED


async def test_the_lease_expires_and_the_record_is_claimable_again(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    rid = await queue.add()
    first = await claimed(queue)
    assert await queue.progress(first, 0.25) is True
    queue.advance(LEASE_S - 0.5)
    assert await queue.claim() is None  # still leased
    queue.advance(1)
    again = await claimed(queue)
    assert again.claim.id == rid and again.claim.token != first.claim.token
    assert again.attempt == 2  # a lost holder's claim counts as an attempt
    assert (await queue.held(rid)).progress is None  # the new claim starts from nothing
    assert await queue.read(first.claim) is None  # the old token reads nothing


async def test_renew_extends_the_lease_for_its_holder(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    await queue.add()
    job = await claimed(queue)
    step = queue.steps[RECEIVED]
    queue.advance(LEASE_S * 0.75)
    assert await queue.renew(job, step) is True
    queue.advance(LEASE_S * 0.75)  # past the first lease, inside the renewed one
    assert await queue.claim() is None
    assert await queue.progress(job, 0.5) is True
    assert await queue.commit(job, step, None) is True


async def test_fail_pauses_then_stops_once_attempts_are_exhausted(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    rid = await queue.add()
    step = queue.steps[RECEIVED]
    for attempt in range(1, MAX_ATTEMPTS):
        job = await claimed(queue)
        assert job.attempt == attempt
        outcome, pause = await queue.fail(job, step, "boom")
        ceiling = min(BACKOFF.cap_s, BACKOFF.base_s * 2 ** (attempt - 1))
        assert outcome == "retry" and pause is not None and ceiling / 2 <= pause <= ceiling
        assert (await queue.held(rid)).token is None
        queue.advance(pause - 0.01)
        assert await queue.claim() is None  # still pausing
        queue.advance(0.02)
    job = await claimed(queue)
    assert job.attempt == MAX_ATTEMPTS
    assert await queue.fail(job, step, "boom") == ("stopped", None)
    held = await queue.held(rid)
    assert (held.milestone, held.attempts, held.stop_reason) == (
        RECEIVED,
        MAX_ATTEMPTS,
        "attempts_exhausted",
    )
    queue.advance(BACKOFF.cap_s + LEASE_S)
    assert await queue.claim() is None  # stopped for good
    kinds = [k for k, _, _ in await queue.journal(rid)]
    assert kinds == ["accepted"] + ["attempt_failed"] * MAX_ATTEMPTS + ["stopped"]


async def test_stop_parks_the_record_at_its_milestone(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    rid = await queue.add()
    job = await claimed(queue)
    assert await queue.stop(job, "too_long", "3 h") is True
    held = await queue.held(rid)
    assert (held.milestone, held.stop_reason) == (RECEIVED, "too_long")
    queue.advance(LEASE_S + 1)
    assert await queue.claim() is None  # stopped, even with the lease long gone
    assert await queue.next_job() is None


async def test_release_hands_the_record_back_at_once(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    rid = await queue.add()
    job = await claimed(queue)
    assert await queue.release(job, "worker stopping") is True
    held = await queue.held(rid)
    assert (held.token, held.attempts) == (None, 0)  # not an attempt
    again = await claimed(queue)  # long before the old lease would have ended
    assert again.claim.id == rid and again.attempt == 1
    assert await queue.progress(job, 0.5) is False  # the old claim is fenced out
    assert (await queue.held(rid)).token == again.claim.token
    events = [(k, t) for k, t, _ in await queue.journal(rid)]
    assert ("released", job.claim.token) in events


async def test_commit_then_next_commits_and_claims_the_next(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    a, b, c = await queue.add(), await queue.add(), await queue.add()
    queue.advance(1)
    job = await claimed(queue)
    assert job.claim.id == a
    committed, nxt = await queue.commit_then_next(job, queue.steps[RECEIVED], None)
    assert committed is True and nxt is not None
    # The trip prefers the other eligible records to the one it commits: b is next.
    assert (nxt.claim.id, nxt.milestone) == (b, RECEIVED)
    assert (await queue.held(a)).milestone == NORMALIZED
    # A stale commit is refused, and the call still claims the next record.
    queue.advance(LEASE_S + 1)
    first = await claimed(queue)
    assert (first.claim.id, first.milestone) == (a, NORMALIZED)  # accepted first
    fresh = await claimed(queue)  # b again, its lease over
    assert fresh.claim.id == b and fresh.claim.token != nxt.claim.token
    committed, after = await queue.commit_then_next(nxt, queue.steps[RECEIVED], None)
    assert committed is False and after is not None
    assert (after.claim.id, after.milestone) == (c, RECEIVED)
    held = await queue.held(b)
    assert (held.milestone, held.token) == (RECEIVED, fresh.claim.token)
    # Nothing else is eligible now: the trip hands out the record it just committed.
    committed, last = await queue.commit_then_next(after, queue.steps[RECEIVED], None)
    assert committed is True and last is not None
    assert (last.claim.id, last.milestone) == (c, NORMALIZED)


async def test_next_job_is_none_when_nothing_is_eligible(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    assert await queue.next_job() is None
    rid = await queue.add()
    job = await queue.next_job()
    assert job is not None and job.claim.id == rid
    assert await queue.next_job() is None


async def test_a_record_past_its_milestone_time_limit_is_stopped(
    queue: QueueDriver, queue_clock: Clock
) -> None:
    within, past = await queue.add(), await queue.add()
    worker = Worker("w", queue, queue.steps, Wakeup())
    # The first record's step runs after most of the limit: the limit counts the time
    # at its milestone, which the queue measures.
    queue.advance(TIME_LIMIT_S - 60)
    assert await worker.work_once()
    assert (await queue.held(within)).milestone == NORMALIZED
    queue.advance(61)
    # Accepted first, it is claimed first at each later milestone too, each entered just
    # now, and finishes; then the other record is past its limit.
    while (await queue.held(within)).milestone not in queue.steps.final:
        assert await worker.work_once()
    assert (await queue.held(within)).stop_reason is None
    assert await worker.work_once()
    held = await queue.held(past)
    assert (held.milestone, held.stop_reason) == (RECEIVED, "milestone_time_limit")
