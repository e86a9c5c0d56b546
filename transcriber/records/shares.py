"""Read-only links to one record, for people without an account: the owner makes
several, each with a note and an optional expiry, sees how often each was opened, and
revokes any at once.

A link holds a long random secret (256 bits, URL-safe); only its sha256 is stored, so
the database (or a backup of it) cannot open a link. Whoever holds a live link reads
that one record — its card, audio, transcript with the owner's corrections, downloads —
through the owner's own queries, and nothing else: no other record, no edit.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from typing import Any

import attrs

from transcriber.db.database import Database

NOTE_MAX = 200
"""Characters of a link's note: who it is for, say."""


@attrs.frozen
class Shared:
    """What a live link opens: one record of one owner."""

    owner: int
    recording_id: uuid.UUID


def secret_hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


async def add_share(
    db: Database, owner: int, recording_id: Any, *, note: str, expires_at: dt.datetime | None
) -> tuple[str, dict[str, Any]] | None:
    """A new link to the owner's record: its secret (shown once, never stored) and its
    row; None if the record is not theirs. Cancellation: one statement; a link cut off
    before its answer is never known to anyone, and so never opened."""
    secret = secrets.token_urlsafe(32)
    row = await db.fetchrow("share_add", owner, recording_id, secret_hash(secret), note, expires_at)
    return None if row is None else (secret, dict(row))


async def shares_of(db: Database, owner: int, recording_id: Any) -> list[dict[str, Any]]:
    """The links to the owner's record, oldest first, each with `live` (neither
    revoked nor expired). Cancellation: a plain read."""
    now = dt.datetime.now(dt.UTC)
    return [
        {
            **dict(r),
            "live": r["revoked_at"] is None and (r["expires_at"] is None or r["expires_at"] > now),
        }
        for r in await db.fetch("owner_shares", owner, recording_id)
    ]


async def revoke_share(db: Database, owner: int, recording_id: Any, share_id: Any) -> bool:
    """End the owner's link at once; False if it is not a link of their record.
    Cancellation: one statement."""
    return await db.fetchval("share_revoke", owner, recording_id, share_id) is not None


async def open_share(db: Database, secret: str, *, count: bool) -> Shared | None:
    """The record a live link opens, else None (unknown, revoked, expired, or its
    record deleted); `count`: an opening of the shared page, counted for the owner.
    Cancellation: one statement."""
    found = secret_hash(secret)
    if count:
        row = await db.fetchrow("share_open", found)
    else:
        row = await db.fetchrow("share_find", found)
    return None if row is None else Shared(row["owner_id"], row["recording_id"])
