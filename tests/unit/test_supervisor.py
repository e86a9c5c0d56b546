"""The supervisor: one-for-one restarts with backoff, and the graceful drain."""

from __future__ import annotations

import itertools
import random

import trio
import trio.testing

from actors import Backoff, Child, Supervisor
from tests.helpers.memory_pipeline import LEASE_S, NORMALIZED, RECEIVED, rig, single

BASE_S = 1.0
STABLE_S = 60.0


def supervisor() -> Supervisor:
    return Supervisor(
        restart=Backoff(base_s=BASE_S, cap_s=30.0), stable_s=STABLE_S, rng=random.Random(7)
    )


class Crash(Exception):
    pass


async def test_a_crashed_child_is_restarted_alone_with_growing_pauses(autojump_clock):
    # Per start: how long the child runs before it crashes; None: it returns normally.
    script = [0.0, 0.0, 0.0, STABLE_S + 1, 0.0, None]
    spans: list[tuple[float, float]] = []
    sibling_starts: list[float] = []
    sibling_cancelled = trio.Event()
    scripted = trio.Event()
    sup = supervisor()

    async def flaky() -> None:
        start = trio.current_time()
        run_s = script[len(spans)]
        await trio.sleep(run_s or 0)
        spans.append((start, trio.current_time()))
        if len(spans) == len(script):
            scripted.set()
        if run_s is not None:
            raise Crash(f"start {len(spans)}")

    async def steady() -> None:
        sibling_starts.append(trio.current_time())
        try:
            await trio.sleep_forever()
        finally:
            sibling_cancelled.set()

    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run, [Child("flaky", flaky), Child("steady", steady)])
        with trio.fail_after(3600):
            await scripted.wait()
        await trio.sleep(3600)  # a child that returned stays returned
        assert not sibling_cancelled.is_set()
        nursery.cancel_scope.cancel()

    assert len(spans) == len(script)
    assert sibling_starts == [0.0]
    assert sup.restarts == {"flaky": 5}
    pauses = [nxt[0] - prev[1] for prev, nxt in itertools.pairwise(spans)]
    # Doubling in a row; back to the base once the child ran `stable_s`.
    for pause, ceiling in zip(pauses, [1, 2, 4, 1, 2], strict=True):
        assert ceiling * BASE_S / 2 <= pause <= ceiling * BASE_S


async def test_a_child_that_returns_is_not_restarted(autojump_clock):
    starts: list[float] = []
    sup = supervisor()

    async def once() -> None:
        starts.append(trio.current_time())

    with trio.fail_after(1):  # run returns once every child has returned
        await sup.run([Child("once", once), Child("twice", once)])
    assert starts == [0.0, 0.0]
    assert sup.restarts == {}


async def test_drain_returns_idle_workers_at_once(autojump_clock):
    async def instant(job, progress):
        await trio.lowlevel.checkpoint()

    _, wakeup, workers = rig(single(instant), workers=3)
    sup = supervisor()
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run, [Child(w.name, w.run) for w in workers])
        await trio.testing.wait_all_tasks_blocked()
        assert wakeup.waiting == 3
        t0 = trio.current_time()
        wakeup.close()
        assert await sup.drain(30.0) is True
        assert trio.current_time() == t0


async def test_drain_lets_a_step_that_ends_in_time_commit(autojump_clock):
    entered = trio.Event()

    async def five_seconds(job, progress):
        entered.set()
        await trio.sleep(5)
        return "finished"

    queue, wakeup, [worker] = rig(single(five_seconds))
    first, second = queue.add(), queue.add()
    sup = supervisor()
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run, [Child(worker.name, worker.run)])
        await entered.wait()
        t0 = trio.current_time()
        wakeup.close()
        assert await sup.drain(10.0) is True
        assert trio.current_time() == t0 + 5

    assert queue.records[first].results == {"normalize": "finished"}
    assert queue.records[first].milestone == NORMALIZED
    # Draining means no new claims: the second record waits for the next start.
    assert queue.records[second].claim_token is None
    assert queue.records[second].milestone == RECEIVED


async def test_drain_cancels_a_step_longer_than_the_grace(autojump_clock):
    entered = trio.Event()
    finished: list[float] = []

    async def long(job, progress):
        entered.set()
        await trio.sleep(LEASE_S - 1)
        finished.append(trio.current_time())
        return "too late"

    queue, wakeup, [worker] = rig(single(long))
    rid = queue.add()
    sup = supervisor()
    async with trio.open_nursery() as nursery:
        await nursery.start(sup.run, [Child(worker.name, worker.run)])
        await entered.wait()
        t0 = trio.current_time()
        wakeup.close()
        assert await sup.drain(3.0) is False
        assert trio.current_time() == t0 + 3

    rec = queue.records[rid]
    assert finished == []
    assert (rec.milestone, rec.results) == (RECEIVED, {})
    assert queue.events("milestone_reached") == [] and queue.events("attempt_failed") == []
    # The cut step handed its record back: free for the next claimer at once, and
    # not counted as a failed attempt.
    assert (rec.claim_token, rec.lease_expires_at, rec.attempts) == (None, None, 0)
    [released] = queue.events("released")
    assert queue.events("lease_lost") == []  # released once, by its holder
    assert released.recording_id == rid and released.detail["why"] == "worker stopping"
    assert await queue.claim() is not None


async def test_drain_with_no_children_returns_true_at_once(autojump_clock):
    sup = supervisor()
    await sup.run([])
    assert await sup.drain(10.0) is True
    assert trio.current_time() == 0.0
