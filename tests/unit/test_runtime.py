"""The worker actor and its wake-ups on the in-memory queue, under trio's virtual clock.

Races are forced with events and `wait_all_tasks_blocked`, never hoped for with sleeps.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Hashable

import attrs
import pytest
import trio
import trio.testing

from actors import StopRecord, Wakeup, Worker
from actors.testing import MemoryQueue
from tests.helpers.memory_pipeline import (
    BACKOFF,
    LEASE_S,
    MAX_ATTEMPTS,
    NORMALIZED,
    RECEIVED,
    RUN_LIMIT_S,
    TIME_LIMIT_S,
    TRANSCRIBED,
    pipeline,
    rig,
    single,
    until,
)


def warnings_and_worse(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_record_goes_through_both_steps_to_the_final_milestone(autojump_clock):
    seen: list[tuple[str, float]] = []

    async def normalize(job, progress):
        await trio.sleep(1)
        return "16 kHz mono"

    async def recognize(job, progress):
        for fraction in (0.5, 1.0):
            await trio.sleep(1)
            await progress(fraction)
            seen.append((job.milestone, fraction))
        return "hello"

    queue, wakeup, [worker] = rig(pipeline(normalize, recognize), poll_s=5)
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await until(lambda: queue.records[rid].milestone == TRANSCRIBED)
        wakeup.close()

    rec = queue.records[rid]
    assert rec.results == {"normalize": "16 kHz mono", "recognize": "hello"}
    assert seen == [(NORMALIZED, 0.5), (NORMALIZED, 1.0)]
    assert [e.milestone for e in queue.events("milestone_reached")] == [NORMALIZED, TRANSCRIBED]
    # Committed records carry no claim: nothing is left for a lease to expire on.
    assert (rec.claim_token, rec.lease_expires_at, rec.attempts, rec.progress) == (
        None,
        None,
        0,
        None,
    )
    assert not queue.events("lease_lost")


@attrs.define(eq=False)
class ClockedQueue(MemoryQueue):
    """Notes when each claim was made."""

    claimed_at: list[float] = attrs.field(factory=list)

    async def claim(self, **kw):
        self.claimed_at.append(trio.current_time())
        return await super().claim(**kw)


async def test_no_work_logs_nothing_and_polls_without_a_busy_loop(autojump_clock, caplog):
    caplog.set_level(logging.DEBUG)
    steps = pipeline()
    queue = ClockedQueue(steps)
    wakeup = Wakeup(poll_s=5.0)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(Worker("w", queue, steps, wakeup).run)
        await trio.sleep(3600)
        wakeup.close()
    # The poll waits 5 s × [0.5, 1.5]: at least 2.5 s between two empty claims, and
    # about 5 s on average.
    assert 3600 / 6 <= queue.claims <= 3600 / 4
    gaps = [b - a for a, b in itertools.pairwise(queue.claimed_at)]
    assert min(gaps) >= 2.5 and max(gaps) <= 7.5
    assert warnings_and_worse(caplog) == []


async def test_a_hint_wakes_an_idle_worker_at_once(autojump_clock):
    queue, wakeup, [worker] = rig(pipeline())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await trio.testing.wait_all_tasks_blocked()
        assert (queue.claims, wakeup.waiting) == (1, 1)
        t0 = trio.current_time()

        rid = queue.add()
        wakeup.wake_one()
        await trio.testing.wait_all_tasks_blocked()

        assert queue.records[rid].milestone == TRANSCRIBED
        assert [e.at for e in queue.events("milestone_reached")] == [t0, t0]
        assert trio.current_time() == t0
        wakeup.close()


@attrs.define(eq=False)
class GatedQueue(MemoryQueue):
    """Holds the answer of each claim until the test opens the gate: the window between
    an empty claim and the wait, held open."""

    gate: trio.Event | None = None
    answered: trio.Event | None = None

    async def claim(self, **kw):
        claim = await super().claim(**kw)
        if self.gate is not None:
            assert self.answered is not None
            self.answered.set()
            await self.gate.wait()
        return claim


async def test_a_hint_between_an_empty_claim_and_the_wait_is_not_lost(autojump_clock):
    steps = pipeline()
    queue = GatedQueue(steps)
    wakeup = Wakeup(poll_s=1000.0)
    queue.gate, queue.answered = trio.Event(), trio.Event()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(Worker("w", queue, steps, wakeup).run)
        await queue.answered.wait()  # the claim found nothing and is on its way back
        t0 = trio.current_time()
        rid = queue.add()
        wakeup.wake_one()  # nobody is parked yet: only `seq` can carry this hint
        assert wakeup.waiting == 0
        queue.gate.set()
        queue.gate = None
        await trio.testing.wait_all_tasks_blocked()

        assert queue.records[rid].milestone == TRANSCRIBED
        assert trio.current_time() == t0  # not the poll, which is ≥ 500 s away
        wakeup.close()


async def test_a_finder_wakes_a_peer_because_there_may_be_more(autojump_clock):
    inside = {"n": 0}
    release = trio.Event()

    async def hold(job, progress):
        inside["n"] += 1
        await release.wait()

    queue, wakeup, workers = rig(single(hold), workers=2)
    async with trio.open_nursery() as nursery:
        for w in workers:
            nursery.start_soon(w.run)
        await trio.testing.wait_all_tasks_blocked()
        t0 = trio.current_time()
        queue.add(), queue.add()
        wakeup.wake_one()  # one hint for two records
        await trio.testing.wait_all_tasks_blocked()
        assert inside["n"] == 2
        assert trio.current_time() == t0
        release.set()
        wakeup.close()
    assert len(queue.events("milestone_reached")) == 2


@pytest.mark.scenario("pipeline", "A hung step is cut at its run limit")
async def test_a_step_outliving_its_run_limit_is_cancelled_and_retried_when_due(
    autojump_clock, caplog
):
    starts: list[float] = []
    late: list[float] = []

    async def hung_then_quick(job, progress):
        starts.append(trio.current_time())
        if len(starts) == 1:
            await trio.sleep(RUN_LIMIT_S + 5)  # alive (the lease is renewed) but hung
            late.append(trio.current_time())  # must never run: the run limit cut it off
            return "late"
        return "on time"

    queue, wakeup, [worker] = rig(single(hung_then_quick))
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await until(lambda: queue.records[rid].milestone == NORMALIZED, limit_s=120)
        wakeup.close()

    rec = queue.records[rid]
    assert late == []
    assert rec.results == {"normalize": "on time"}
    [failed] = queue.events("attempt_failed")
    assert failed.at == starts[0] + RUN_LIMIT_S  # cut at the run limit, no later
    assert failed.detail["attempt"] == 1 and "run limit" in failed.detail["error"]
    pause = failed.detail["retry_at"] - failed.at
    assert BACKOFF.base_s / 2 <= pause <= BACKOFF.base_s
    # Woken by the retry's due time (the poll is ≥ 500 s), not a moment later.
    assert starts[1] == pytest.approx(failed.detail["retry_at"])
    [reached] = queue.events("milestone_reached")
    assert reached.token != failed.token  # the retry held a claim of its own
    assert reached.detail["attempt"] == 2
    assert queue.events("lease_lost") == []  # renewed all along, never lost
    assert "attempt_failed" in caplog.text


@pytest.mark.scenario("pipeline", "A slow step that is alive completes once")
async def test_a_slow_step_that_is_alive_keeps_its_claim_and_completes_once(autojump_clock):
    """Slower than its lease many times over, but its worker lives: the heartbeat
    renews the lease, so no other worker takes the record and nothing is redone."""
    runs: list[float] = []

    async def slow(job, progress):
        runs.append(trio.current_time())
        await trio.sleep(5 * LEASE_S)
        return "slow but done"

    queue, wakeup, workers = rig(single(slow), poll_s=1.0, workers=2)
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        for w in workers:
            nursery.start_soon(w.run)
        await until(lambda: queue.records[rid].milestone == NORMALIZED, limit_s=120)
        wakeup.close()

    assert len(runs) == 1  # the idle peer polled all along and never got the record
    [reached] = queue.events("milestone_reached")
    assert reached.detail["attempt"] == 1
    # One renewal per third of the lease while the step ran, journaled with the commit.
    assert queue.renewals == reached.detail["renewals"] >= 5 * 3 - 1
    assert queue.events("lease_lost") == [] and queue.events("attempt_failed") == []


@attrs.define(eq=False)
class FreezableQueue(MemoryQueue):
    """A memory queue whose renewals from one frozen holder never arrive, as from a
    SIGSTOPped process: no sign of life."""

    frozen: set[Hashable] = attrs.field(factory=set)

    async def renew(self, job, step):
        if job.claim.token in self.frozen:
            await trio.sleep_forever()
        return await super().renew(job, step)


@pytest.mark.scenario("pipeline", "A frozen holder loses its lease")
async def test_a_frozen_holder_still_loses_its_lease(autojump_clock):
    thaw = trio.Event()
    runs: list[int] = []

    async def step(job, progress):
        runs.append(job.attempt)
        if job.attempt == 1:
            queue.frozen.add(job.claim.token)
            with trio.CancelScope(shield=True):  # frozen: deaf to its own lease too
                await thaw.wait()
            return "stale"
        return "fresh"

    steps = single(step)
    queue = FreezableQueue(steps)
    queue.frozen = set()
    wakeup = Wakeup(1.0)
    workers = [Worker(f"w{i}", queue, steps, wakeup) for i in range(2)]
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        for w in workers:
            nursery.start_soon(w.run)
        # The other worker takes the record once the lease runs out unrenewed.
        await until(lambda: queue.records[rid].milestone == NORMALIZED, limit_s=120)
        thaw.set()
        await trio.testing.wait_all_tasks_blocked()
        wakeup.close()

    assert runs == [1, 2]
    rec = queue.records[rid]
    assert rec.results == {"normalize": "fresh"}
    [reached] = queue.events("milestone_reached")
    assert reached.detail["attempt"] == 2 and reached.at >= LEASE_S
    [lost] = queue.events("lease_lost")  # the thawed holder's late write, refused
    assert lost.token in queue.frozen


@pytest.mark.scenario("pipeline", "A record whose holders keep dying stops with worker_lost")
async def test_a_record_whose_holders_keep_dying_stops_worker_lost(autojump_clock, caplog):
    """Each claim counts an attempt: holders that die without a word (here, claims
    dropped on the floor) use them up, and the next claimer stops the record."""
    ran: list[int] = []

    async def step(job, progress):
        ran.append(job.attempt)

    queue, wakeup, [worker] = rig(single(step))
    rid = queue.add()
    for _ in range(MAX_ATTEMPTS):
        assert (await queue.next_job()).claim.id == rid  # the holder dies here
        await trio.sleep(LEASE_S)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await until(lambda: queue.records[rid].stopped, limit_s=60)
        wakeup.close()

    assert ran == []  # never run again
    rec = queue.records[rid]
    assert (rec.milestone, rec.stop_reason) == (RECEIVED, "worker_lost")
    assert f"last of {MAX_ATTEMPTS} attempts" in rec.stop_error
    [stopped] = queue.events("stopped")
    assert stopped.detail["reason"] == "worker_lost"
    assert "reason=worker_lost" in caplog.text
    # Resume gives it its attempts back.
    assert await queue.resume(rid)
    assert queue.records[rid].attempts == 0


async def test_a_progress_write_that_finds_the_token_gone_cancels_the_step_at_once(
    autojump_clock, caplog
):
    steal = trio.Event()
    after: list[str] = []

    async def reports(job, progress):
        await progress(0.1)
        await steal.wait()
        await progress(0.5)
        after.append("ran on")  # must never run: the claim is gone

    queue, wakeup, [worker] = rig(single(reports))
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await trio.testing.wait_all_tasks_blocked()
        assert queue.records[rid].progress == 0.1
        t0 = trio.current_time()
        queue.records[rid].claim_token = "another claimer's"  # as if it had lost the lease
        steal.set()
        await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() == t0
        wakeup.close()

    assert after == []
    rec = queue.records[rid]
    assert (rec.milestone, rec.results, rec.attempts) == (RECEIVED, {}, 1)
    assert [e.detail["write"] for e in queue.events("lease_lost")] == ["progress"]
    assert queue.events("milestone_reached") == [] and queue.events("attempt_failed") == []
    assert "event=lease_lost" in caplog.text


async def test_stop_record_stops_with_its_reason(autojump_clock, caplog):
    runs: list[int] = []

    async def undecodable(job, progress):
        runs.append(job.attempt)
        raise StopRecord("undecodable_audio", "no audio stream")

    queue, wakeup, [worker] = rig(single(undecodable), poll_s=5)
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await trio.sleep(600)  # long enough that a retry, were there one, would show
        wakeup.close()

    rec = queue.records[rid]
    assert runs == [1]
    assert (rec.milestone, rec.stop_reason, rec.stop_error) == (
        RECEIVED,
        "undecodable_audio",
        "no audio stream",
    )
    assert rec.attempts == 1 and queue.events("attempt_failed") == []
    assert [e.detail["reason"] for e in queue.events("stopped")] == ["undecodable_audio"]
    assert any(
        r.levelno == logging.ERROR and "undecodable_audio" in r.getMessage() for r in caplog.records
    )


async def test_a_failing_step_retries_with_backoff_then_stops_attempts_exhausted(autojump_clock):
    runs: list[float] = []

    async def broken(job, progress):
        runs.append(trio.current_time())
        raise ValueError("model file truncated\nmore detail")

    queue, wakeup, [worker] = rig(single(broken))
    rid = queue.add()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await until(lambda: queue.records[rid].stopped, limit_s=60)
        await trio.sleep(3600)  # a stopped record is not run again
        wakeup.close()

    rec = queue.records[rid]
    assert len(runs) == MAX_ATTEMPTS == 3
    pauses = [b - a for a, b in itertools.pairwise(runs)]
    assert BACKOFF.base_s / 2 <= pauses[0] <= BACKOFF.base_s
    assert BACKOFF.base_s <= pauses[1] <= 2 * BACKOFF.base_s
    assert (rec.milestone, rec.stop_reason, rec.attempts) == (RECEIVED, "attempts_exhausted", 3)
    assert rec.stop_error == "ValueError: model file truncated"
    assert [e.detail["attempt"] for e in queue.events("attempt_failed")] == [1, 2, 3]
    assert len(queue.events("stopped")) == 1


async def test_a_record_over_its_milestone_time_limit_is_stopped_without_running(autojump_clock):
    ran: list[str] = []

    async def step(job, progress):
        ran.append(job.milestone)

    queue, wakeup, [worker] = rig(single(step))
    old = queue.add()
    await trio.sleep(TIME_LIMIT_S + 1)
    fresh = queue.add()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(worker.run)
        await trio.testing.wait_all_tasks_blocked()
        wakeup.close()

    assert ran == [RECEIVED]  # the fresh one only
    rec = queue.records[old]
    assert (rec.milestone, rec.stop_reason) == (RECEIVED, "milestone_time_limit")
    assert "limit 3600s" in rec.stop_error
    assert queue.records[fresh].milestone == NORMALIZED
