"""The operator's deletions (`transcriber delete`) and retention
(TRANSCRIBER_RETENTION_DAYS): records of any owner deleted as an owner's are
(transcriber.records.deletion tells what goes and what a step working on one meets),
journaled `deleted` with who deleted them."""

from __future__ import annotations

import datetime as dt
import logging
import random
import uuid
from collections.abc import Sequence
from typing import Any, NoReturn

import trio

from actors.log import event
from transcriber.db.database import Database
from transcriber.records.deletion import Deleted, finish_removals, remove_bytes
from transcriber.storage.blobs import Blobs

RETENTION_BATCH = 100
"""Records one retention statement deletes at most."""
RETENTION_EVERY_S = 3600.0
"""How often the daemon looks for records past the retention."""
REMOVALS_EVERY_S = 300.0
"""How often, on average, each daemon finishes the deletions whose bytes are not all
removed (`finish_removals`): a deletion whose process died, or whose store was away,
has its bytes gone within minutes. A round that finds nothing is one read of a table
empty but for the deletions that did not finish."""
REMOVALS_JITTER = 0.5
"""Each pause is REMOVALS_EVERY_S times a random factor from 1 - this to 1 + this, so
daemons started together do not read (and race on) the same rows in step."""


async def delete_any(
    db: Database, store: Blobs, ids: Sequence[uuid.UUID], *, by: str
) -> list[Deleted]:
    """The operator's deletion of any owner's records among `ids` (unknown ones are not
    in the answer), journaled with origin `human` and the operator's name `by`.
    Cancellation: one statement, committed or not; then see `remove_bytes`."""
    rows = await db.fetch("delete_records", list(ids), "human", {"by": "operator", "operator": by})
    return await remove_bytes(db, store, rows)


async def delete_expired(
    db: Database, store: Blobs, days: float, *, now: dt.datetime | None = None
) -> list[Deleted]:
    """Retention: every record created more than `days` before `now` (None: this
    host's clock), deleted as the operator's would be but journaled with origin
    `pipeline` and `by: retention`, a batch at a time.

    Cancellation: stops between batches or inside one (a statement committed or not);
    what it deleted stays deleted and journaled, its bytes removed (`remove_bytes`)."""
    cutoff = (now or dt.datetime.now(dt.UTC)) - dt.timedelta(days=days)
    detail = {"by": "retention", "retention_days": days}
    done: list[Deleted] = []
    while ids := [r["id"] for r in await db.fetch("records_older_than", cutoff, RETENTION_BATCH)]:
        rows = await db.fetch("delete_records", ids, "pipeline", detail)
        done += await remove_bytes(db, store, rows)
    return done


async def keep_retention(
    db: Database, store: Blobs, days: float, every_s: float = RETENTION_EVERY_S
) -> NoReturn:
    """The daemon's retention: `delete_expired` now and every `every_s` after. A round
    that fails (the database away) is logged and tried again at the next.

    Cancellation: ends it (the daemon's shutdown), as `delete_expired` says."""
    while True:
        try:
            gone = await delete_expired(db, store, days)
        except Exception as e:  # the next round tries again
            event(logging.WARNING, "retention_failed", error=str(e))
        else:
            if gone:
                event(logging.INFO, "retention_deleted", records=len(gone), days=days)
        await trio.sleep(every_s)


async def keep_removing(
    db: Database,
    store: Blobs,
    every_s: float = REMOVALS_EVERY_S,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """The daemon's removal rounds: `finish_removals` at once (`task_status.started`
    after it, so a daemon says it is ready with the deletions it found finished), then
    every `every_s`, jittered. Every daemon runs it, with or without the API or
    workers. A round that fails (the database away) is logged and tried again at the
    next; a store that is away leaves its rows for the next.

    Cancellation: ends it (the daemon's shutdown) between rounds or inside one, each
    record's removal whole or left for the next round (`finish_removals`)."""
    while True:
        try:
            done = await finish_removals(db, store)
        except Exception as e:  # the next round tries again
            event(logging.WARNING, "removals_failed", error=str(e))
        else:
            if done:
                event(
                    logging.WARNING,  # a deletion that did not finish by itself
                    "removals_finished",
                    records=sum(d.finished for d in done),
                    left=sum(not d.finished for d in done),
                    files=sum(len(d.files) for d in done),
                )
        task_status.started()
        task_status = trio.TASK_STATUS_IGNORED
        await trio.sleep(every_s * random.uniform(1 - REMOVALS_JITTER, 1 + REMOVALS_JITTER))


async def deletions(db: Database, limit: int = 100) -> list[dict[str, Any]]:
    """The journal's `deleted` events, newest first: which records existed and who
    deleted them when. Cancellation: a plain read."""
    return [dict(r) for r in await db.fetch("deletions", limit)]
