"""Deleting the owner's records (API, page); the operator's deletions and retention
(`transcriber delete`, TRANSCRIBER_RETENTION_DAYS) are in transcriber.pipeline.deletions,
and end the same way (`remove_bytes`).

A deletion removes the row, not flags it: the record, its transcript, corrections and
share links go in one statement (sql/deletion.sql), journaled `deleted` with who, when
and the size in the journal, which outlives the record (sql/0011). The owner's quota is
freed by that commit. The stored bytes go right after it: the upload, the normalized
audio the record names, and every file named by any of its claims (audio a step
published or is writing, scratch copies). A step still working on the record finds
every fenced write refused (its token went with the row); its published audio is
removed by its refused commit (`Saved.on_refused`), its unpublished files by its own
cleanup.

The deletion finishes whatever happens after its commit. The same statement names the
record's stored bytes in `removals` (sql/0021_removals.sql), and that to-do row goes
only once every byte is gone. A process killed between the commit and the removal (or
halfway through it), a store that is away, a reply lost on its way (whose retry finds
no record: 404) leave the row; every daemon finishes such rows at start and every few
minutes (`finish_removals`, run by transcriber.pipeline.deletions.keep_removing),
whatever their age.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from actors.log import event
from transcriber.db.database import Database
from transcriber.storage.blobs import Blobs, StorageError

REMOVALS_BATCH = 100
"""Unfinished removals one round reads at a time."""


@attrs.frozen
class Deleted:
    id: uuid.UUID
    size_bytes: int | None
    files: list[str]
    """Refs of the stored bytes removed."""
    kept: list[str] = attrs.field(factory=list)
    """Refs the store could not remove now (it was away): the record's `removals` row
    stays, and the daemons' next removal round tries again."""
    claims_kept: bool = False
    """The claims' files could not be listed or removed now: the row stays too."""

    @property
    def finished(self) -> bool:
        return not self.kept and not self.claims_kept


async def delete_own(
    db: Database,
    store: Blobs,
    owner: int,
    ids: Sequence[uuid.UUID],
    *,
    via: str,
) -> list[Deleted]:
    """Delete the owner's records among `ids` (another owner's and unknown ones are
    left alone and not in the answer), journaled with origin `human`, `by: owner` and
    `via` (api, page). Cancellation: one statement, committed or not; then see
    `remove_bytes`."""
    rows = await db.fetch("owner_delete", owner, list(ids), {"by": "owner", "via": via})
    return await remove_bytes(db, store, rows)


async def remove_bytes(db: Database, store: Blobs, rows: Sequence[Any]) -> list[Deleted]:
    """The stored bytes of the records a deleting query (sql/deletion.sql) just
    deleted, removed, and their `removals` rows with them.

    Cancellation: shielded (`Blobs.remove`, `remove_record_files`), so a caller
    cancelled after its deletion committed leaves no bytes behind. Whatever stops it
    short — the store away, the database away for the last step, the process killed —
    leaves the `removals` rows, which the daemons' rounds finish."""
    done: list[Deleted] = []
    with trio.CancelScope(shield=True):
        for row in rows:
            refs = [r for r in (row["source_path"], row["audio_path"]) if r]
            done.append(await _remove_bytes(db, store, row["id"], refs, row["size_bytes"]))
    for d in done:
        event(logging.INFO, "deleted", id=d.id, size=d.size_bytes, files=len(d.files))
    return done


async def finish_removals(db: Database, store: Blobs, batch: int = REMOVALS_BATCH) -> list[Deleted]:
    """Remove the bytes of every deletion that did not finish (its `removals` row is
    there), whatever its age, and their rows: a batch at a time while whole batches
    finish. Several processes may run it at once: removing what is gone is harmless,
    and a row goes only after its bytes.

    Cancellation: shielded per record, so a cancelled round leaves each record's bytes
    removed and its row gone, or its row there; the next round finishes it. Raises
    what the database raises (the caller's round is then tried again)."""
    done: list[Deleted] = []
    while True:
        rows = await db.fetch("unfinished_removals", batch)
        round_: list[Deleted] = []
        for r in rows:
            await trio.lowlevel.checkpoint()  # a cancelled round stops between records
            with trio.CancelScope(shield=True):
                refs = list(r["refs"])
                round_.append(await _remove_bytes(db, store, r["recording_id"], refs, None))
        done += round_
        if len(rows) < batch or not all(d.finished for d in round_):
            return done


async def _remove_bytes(
    db: Database, store: Blobs, rid: uuid.UUID, refs: list[str], size: int | None
) -> Deleted:
    """The stored bytes of the deleted record `rid` removed (its refs, and its claims'
    files on this host and in the store), then its `removals` row; the store's failures
    are logged and leave the row."""
    files: list[str] = []
    kept: list[str] = []
    for ref in refs:
        try:
            await store.remove(ref)
            files.append(ref)
        except StorageError as e:
            kept.append(ref)
            event(logging.WARNING, "deleted_bytes_kept", id=rid, error=str(e))
    claims_kept = False
    try:
        files += [f for f in await store.remove_record_files(rid) if f not in files]
    except StorageError as e:
        claims_kept = True
        event(logging.WARNING, "deleted_bytes_kept", id=rid, error=str(e))
    gone = Deleted(rid, size, files, kept, claims_kept)
    if gone.finished:
        try:
            await db.execute("removal_done", rid)
        except Exception as e:  # the database away: the next round finds nothing to remove
            event(logging.WARNING, "removal_row_kept", id=rid, error=str(e))
    return gone
