"""The owner's sign-in sessions of the page, stored by the hash of their secret with
the hash of the API token signed in with: a session lives only while its owner still
holds that token (transcriber.http.page.session has the cookie and the checks around
it)."""

from __future__ import annotations

import attrs

from transcriber.db.database import Database
from transcriber.owners import holder_of_token_hash


@attrs.frozen
class LiveSession:
    owner: int
    csrf: str
    """The session's anti-forgery token."""


async def start_session(
    db: Database, owner: int, secret_hash: bytes, csrf: str, lifetime_s: float
) -> None:
    """A new session of `owner`, holding their current token, for `lifetime_s`; the
    sessions no token can use any more go first. Cancellation: plain statements; a
    session cut off before its answer is never used."""
    await db.execute("page_sessions_sweep")
    await db.execute("page_session_add", owner, secret_hash, csrf, lifetime_s)


async def live_session(db: Database, secret_hash: bytes) -> LiveSession | None:
    """The session of this secret's hash if it has not expired and its owner still
    holds the token it was signed in with (checked as the API checks a token).
    Cancellation: plain reads."""
    row = await db.fetchrow("page_session", secret_hash)
    if row is None:
        return None
    if await holder_of_token_hash(db, bytes(row["token_hash"])) != row["owner_id"]:
        return None
    return LiveSession(row["owner_id"], row["csrf"])


async def end_session(db: Database, owner: int, secret_hash: bytes) -> None:
    """The owner signs out of this session. Cancellation: one statement."""
    await db.execute("page_session_end", owner, secret_hash)


# --- the operator's screen (/ops): sessions of kind 'operator' --------------------------


@attrs.frozen
class LiveOperatorSession:
    operator: int
    name: str
    csrf: str


async def start_operator_session(
    db: Database, operator: int, secret_hash: bytes, csrf: str, lifetime_s: float
) -> None:
    """A new session of `operator`, as `start_session` for an owner. Cancellation: plain
    statements; a session cut off before its answer is never used."""
    await db.execute("page_sessions_sweep")
    await db.execute("ops_session_add", operator, secret_hash, csrf, lifetime_s)


async def live_operator_session(db: Database, secret_hash: bytes) -> LiveOperatorSession | None:
    """The operator's session of this secret's hash while it has not expired and its
    operator still holds the token signed in with; an owner's session is None here (as
    an operator's is to `live_session`). Cancellation: a plain read."""
    row = await db.fetchrow("ops_session", secret_hash)
    if row is None:
        return None
    return LiveOperatorSession(int(row["operator_id"]), str(row["name"]), str(row["csrf"]))


async def end_operator_session(db: Database, operator: int, secret_hash: bytes) -> None:
    """The operator signs out of this session. Cancellation: one statement."""
    await db.execute("ops_session_end", operator, secret_hash)
