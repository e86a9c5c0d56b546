"""Owners and their API tokens: a token is shown once; only its hash is stored."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets

import asyncpg
import attrs

from transcriber.db.database import Database


@attrs.frozen
class NewOwner:
    id: int
    name: str
    token: str


class OwnerExists(Exception):
    pass


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class NoSuchOwner(Exception):
    pass


def new_token() -> str:
    return "tr_" + secrets.token_urlsafe(32)


async def add_owner(db: Database, name: str) -> NewOwner:
    token = new_token()
    try:
        owner_id = await db.fetchval("owner_add", name, token_hash(token))
    except asyncpg.UniqueViolationError as e:
        raise OwnerExists(name) from e
    return NewOwner(owner_id, name, token)


@attrs.frozen
class OwnerSummary:
    """An owner as the operator lists them, with what they keep."""

    name: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None
    recordings: int
    stored_bytes: int


async def list_owners(db: Database) -> list[OwnerSummary]:
    """Every owner, by name. Cancellation: a plain read."""
    return [
        OwnerSummary(
            r["name"], r["created_at"], r["revoked_at"], r["recordings"], r["stored_bytes"]
        )
        for r in await db.fetch("owner_list")
    ]


async def owner_named(db: Database, name: str) -> int | None:
    """The id of the owner called `name`, or None. Cancellation: a plain read."""
    row = await db.fetchrow("owner_by_name", name)
    return None if row is None else int(row["id"])


@attrs.frozen
class Rotated:
    """A new token, and how many live share links the owner keeps through it."""

    owner: NewOwner
    live_links: int


async def rotate_token(db: Database, name: str) -> Rotated:
    """A new token for `name`; the old one stops working with this commit (every
    request looks its token up afresh). A revoked owner is reinstated by it.

    Their live share links stay: rotation is a new token, not a new person, and a link
    is the owner's word to someone else, not a use of the token (rotating a token that
    may be lost must not break every link its owner gave out). A link made with a token
    used by someone else is ended by `revoke` (every link, for good) or one by one by
    the operator (`transcriber share revoke`). Cancellation: one statement."""
    token = new_token()
    row = await db.fetchrow("owner_rotate", name, token_hash(token))
    if row is None:
        raise NoSuchOwner(name)
    return Rotated(NewOwner(row["id"], name, token), int(row["links"]))


async def revoke(db: Database, name: str, *, by: str) -> int:
    """`name`'s token stops working at once and every share link they made ends for
    good (a later `rotate_token` reinstates the owner, not the links), each journaled
    `share_revoked` with origin `human` and `by`; their records stay as they are. The
    number of links ended. A link being made meanwhile is ended too, or not made.
    Cancellation: one transaction, committed or not (calling again is safe)."""

    async def work(con: asyncpg.Connection) -> int | None:
        async with con.transaction():
            owner = await con.fetchval(db.sql("owner_revoke"), name)
            if owner is None:
                return None
            # A statement of its own, after the owner's row lock: it sees a link whose
            # making held that lock (sql/shares.sql `share_add`), committed meanwhile.
            return int(await con.fetchval(db.sql("owner_revoke_shares"), owner, {"by": by}))

    links = await db.run(work)
    if links is None:
        raise NoSuchOwner(name)
    return links


LOCAL_OWNER = "local"


async def local_owner(db: Database) -> int:
    """The owner of recordings given on this machine's command line. It has no usable
    API token: its stored hash is of random bytes nobody holds."""
    return int(await db.fetchval("owner_ensure", LOCAL_OWNER, secrets.token_bytes(32)))


async def owner_of_token(db: Database, token: str) -> int | None:
    """The id of the owner whose API token this is, or None.

    Only the token's sha256 is stored, so the database lookup compares hashes, which
    tells an attacker nothing about the token; the final comparison is constant-time
    anyway, so no code path compares the secret in a data-dependent time.
    Cancellation: a plain query; nothing to undo.
    """
    if not token or len(token) > 512:
        return None
    wanted = token_hash(token)
    row = await db.fetchrow("owner_by_token", wanted)
    if row is None or not hmac.compare_digest(bytes(row["token_hash"]), wanted):
        return None
    return int(row["id"])


async def holder_of_token_hash(db: Database, hashed: bytes) -> int | None:
    """The id of the owner whose current API token has this sha256, or None (a page
    session checks the token it was signed in with by its stored hash). Cancellation: a
    plain read."""
    row = await db.fetchrow("owner_by_token", hashed)
    return None if row is None else int(row["id"])
