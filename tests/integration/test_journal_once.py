"""Every reader that pages the journal sees every event once, on a real PostgreSQL: a
transaction that journaled an event and still runs while a later one commits (the queue's
commit waiting on the owner's row its save locks, an owner's edit) is not passed by the
reader's cursor (sql/0020_journal_settled.sql). The follower of `transcriber journal
--follow` in process, `/v1/recordings/{id}/events` over loopback HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import httpx
import pytest
import trio
import trio_asyncio

from tests.helpers.api_clients import normalized, transcribe, uploaded, worker
from tests.helpers.pg_pipeline import accept
from transcriber.db.database import Database
from transcriber.owners import NewOwner
from transcriber.pipeline.operator import JournalEvent, read_journal
from transcriber.records.archive import edit_owner_fields
from transcriber.records.corrections import set_correction


class CountedReads:
    """The database as the follower reads it, its reads of the journal counted: `read`
    is set when one ends (and replaced), so a test knows the follower has read the
    journal after a moment."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.read = trio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    async def fetch(self, name: str, *args: Any) -> Any:
        rows = await self._db.fetch(name, *args)
        if name == "journal_after":
            self.read.set()
            self.read = trio.Event()
        return rows


async def read_again(db: Database, follower: CountedReads) -> None:
    """Returns once the follower has read the whole journal after this call began: two
    reads end (the first may have begun before), each woken by a notification."""
    with trio.fail_after(30):
        for _ in range(2):
            read = follower.read
            await db.run(
                lambda con: con.execute("SELECT pg_notify('transcriber_journal', '0 test')")
            )
            await read.wait()


async def in_transaction_until(
    db: Database, statement: str, args: Sequence[Any], begun: trio.Event, release: trio.Event
) -> None:
    """`statement` run in a transaction of its own connection, which then stays open
    (`begun` set) until `release` is set, and commits."""

    async def mark() -> None:
        begun.set()

    async def hold(con: Any) -> None:
        async with con.transaction():
            await con.execute(statement, *args)
            await trio_asyncio.trio_as_aio(mark)()
            await trio_asyncio.trio_as_aio(release.wait)()

    await db.run(hold)


async def a_statement_waits_on_a_lock(db: Database) -> None:
    """Returns once a statement of the database waits for a lock another holds."""
    waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted"
    with trio.fail_after(30):
        while not await db.run(lambda con: con.fetchval(waiting)):
            await trio.sleep(0.01)


def when_done(fn: Callable[[], Awaitable[Any]], done: trio.Event) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await fn()
        done.set()

    return run


@pytest.mark.scenario("operations", "The follower sees an event committed late, once")
async def test_the_follower_sees_a_commit_held_on_a_lock_once(db: Database, owner_id: int) -> None:
    first = await accept(db, owner_id, "first.wav")
    second = await accept(db, owner_id, "second.wav")
    shown: list[JournalEvent] = []
    follower = CountedReads(db)
    release, locked, worked = trio.Event(), trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            lambda: read_journal(cast(Database, follower), None, shown.extend, follow=True)
        )
        await read_again(db, follower)
        assert [e.kind for e in shown] == ["accepted", "accepted"]

        # Another trip's save holds the owner's row: the first record's normalize commit
        # journals `milestone_reached` (its id taken), then its save waits on that row.
        lock = "SELECT FROM owners WHERE id = $1 FOR UPDATE"
        nursery.start_soon(in_transaction_until, db, lock, [owner_id], locked, release)
        await locked.wait()
        nursery.start_soon(when_done(worker(db, normalize=normalized).work_once, worked))
        await a_statement_waits_on_a_lock(db)
        # A later event commits, and the follower reads the journal ...
        await edit_owner_fields(
            db, owner_id, second, title="Later", summary=None, topics=None,
            detail={"by": "owner", "owner_id": owner_id, "fields": ["title"]},
        )  # fmt: skip
        await read_again(db, follower)
        # ... but not past the commit still running: the later event waits for it.
        assert [e.kind for e in shown] == ["accepted", "accepted"]

        release.set()
        with trio.fail_after(30):
            await worked.wait()
        await read_again(db, follower)
        nursery.cancel_scope.cancel()

    assert [(e.recording_id, e.kind, e.milestone) for e in shown] == [
        (first, "accepted", "received"),
        (second, "accepted", "received"),
        (first, "milestone_reached", "normalized"),
        (second, "edited", "received"),
    ]


@pytest.mark.scenario("archive", "A page read while an earlier event commits skips nothing")
async def test_events_paged_while_an_edit_is_held_give_each_event_once(
    db: Database, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribe(db)
    seen: list[dict[str, Any]] = []

    async def read_on() -> list[dict[str, Any]]:
        """The next page, as a client following the journal asks it: after the last
        event it has."""
        after = seen[-1]["id"] if seen else 0
        page = await as_ann.get(f"/v1/recordings/{rid}/events", params={"after": after})
        assert page.status_code == 200, page.text
        seen.extend(page.json()["events"])
        return cast(list[dict[str, Any]], page.json()["events"])

    assert [e["kind"] for e in await read_on()] == ["accepted"] + ["milestone_reached"] * 2

    # The owner's edit (PATCH's statement) journaled, its transaction still open ...
    begun, release = trio.Event(), trio.Event()
    detail = {"by": "owner", "owner_id": ann.id, "fields": ["title"]}
    edit = (ann.id, uuid.UUID(rid), "Held", None, None, detail)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            in_transaction_until, db, db.sql("edit_owner_fields"), edit, begun, release
        )
        await begun.wait()
        # ... while a correction of the same record commits after it.
        fix = {"by": "owner", "owner_id": ann.id, "via": "page", "segment": 0}
        await set_correction(db, ann.id, uuid.UUID(rid), 0, "Fixed.", fix)
        assert await read_on() == []  # not before the edit's transaction ends
        release.set()

    assert [e["kind"] for e in await read_on()] == ["edited", "corrected"]
    assert [e["id"] for e in seen] == [1, 2, 3, 4, 5]
    whole = (await as_ann.get(f"/v1/recordings/{rid}/events")).json()["events"]
    assert whole == seen


async def test_the_followers_read_is_a_range_of_an_index(db: Database, owner_id: int) -> None:
    """journal_after of every record reads journal_in_order from its cursor, in order
    (no sort), and of one record journal_by_recording: a follower's read does not scan
    the journal. The planner is told to avoid a scan, and for every record a sort, where
    an index serves: on a test's few rows it would rather read them all."""
    await accept(db, owner_id)

    async def plan(con: Any, avoid: Sequence[str], rid: uuid.UUID | None) -> str:
        async with con.transaction():
            for setting in avoid:
                await con.execute(f"SET LOCAL {setting} = off")
            rows = await con.fetch("EXPLAIN " + db.sql("journal_after"), 0, 0, rid, 1000)
            return "\n".join(r[0] for r in rows)

    scans = ("enable_seqscan", "enable_bitmapscan")
    every = await db.run(lambda con: plan(con, (*scans, "enable_sort"), None))
    one = await db.run(lambda con: plan(con, scans, uuid.uuid4()))
    assert "Index Scan using journal_in_order" in every and "Sort" not in every, every
    assert "journal_by_recording" in one, one
