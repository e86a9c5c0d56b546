"""Owners and their API tokens: a token is shown once; only its hash is stored."""

from __future__ import annotations

import hashlib
import secrets

import asyncpg
import attrs

from transcriber.db import Database


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


async def rotate_token(db: Database, name: str) -> NewOwner:
    """A new token for `name`; the old one stops working with this commit (every
    request looks its token up afresh). A revoked owner is reinstated by it."""
    token = new_token()
    owner_id = await db.fetchval("owner_rotate", name, token_hash(token))
    if owner_id is None:
        raise NoSuchOwner(name)
    return NewOwner(owner_id, name, token)


async def revoke(db: Database, name: str) -> None:
    """`name`'s token stops working at once; their records stay as they are."""
    if await db.fetchval("owner_revoke", name) is None:
        raise NoSuchOwner(name)


LOCAL_OWNER = "local"


async def local_owner(db: Database) -> int:
    """The owner of recordings given on this machine's command line. It has no usable
    API token: its stored hash is of random bytes nobody holds."""
    return await db.fetchval("owner_ensure", LOCAL_OWNER, secrets.token_bytes(32))
