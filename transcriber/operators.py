"""Operators and their tokens: the people who run the service, apart from the owners of
recordings. An operator's token opens the operator's screen (/ops) only — never the
API nor an owner's page — and is shown once; only its sha256 is stored."""

from __future__ import annotations

import datetime as dt
import hmac
import secrets

import asyncpg
import attrs

from transcriber.db.database import Database
from transcriber.owners import token_hash


@attrs.frozen
class NewOperator:
    id: int
    name: str
    token: str


@attrs.frozen
class OperatorSummary:
    name: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None


@attrs.frozen
class SignedOperator:
    id: int
    name: str


class OperatorExists(Exception):
    pass


class NoSuchOperator(Exception):
    pass


def new_token() -> str:
    # Its own prefix: a pasted token says which kind it is.
    return "tro_" + secrets.token_urlsafe(32)


async def add_operator(db: Database, name: str) -> NewOperator:
    """A new operator and their token. Raises OperatorExists. Cancellation: one
    statement; cut off before its answer, the token is lost (rotate gives another)."""
    token = new_token()
    try:
        operator_id = await db.fetchval("operator_add", name, token_hash(token))
    except asyncpg.UniqueViolationError as e:
        raise OperatorExists(name) from e
    return NewOperator(operator_id, name, token)


async def list_operators(db: Database) -> list[OperatorSummary]:
    """Every operator, by name. Cancellation: a plain read."""
    return [
        OperatorSummary(r["name"], r["created_at"], r["revoked_at"])
        for r in await db.fetch("operator_list")
    ]


async def rotate_token(db: Database, name: str) -> NewOperator:
    """A new token for `name`; the old one and every session signed in with it stop at
    once. A revoked operator is reinstated. Cancellation: one statement."""
    token = new_token()
    operator_id = await db.fetchval("operator_rotate", name, token_hash(token))
    if operator_id is None:
        raise NoSuchOperator(name)
    return NewOperator(operator_id, name, token)


async def revoke(db: Database, name: str) -> None:
    """`name`'s token and sessions stop at once. Cancellation: one statement."""
    if await db.fetchval("operator_revoke", name) is None:
        raise NoSuchOperator(name)


async def operator_of_token(db: Database, token: str) -> SignedOperator | None:
    """The operator whose token this is, or None. Looked up by the token's hash, compared
    again in constant time (as `owners.owner_of_token`). Cancellation: a plain read."""
    if not token or len(token) > 512:
        return None
    wanted = token_hash(token)
    row = await db.fetchrow("operator_by_token", wanted)
    if row is None or not hmac.compare_digest(bytes(row["token_hash"]), wanted):
        return None
    return SignedOperator(int(row["id"]), str(row["name"]))
