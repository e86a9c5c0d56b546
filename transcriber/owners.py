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


async def add_owner(db: Database, name: str) -> NewOwner:
    token = "tr_" + secrets.token_urlsafe(32)
    try:
        owner_id = await db.fetchval("owner_add", name, token_hash(token))
    except asyncpg.UniqueViolationError as e:
        raise OwnerExists(name) from e
    return NewOwner(owner_id, name, token)


LOCAL_OWNER = "local"


async def local_owner(db: Database) -> int:
    """The owner of recordings given on this machine's command line. It has no usable
    API token: its stored hash is of random bytes nobody holds."""
    return await db.fetchval("owner_ensure", LOCAL_OWNER, secrets.token_bytes(32))
