"""The operator's record actions: what the pipeline holds (status, the stopped records),
a stopped record back to work (resume), the record journal (read, or followed live),
the card of any record, whether the database answers.

Unlike the owner's archive (transcriber.records), these read and act on every owner's
records: the command line, the one-shot run and the health check come here, never a
route that acts for an owner. No worker's queue is needed for any of it: each action
is its own named query.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import trio

from transcriber.db.database import Database, retry_while_unreachable
from transcriber.milestones import MILESTONES
from transcriber.records.cards import card_from_row

FOLLOW_POLL_S = 2.0
"""How often a followed journal is read without a notification (one may be lost)."""
JOURNAL_BATCH = 1000


@attrs.frozen
class MilestoneStatus:
    """One milestone's records: claimable now, in flight (a live lease), pausing before
    a retry, stopped; and how long the oldest claimable one has waited."""

    milestone: str
    waiting: int
    in_flight: int
    pausing: int
    stopped: int
    oldest_waiting_s: float | None


async def queue_states(db: Database) -> list[MilestoneStatus]:
    """The milestones that hold records still to work on or stopped, in the pipeline's
    order: only those records are read (sql/operator.sql `status`), so a long finished
    history costs nothing, and a milestone without them is left out. Cancellation: a
    plain read."""
    found = [
        MilestoneStatus(
            milestone=str(r["milestone"]),
            waiting=int(r["waiting"]),
            in_flight=int(r["in_flight"]),
            pausing=int(r["pausing"]),
            stopped=int(r["stopped"]),
            oldest_waiting_s=r["oldest_waiting_s"],
        )
        for r in await db.fetch("status")
    ]
    return sorted(found, key=lambda m: _ORDER.get(m.milestone, len(_ORDER)))


_ORDER = {m: i for i, m in enumerate(MILESTONES)}


def every_milestone(found: Sequence[MilestoneStatus]) -> list[MilestoneStatus]:
    """`found` with a line of zeros for each milestone of the pipeline it lacks (every
    milestone a step table has: transcriber.milestones), in the pipeline's order; a
    milestone of the records that no table names (an older version's) stays, last."""
    by = {m.milestone: m for m in found}
    zero = [MilestoneStatus(m, 0, 0, 0, 0, None) for m in MILESTONES if m not in by]
    return sorted([*found, *zero], key=lambda m: _ORDER.get(m.milestone, len(_ORDER)))


async def status(db: Database) -> list[MilestoneStatus]:
    """The pipeline per milestone, every milestone (zeros where it holds nothing still
    to work on); finished records are not counted. Cancellation: a plain read."""
    return every_milestone(await queue_states(db))


@attrs.frozen
class StoppedRecord:
    id: uuid.UUID
    milestone: str
    reason: str
    at: dt.datetime
    error: str | None


async def stopped(db: Database, reason: str | None = None) -> list[StoppedRecord]:
    """The stopped records (only those stopped with `reason`, if given), oldest stop
    first. Cancellation: a plain read."""
    return [
        StoppedRecord(r["id"], r["milestone"], r["stop_reason"], r["stopped_at"], r["stop_error"])
        for r in await db.fetch("stopped", reason)
    ]


class NotStopped(Exception):
    """Resume of a record that is not stopped (or does not exist): nothing changed.
    `milestone` is where the record is, None when there is no such record."""

    def __init__(self, recording_id: Any, milestone: str | None = None):
        self.recording_id = recording_id
        self.milestone = milestone
        super().__init__(
            f"no recording {recording_id}"
            if milestone is None
            else f"recording {recording_id} is not stopped (at {milestone}), nothing to resume"
        )


@attrs.frozen
class Resumed:
    id: Any
    milestone: str


async def resume(
    db: Database,
    recording_id: Any,
    *,
    by: str,
    now: dt.datetime | None = None,
    patience_s: float = 120.0,
    batch: str | None = None,
) -> Resumed:
    """A person returns a stopped record to work, from the milestone it reached: one
    statement (query `resume`) clears everything the previous run held the record by
    and journals it with origin `human`, `by` in its detail.

    Raises NotStopped, changing nothing, if the record is unknown or not stopped.
    Retried with backoff while the database is away (up to `patience_s`): a retry after
    a lost reply is recognised by this call's request id and answers as the first try.
    `now`: a fixed time for the milestone's entry (tests); None, the database's clock.
    `batch`: the resumes this one is asked with, named in its journal detail too (the
    operator's screen shows a batch's by it).

    Cancellation: a cancelled call may or may not have resumed the record; calling
    again is safe (a resumed record is no longer stopped and is refused as such).
    """
    detail = {"by": by, "request": str(uuid.uuid4()), **({"batch": batch} if batch else {})}
    # Through `run` and `sql` alone, as the queue's writes: all a database that loses
    # replies on purpose (tests/integration/test_lost_replies.py) has to offer.
    resumed, current = db.sql("resume"), db.sql("recording")
    row = None
    async for attempt in retry_while_unreachable(patience_s):
        with attempt:
            row = await db.run(lambda con: con.fetchrow(resumed, recording_id, detail, now))
    if row is None:
        found = await db.run(lambda con: con.fetchrow(current, recording_id))
        raise NotStopped(recording_id, None if found is None else str(found["milestone"]))
    return Resumed(row["id"], str(row["milestone"]))


async def card(db: Database, recording_id: Any) -> dict[str, Any] | None:
    """The card of any record, as the operator reads it (the stop's error included), or
    None if there is no such record. Cancellation: a plain read."""
    r = await db.fetchrow("recording", recording_id)
    return None if r is None else card_from_row(r, owner=False)


@attrs.frozen
class JournalEvent:
    id: int
    recording_id: uuid.UUID
    at: dt.datetime
    origin: str
    kind: str
    milestone: str | None
    claim_token: uuid.UUID | None
    detail: dict[str, Any] | None


async def read_journal(
    db: Database,
    recording_id: uuid.UUID | None,
    show: Callable[[Sequence[JournalEvent]], None],
    *,
    since: dt.timedelta | None = None,
    follow: bool = False,
) -> None:
    """The record journal of one record (or of all: None) to `show`, oldest first, a
    batch at a time; only the events of the last `since`, if given. With `follow` it
    never returns: it goes on showing new events as they are journaled, each once (the
    cursor never passes a transaction still running: sql/0020_journal_settled.sql).

    Cancellation: the only way out of a followed journal; its listening connection is
    closed on the way (see Database.listen).
    """
    # (xid, id) of the last event shown: every reader's order, not the ids'.
    last = (0, 0)
    if since is not None:
        start = await db.fetchrow("journal_cursor_since", since)  # one row, always
        last = (int(start["xid"]), int(start["id"])) if start else last

    async def drain() -> None:
        nonlocal last
        while True:
            xid, id_ = last
            rows = await db.fetch("journal_after", xid, id_, recording_id, JOURNAL_BATCH)
            batch = [
                JournalEvent(
                    id=r["id"],
                    recording_id=r["recording_id"],
                    at=r["at"],
                    origin=r["origin"],
                    kind=r["kind"],
                    milestone=r["milestone"],
                    claim_token=r["claim_token"],
                    detail=r["detail"],
                )
                for r in rows
            ]
            if batch:
                show(batch)
                last = (int(rows[-1]["xid"]), int(rows[-1]["id"]))
            if len(batch) < JOURNAL_BATCH:
                return

    if not follow:
        await drain()
        return
    async with db.listen() as listener:
        await drain()
        while True:
            # A notification says "something new"; the poll covers a lost one.
            with trio.move_on_after(FOLLOW_POLL_S):
                await listener.payloads.receive()
            await drain()


async def check_database(db: Database) -> None:
    """Returns when the database answers a trivial query; raises what the call raised
    otherwise. Cancellation: a plain read."""
    await db.fetchval("health")
