"""Who is calling: the owner behind an `Authorization: Bearer <token>` header."""

from __future__ import annotations

import hmac

from transcriber.db import Database
from transcriber.owners import token_hash


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
    return row["id"]

