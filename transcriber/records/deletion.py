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
cleanup. A process killed between the commit and the removal leaves files no record
names: the startup sweep removes them.
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


@attrs.frozen
class Deleted:
    id: uuid.UUID
    size_bytes: int | None
    files: list[str]
    """Refs of the stored bytes removed."""
    kept: list[str] = attrs.field(factory=list)
    """Refs the store could not remove now (it was away): the startup sweep's."""


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
    return await remove_bytes(store, rows)


async def remove_bytes(store: Blobs, rows: Sequence[Any]) -> list[Deleted]:
    """The stored bytes of the records a deleting query (sql/deletion.sql) just
    deleted, removed.

    Cancellation: shielded (`Blobs.remove`, `remove_record_files`), so a caller
    cancelled after its deletion committed leaves no bytes behind but when the store is
    away (the startup sweep's then)."""
    done: list[Deleted] = []
    with trio.CancelScope(shield=True):
        done += [await _remove_bytes(store, row) for row in rows]
    return done


async def _remove_bytes(store: Blobs, row: Any) -> Deleted:
    """The stored bytes of the deleted record `row`, removed; the store's failures are
    logged and left to the startup sweep."""
    files: list[str] = []
    kept: list[str] = []
    for ref in (row["source_path"], row["audio_path"]):
        if ref:
            try:
                await store.remove(ref)
                files.append(ref)
            except StorageError as e:
                kept.append(ref)
                event(logging.WARNING, "deleted_bytes_kept", id=row["id"], error=str(e))
    try:
        files += [f for f in await store.remove_record_files(row["id"]) if f not in files]
    except StorageError as e:
        event(logging.WARNING, "deleted_bytes_kept", id=row["id"], error=str(e))
    event(logging.INFO, "deleted", id=row["id"], size=row["size_bytes"], files=len(files))
    return Deleted(row["id"], row["size_bytes"], files, kept)
