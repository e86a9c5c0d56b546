"""Shared trips (openspec/specs/storage): workers of one process that commit or ask for
work at the same moment share one trip to the database, and every write stays fenced
by its own token. Trips are held at a gate, so who travels with whom is forced, not
hoped for."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
import pytest
import trio
import trio.testing
import trio_asyncio

from actors import Job, ResultRefused
from tests.helpers.pg_pipeline import accept, at, db_now, journal, state, table
from transcriber.db.database import Database
from transcriber.milestones import NORMALIZED, RECEIVED
from transcriber.pipeline import pg_queue, shared_trips
from transcriber.pipeline.pg_queue import PgQueue, Saved

T = TypeVar("T")


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("storage", title)


class GatedDatabase:
    """The real database as a queue sees it, counting the queue's trips (one `run`
    each); after `hold()`, the next trip waits at a gate until the test opens it."""

    def __init__(self, db: Database):
        self.db = db
        self.runs = 0
        self.at_gate = trio.Event()
        self._gate: trio.Event | None = None

    def sql(self, name: str) -> str:
        return self.db.sql(name)

    def hold(self) -> trio.Event:
        self._gate, self.at_gate = trio.Event(), trio.Event()
        return self._gate

    async def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        self.runs += 1
        gate, self._gate = self._gate, None
        if gate is not None:
            self.at_gate.set()
            await gate.wait()
        return await self.db.run(work)


def gated_queue(db: Database) -> tuple[GatedDatabase, PgQueue]:
    gated = GatedDatabase(db)
    # One trip out at a time: whoever asks while it is out travels on the next one.
    return gated, PgQueue(gated, table(), trips_at_once=1)  # type: ignore[arg-type]


async def claimed(db: Database, n: int) -> list[Job]:
    queue = PgQueue(db, table())
    jobs = [await queue.next_job() for _ in range(n)]
    assert all(j is not None for j in jobs)
    return jobs  # type: ignore[return-value]


async def stale_job(db: Database, rid: Any) -> Job:
    """A claim on `rid` whose token is no longer on the record: its lease ran out and
    another claim took the record."""
    now = await db_now(db)
    queue = PgQueue(db, table())
    job = await at(queue, now).next_job()
    assert job is not None and job.claim.id == rid
    later = at(queue, now, job.lease_remaining_s + 1)
    assert (await later.claim()).id == rid
    return job


@scenario("Workers asking at once share one trip, each write fenced by its own token")
async def test_workers_asking_at_once_share_one_trip(db: Database, owner_id: int) -> None:
    rids = [await accept(db, owner_id, f"{i}.wav") for i in range(6)]
    stale = await stale_job(db, rids[0])
    a, b = await claimed(db, 2)  # rids[1], rids[2]
    gated, queue = gated_queue(db)
    answers: dict[str, Any] = {}

    async def commit_then_next(name: str, job: Job) -> None:
        answers[name] = await queue.commit_then_next(job, table()[RECEIVED], None)

    async def first_trip() -> None:
        answers["first"] = await queue.next_job()

    gate = gated.hold()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(first_trip)
        await gated.at_gate.wait()
        for name, job in (("a", a), ("b", b), ("stale", stale)):
            nursery.start_soon(commit_then_next, name, job)
        await trio.testing.wait_all_tasks_blocked()
        assert gated.runs == 1  # the three wait for the trip that is out
        gate.set()

    assert gated.runs == 2 and queue.trips == 2 and queue.trip_asks == 4
    assert answers["a"][0] is True and answers["b"][0] is True
    assert answers["stale"][0] is False
    for job in (a, b):
        assert (await state(db, job.claim.id))["milestone"] == NORMALIZED
    kinds = [(e["kind"], e["claim_token"]) for e in await journal(db, rids[0])]
    assert ("lease_lost", stale.claim.token) in kinds
    assert ("milestone_reached", stale.claim.token) not in kinds
    # Each worker got a record of its own, with a token of its own, as stored.
    jobs = [answers["first"]] + [answers[n][1] for n in ("a", "b", "stale")]
    assert all(j is not None for j in jobs)
    assert len({j.claim.id for j in jobs}) == 4 and len({j.claim.token for j in jobs}) == 4
    for job in jobs:
        assert (await state(db, job.claim.id))["claim_token"] == job.claim.token


@scenario("A record just committed is handed on in the same trip")
async def test_record_just_committed_is_handed_on_in_the_same_trip(
    db: Database, owner_id: int
) -> None:
    rid = await accept(db, owner_id)
    gated, queue = gated_queue(db)
    job = await queue.next_job()
    assert job is not None and job.claim.id == rid and gated.runs == 1
    committed, following = await queue.commit_then_next(job, table()[RECEIVED], None)
    assert gated.runs == 2 and committed
    assert following is not None and following.claim.id == rid
    assert following.milestone == NORMALIZED and following.claim.token != job.claim.token
    assert (await state(db, rid))["claim_token"] == following.claim.token


@scenario("A result the database refuses costs only its own commit")
async def test_refused_result_costs_only_its_own_commit(db: Database, owner_id: int) -> None:
    for i in range(3):
        await accept(db, owner_id, f"{i}.wav")
    good, bad = await claimed(db, 2)
    gated, queue = gated_queue(db)
    step = table()[RECEIVED]
    outcome: dict[str, Any] = {}

    async def commit(name: str, job: Job, saved: Saved) -> None:
        try:
            outcome[name] = await queue.commit(job, step, saved)
        except ResultRefused as e:
            outcome[name] = e

    gate = gated.hold()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.next_job)
        await gated.at_gate.wait()
        nursery.start_soon(commit, "good", good, Saved("save_normalized", ("/a.wav", 2.5)))
        # PostgreSQL text cannot hold a NUL character: the database refuses this result.
        nursery.start_soon(commit, "bad", bad, Saved("save_normalized", ("/b\x00.wav", 1.0)))
        await trio.testing.wait_all_tasks_blocked()
        gate.set()

    assert gated.runs == 2  # both commits left on one trip
    assert outcome["good"] is True
    kept = await state(db, good.claim.id)
    assert (kept["milestone"], kept["audio_path"], kept["duration_s"]) == (
        NORMALIZED,
        "/a.wav",
        2.5,
    )
    assert isinstance(outcome["bad"], ResultRefused)
    assert "CharacterNotInRepertoireError" in str(outcome["bad"])  # the database's message
    refused = await state(db, bad.claim.id)
    assert (refused["milestone"], refused["claim_token"]) == (RECEIVED, bad.claim.token)
    assert refused["audio_path"] is None
    assert "milestone_reached" not in [e["kind"] for e in await journal(db, bad.claim.id)]


@scenario("A worker cancelled while its trip is out leaves nothing claimed")
async def test_cancelled_while_trip_out_leaves_nothing_claimed(db: Database, owner_id: int) -> None:
    for i in range(4):
        await accept(db, owner_id, f"{i}.wav")
    gated, queue = gated_queue(db)
    got: dict[str, Any] = {}
    cancelled = trio.CancelScope()

    async def ask(name: str, scope: trio.CancelScope | None = None) -> None:
        with scope or trio.CancelScope():
            got[name] = await queue.next_job()

    first = gated.hold()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "first")
        await gated.at_gate.wait()
        nursery.start_soon(ask, "leader")
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, "gone", cancelled)
        await trio.testing.wait_all_tasks_blocked()
        second = gated.hold()  # the trip "leader" leads, with the ask of "gone" on it
        first.set()
        await gated.at_gate.wait()
        cancelled.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert "gone" not in got  # still waiting, shielded, for what its trip brings
        second.set()

    assert "gone" not in got and cancelled.cancelled_caught
    assert got["first"] is not None and got["leader"] is not None
    released = [e for e in await journal(db) if e["kind"] == "released"]
    assert len(released) == 1
    rid = released[0]["recording_id"]
    assert rid not in (got["first"].claim.id, got["leader"].claim.id)
    assert released[0]["detail"]["why"] == "worker stopping"
    assert (await state(db, rid))["claim_token"] is None
    # Claimable at once (the oldest left), not after its lease.
    assert (await PgQueue(db, table()).claim()).id == rid


@scenario("A trip cut by its leader's cancellation is sent again")
async def test_trip_cut_by_leader_cancellation_is_sent_again(db: Database, owner_id: int) -> None:
    for i in range(3):
        await accept(db, owner_id, f"{i}.wav")
    (job,) = await claimed(db, 1)
    gated, queue = gated_queue(db)
    leader = trio.CancelScope()
    got: dict[str, Any] = {}

    async def lead() -> None:
        with leader:
            got["leader"] = await queue.next_job()

    async def commit() -> None:
        got["commit"] = await queue.commit(job, table()[RECEIVED], None)

    first = gated.hold()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.next_job)
        await gated.at_gate.wait()
        nursery.start_soon(lead)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(commit)
        await trio.testing.wait_all_tasks_blocked()
        second = gated.hold()  # the leader's trip, with the commit on it
        first.set()
        await gated.at_gate.wait()
        leader.cancel()

    assert second.is_set() is False and leader.cancelled_caught and "leader" not in got
    assert gated.runs == 3  # the held trip, the cut one, the one that carried it again
    assert got["commit"] is True
    assert (await state(db, job.claim.id))["milestone"] == NORMALIZED
    reached = [e for e in await journal(db, job.claim.id) if e["kind"] == "milestone_reached"]
    assert len(reached) == 1


class HeldAfterDatabase(GatedDatabase):
    """After `hold_after(name)`, the next run of the named query goes to the real
    database, and then its answer waits at a gate (forever: the test cancels the trip
    there, after the statement ran and before anyone saw its answer)."""

    def hold_after(self, name: str) -> None:
        self._after = self.db.sql(name)
        self.at_gate = trio.Event()

    async def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        self.runs += 1
        return await self.db.run(lambda con: work(_HeldConnection(con, self)))


class _HeldConnection:
    def __init__(self, con: Any, owner: HeldAfterDatabase):
        self._con, self._owner = con, owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    async def fetch(self, sql: str, *args: Any) -> Any:
        rows = await self._con.fetch(sql, *args)
        if sql == getattr(self._owner, "_after", None):
            self._owner._after = None
            self._owner.at_gate.set()
            await asyncio.Event().wait()  # the asyncio side of the bridge: wait here
        return rows


@scenario("A leader cancelled after its trip's statement ran leaves nothing claimed")
async def test_leader_cancelled_after_its_statement_leaves_nothing_claimed(
    db: Database, owner_id: int
) -> None:
    rids = [await accept(db, owner_id, f"{i}.wav") for i in range(2)]
    held = HeldAfterDatabase(db)
    queue = PgQueue(held, table(), trips_at_once=1)  # type: ignore[arg-type]
    leader = trio.CancelScope()
    got: dict[str, Any] = {}

    async def lead() -> None:
        with leader:
            got["leader"] = await queue.next_job()

    held.hold_after("claim_read")
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lead)
            await held.at_gate.wait()
            # The claim statement ran: the oldest record carries the trip's token.
            token = (await state(db, rids[0]))["claim_token"]
            assert token is not None
            leader.cancel()

    assert leader.cancelled_caught and "leader" not in got
    after = await state(db, rids[0])
    assert (after["claim_token"], after["lease_expires_at"], after["attempts"]) == (None, None, 0)
    released = [e for e in await journal(db, rids[0]) if e["kind"] == "released"]
    assert [(e["claim_token"], e["detail"]["why"]) for e in released] == [(token, "trip cut")]
    # Claimable at once, not after its lease.
    assert (await PgQueue(db, table()).claim()).id == rids[0]


async def test_a_commit_withdrawn_before_its_trip_left_releases_its_record(
    db: Database, owner_id: int
) -> None:
    """A worker cancelled while its commit waits for a trip: the commit never leaves,
    so its record is handed back at once instead of staying claimed until the lease."""
    for i in range(2):
        await accept(db, owner_id, f"{i}.wav")
    (job,) = await claimed(db, 1)
    gated, queue = gated_queue(db)
    gone = trio.CancelScope()

    async def commit() -> None:
        with gone:
            await queue.commit(job, table()[RECEIVED], None)

    first = gated.hold()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(queue.next_job)
        await gated.at_gate.wait()
        nursery.start_soon(commit)
        await trio.testing.wait_all_tasks_blocked()
        gone.cancel()  # still waiting for the trip that is out
        await trio.testing.wait_all_tasks_blocked()
        first.set()

    assert gone.cancelled_caught
    kinds = [(e["kind"], e["claim_token"]) for e in await journal(db, job.claim.id)]
    assert ("released", job.claim.token) in kinds
    assert not any(k == "milestone_reached" for k, _ in kinds)
    # Claimable at once: the trip that was out, let go after the release, took it.
    after = await state(db, job.claim.id)
    assert after["milestone"] == RECEIVED and after["claim_token"] != job.claim.token


class CancelledAtDatabase(GatedDatabase):
    """After `cancel_at(name)`, the next run of the named query is cancelled by the
    server: another connection holds a lock on the records, and the statement's own
    statement_timeout ends its wait for it (a real `canceling statement due to
    statement timeout`, after what the trip sent before it committed). `cancelled` is
    set once it was."""

    def cancel_at(self, name: str) -> None:
        self._cancel = self.db.sql(name)
        self.cancelled = trio.Event()

    async def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        return await super().run(lambda con: work(_CancelledConnection(con, self)))


class _CancelledConnection(_HeldConnection):
    async def fetch(self, sql: str, *args: Any) -> Any:
        owner: Any = self._owner
        if sql != getattr(owner, "_cancel", None):
            return await self._con.fetch(sql, *args)
        owner._cancel = None
        locker = await asyncpg.connect(owner.db.url)
        try:
            async with locker.transaction():
                await locker.execute("LOCK TABLE recordings IN ACCESS EXCLUSIVE MODE")
                await self._con.execute("SET statement_timeout = '50ms'")
                try:
                    return await self._con.fetch(sql, *args)
                finally:
                    await self._con.execute("RESET statement_timeout")
                    owner.cancelled.set()
        finally:
            await locker.close()


@scenario("A trip the server cancels after its claims committed leaks nothing")
async def test_trip_cancelled_by_the_server_after_its_claims_leaks_nothing(
    db: Database, owner_id: int
) -> None:
    rids = [await accept(db, owner_id, f"{i}.wav") for i in range(3)]
    (job,) = await claimed(db, 1)  # rids[0]
    gated = CancelledAtDatabase(db)
    queue = PgQueue(gated, table(), trips_at_once=1)  # type: ignore[arg-type]
    got: dict[str, Any] = {}

    async def commit_then_next() -> None:
        got["commit"] = await queue.commit_then_next(job, table()[RECEIVED], None)

    async def next_job() -> None:
        try:
            got["next"] = await queue.next_job()
        except asyncpg.QueryCanceledError as e:
            got["next"] = e

    first = gated.hold()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(queue.next_job)  # the trip that is out: rids[1]
            await gated.at_gate.wait()
            nursery.start_soon(commit_then_next)
            nursery.start_soon(next_job)
            await trio.testing.wait_all_tasks_blocked()
            second = gated.hold()
            first.set()
            await gated.at_gate.wait()
            # The two leave together: one statement commits rids[0] and claims rids[2],
            # the only record left, for one of them; the claim for the other that
            # follows it is cancelled by the server.
            gated.cancel_at("claim_read")
            second.set()

    assert gated.cancelled.is_set()
    # The commit was written: its caller is told so, with no record to go on with.
    assert got["commit"] == (True, None)
    assert (await state(db, rids[0]))["milestone"] == NORMALIZED
    # The ask that only wanted a record gets the server's error.
    assert isinstance(got["next"], asyncpg.QueryCanceledError)
    # What the cancelled trip claimed is back at once, journaled, its attempt given back.
    for rid in rids[2:]:
        after = await state(db, rid)
        assert (after["claim_token"], after["lease_expires_at"], after["attempts"]) == (
            None,
            None,
            0,
        )
        released = [e for e in await journal(db, rid) if e["kind"] == "released"]
        assert [e["detail"]["why"] for e in released] == ["trip failed"]


class PausedAtDatabase(GatedDatabase):
    """`pause_before(name)`: the next run of the named query waits, before it is sent,
    until the test sets the returned event; `paused` is set when it waits."""

    def pause_before(self, name: str) -> trio.Event:
        self._pause, self.paused, self._go = self.db.sql(name), trio.Event(), trio.Event()
        return self._go

    async def run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        return await super().run(lambda con: work(_PausedConnection(con, self)))


class _PausedConnection(_HeldConnection):
    async def fetch(self, sql: str, *args: Any) -> Any:
        owner: Any = self._owner
        if sql == getattr(owner, "_pause", None):
            owner._pause = None
            owner.paused.set()
            await trio_asyncio.trio_as_aio(owner._go.wait)()
        return await self._con.fetch(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        return (await self.fetch(sql, *args) or [None])[0]


async def test_asks_whose_patience_ends_late_in_the_trip_leave_nothing_claimed(
    db: Database, owner_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two callers cancelled while their trip is out, whose patience runs out at once
    (RELEASE_TIMEOUT_S 0 while they are cancelled): one while the trip claims, one while
    the trip releases the first one's record. Neither record stays claimed for nobody."""

    def cancel(name: str) -> None:
        monkeypatch.setattr(pg_queue, "RELEASE_TIMEOUT_S", 0.0)
        monkeypatch.setattr(shared_trips, "RELEASE_TIMEOUT_S", 0.0)
        scopes[name].cancel()

    for i in range(5):
        await accept(db, owner_id, f"{i}.wav")
    paused = PausedAtDatabase(db)
    queue = PgQueue(paused, table(), trips_at_once=1)  # type: ignore[arg-type]
    got: dict[str, Any] = {}
    scopes = {name: trio.CancelScope() for name in ("leader", "gone1", "gone2")}
    ended = {name: trio.Event() for name in scopes}

    async def ask(name: str) -> None:
        try:
            with scopes[name]:
                got[name] = await queue.next_job()
        finally:
            ended[name].set()

    first = paused.hold()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            got["first"] = None
            nursery.start_soon(lambda: _store(got, "first", queue.next_job()))
            await paused.at_gate.wait()
            for name in scopes:
                nursery.start_soon(ask, name)
                await trio.testing.wait_all_tasks_blocked()
            second = paused.hold()
            first.set()
            await paused.at_gate.wait()
            read = paused.pause_before("claim_read")
            second.set()
            await paused.paused.wait()  # the second trip, all three on it, is claiming
            cancel("gone1")
            await ended["gone1"].wait()
            monkeypatch.undo()
            release = paused.pause_before("release_claims")
            read.set()
            await paused.paused.wait()  # releasing what was claimed for gone1
            cancel("gone2")
            await ended["gone2"].wait()
            monkeypatch.undo()
            release.set()

    held = {j.claim.token for j in got.values() if j is not None}
    rows = await db.run(lambda con: con.fetch("SELECT claim_token FROM recordings"))
    claimed_now = {r["claim_token"] for r in rows if r["claim_token"] is not None}
    assert claimed_now == held  # every claim is held by a caller that has it


