"""The operator's view of every owner's share links (`transcriber share list|revoke`, the
screen's `/ops/shares`): list them and end any at once.

What the operator sees of a link is its ids, its owner's name, its times, how often it
was opened and its state, never its note (the owner's words) nor anything of the record
but its id; the secret is stored only as a hash and so cannot be shown. The owner's own
view and revoke are in transcriber.records.shares. Every revoke here is journaled on the
link's record as `share_revoked`, origin `human`, with who did it (`by`), as the
operator's resume and delete are.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence

import attrs

from transcriber.db.database import Database

LIST_MAX = 1000
"""The most links one list shows, newest first."""

STATES = ("live", "expired", "revoked", "owner_revoked")
"""A link's state: answering; past its expiry; revoked (by its owner, an operator, or
its owner's revocation); its owner revoked (every route refuses it: sql/shares.sql)."""


@attrs.frozen
class OwnerLink:
    """One link as the operator sees it: no note, no text."""

    id: uuid.UUID
    recording_id: uuid.UUID
    owner: str
    created_at: dt.datetime
    expires_at: dt.datetime | None
    revoked_at: dt.datetime | None
    opened: int
    last_opened_at: dt.datetime | None
    state: str


async def links(db: Database, owner: str | None = None, limit: int = LIST_MAX) -> list[OwnerLink]:
    """The links of `owner` (a name; None: every owner), newest first, at most `limit`.
    Cancellation: a plain read."""
    return [
        OwnerLink(
            r["id"],
            r["recording_id"],
            r["owner"],
            r["created_at"],
            r["expires_at"],
            r["revoked_at"],
            int(r["opened"]),
            r["last_opened_at"],
            r["state"],
        )
        for r in await db.fetch("ops_shares", owner, limit)
    ]


@attrs.frozen
class Revoked:
    """What one revoke of links did: those it ended now, those revoked already, those
    unknown (never made, or gone with their record)."""

    ended: list[uuid.UUID]
    already: list[uuid.UUID]
    unknown: list[uuid.UUID]


async def revoke(db: Database, ids: Sequence[uuid.UUID], *, by: str) -> Revoked:
    """End links `ids` of any owner at once, each journaled `share_revoked` (origin
    `human`, `by`) on its record; revoking one again changes and journals nothing.
    Cancellation: one statement, committed or not (calling again is safe); then a
    read that only sorts the answer."""
    wanted = list(dict.fromkeys(ids))
    rows = await db.fetch("ops_share_revoke", wanted, {"by": by})
    ended = {r["id"] for r in rows}
    known = {r["id"] for r in await db.fetch("ops_shares_known", wanted)}
    return Revoked(
        [i for i in wanted if i in ended],
        [i for i in wanted if i in known and i not in ended],
        [i for i in wanted if i not in known],
    )
