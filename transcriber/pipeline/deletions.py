"""The operator's deletions (`transcriber delete`) and retention
(TRANSCRIBER_RETENTION_DAYS): records of any owner deleted as an owner's are
(transcriber.records.deletion tells what goes and what a step working on one meets),
journaled `deleted` with who deleted them."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Sequence
from typing import Any, NoReturn

import trio

from actors.log import event
from transcriber.db.database import Database
from transcriber.records.deletion import Deleted, remove_bytes
from transcriber.storage.blobs import Blobs

RETENTION_BATCH = 100
"""Records one retention statement deletes at most."""
RETENTION_EVERY_S = 3600.0
"""How often the daemon looks for records past the retention."""


async def delete_any(
    db: Database, store: Blobs, ids: Sequence[uuid.UUID], *, by: str
) -> list[Deleted]:
    """The operator's deletion of any owner's records among `ids` (unknown ones are not
    in the answer), journaled with origin `human` and the operator's name `by`.
    Cancellation: one statement, committed or not; then see `remove_bytes`."""
    rows = await db.fetch("delete_records", list(ids), "human", {"by": "operator", "operator": by})
    return await remove_bytes(store, rows)


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
        done += await remove_bytes(store, rows)
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


async def deletions(db: Database, limit: int = 100) -> list[dict[str, Any]]:
    """The journal's `deleted` events, newest first: which records existed and who
    deleted them when. Cancellation: a plain read."""
    return [dict(r) for r in await db.fetch("deletions", limit)]
