"""The in-memory queue beyond the protocol suite (tests/integration/test_queue_protocol.py,
which runs the same rules against it and the SQL queue): its claim order and counter,
leases that grow with the duration, and its resume."""

from __future__ import annotations

import attrs
import trio

from actors import Lease, StepTable
from actors.testing import MemoryQueue
from tests.helpers.memory_pipeline import (
    LEASE_S,
    NORMALIZED,
    RECEIVED,
    TRANSCRIBED,
    pipeline,
)

STEPS = pipeline()


async def claim_and_read(queue: MemoryQueue):
    claim = await queue.claim()
    assert claim is not None
    job = await queue.read(claim)
    assert job is not None
    return job


async def test_claim_takes_the_oldest_eligible_record_and_none_when_there_is_none(autojump_clock):
    queue = MemoryQueue(STEPS)
    assert await queue.claim() is None
    queue.add("done", TRANSCRIBED)  # the oldest, but no step starts at the final milestone
    z = queue.add("z")
    await trio.sleep(1)
    b = queue.add("b", NORMALIZED)
    a = queue.add("a")  # same entry time: the id breaks the tie
    claims = [await queue.claim() for _ in range(3)]
    assert [c.id for c in claims] == [z, a, b]
    assert len({c.token for c in claims}) == 3
    assert await queue.claim() is None  # all leased
    assert queue.claims == 5


async def test_a_lease_grows_with_the_duration_and_expires(autojump_clock):
    steps = StepTable.of([attrs.evolve(STEPS[NORMALIZED], lease=Lease(10.0, per_audio_s=2.0))])
    queue = MemoryQueue(steps)
    rid = queue.add(milestone=NORMALIZED, inputs={"duration_s": 5.0})
    job = await claim_and_read(queue)
    assert job.lease_remaining_s == 20.0 and job.inputs == {"duration_s": 5.0}
    assert await queue.progress(job, 0.25) is True
    await trio.sleep(19.5)
    assert await queue.claim() is None
    await trio.sleep(0.5)
    again = await queue.claim()
    assert again.id == rid and again.token != job.claim.token
    assert queue.records[rid].progress is None  # the new claim starts from nothing
    assert await queue.read(job.claim) is None  # the old token reads nothing


async def test_stop_keeps_the_milestone_and_resume_clears_the_rest(autojump_clock):
    queue = MemoryQueue(STEPS)
    rid = queue.add()
    job = await claim_and_read(queue)
    assert await queue.resume(rid) is False  # only a stopped record resumes
    assert await queue.stop(job, "too_long", "3 h") is True
    assert await queue.stop(job, "too_long", "again") is False  # stopped once
    assert queue.records[rid].milestone == RECEIVED
    await trio.sleep(LEASE_S + 1)
    assert await queue.claim() is None  # stopped, even with the lease long gone

    await trio.sleep(100)
    assert await queue.resume(rid, by="operator") is True
    rec = queue.records[rid]
    assert (rec.stopped, rec.claim_token, rec.attempts, rec.retry_at) == (False, None, 0, None)
    assert rec.milestone_entered_at == trio.current_time()
    [resumed] = queue.events("resumed")
    assert (resumed.origin, resumed.milestone, resumed.detail) == (
        "human",
        RECEIVED,
        {"by": "operator"},
    )
    assert (await queue.claim()).id == rid