async def _store(got: dict[str, Any], name: str, call: Awaitable[Any]) -> None:
    got[name] = await call


@scenario("Workers that ask in the same moment leave on one trip when none is out")
async def test_asks_of_one_moment_leave_together_when_no_trip_is_out(
    db: Database, owner_id: int
) -> None:
    for i in range(3):
        await accept(db, owner_id, f"{i}.wav")
    gated, queue = gated_queue(db)
    jobs: list[Job | None] = []

    async def ask() -> None:
        jobs.append(await queue.next_job())

    async with trio.open_nursery() as nursery:
        for _ in range(3):  # all three runnable in the same round
            nursery.start_soon(ask)
    assert (gated.runs, queue.trips, queue.trip_asks) == (1, 1, 3)
    assert all(j is not None for j in jobs)
    assert len({j.claim.id for j in jobs if j is not None}) == 3


async def test_another_trip_leaves_only_with_a_full_load_of_three(db: Database) -> None:
    from transcriber.pipeline.runner import Pipeline

    loads = {
        w: (p.queue.trips_at_once, p.queue.full_trip)
        for w in (2, 4, 5, 6, 8, 9, 16)
        for p in [Pipeline(db, table(), workers=w)]
    }
    assert loads == {2: (1, 2), 4: (1, 4), 5: (2, 3), 6: (2, 3), 8: (3, 3), 9: (3, 3), 16: (3, 6)}
