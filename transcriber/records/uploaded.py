"""The record of an upload over HTTP: committed once its file is in the store, found
again by the owner's Idempotency-Key, or without one by the fingerprint of the same
request."""

from __future__ import annotations

import uuid
from typing import Any

from transcriber.db.database import Database


async def commit_upload(
    db: Database,
    owner: int,
    *,
    filename: str | None,
    size: int,
    ref: str,
    language: str | None,
    title: str | None,
    key: str | None,
    options: dict[str, Any] | None,
    fingerprint: bytes | None,
    via: str,
) -> uuid.UUID | None:
    """The new record of the owner's upload (file `ref` in the store) at `received`,
    journaled as `accepted` with `via`, the door it came in by; None when the owner's
    `key` was used before, or without a key the same request (`fingerprint`) made a
    record before (nothing inserted: `upload_by_key`, `upload_by_fingerprint` read the
    first).

    Cancellation: one statement; cancelled, it is unknown whether it committed (the
    caller shields it).
    """
    rid: uuid.UUID | None = await db.fetchval(
        "accept_upload",
        owner,
        filename,
        size,
        ref,
        language,
        title,
        key,
        options,
        fingerprint,
        via,
    )
    return rid


async def upload_by_key(db: Database, owner: int, key: str) -> Any:
    """The owner's record made with Idempotency-Key `key` (`id`, and the `fingerprint`
    of its request), or None. Cancellation: a plain read."""
    return await db.fetchrow("recording_by_key", owner, key)


async def upload_by_fingerprint(db: Database, owner: int, fingerprint: bytes) -> Any:
    """The owner's record made without a key by the request of `fingerprint` (`id`,
    `fingerprint`), or None. Cancellation: a plain read."""
    return await db.fetchrow("recording_by_fingerprint", owner, fingerprint)
