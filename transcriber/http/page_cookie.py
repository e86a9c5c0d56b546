"""The owner's page's session cookie as every face that takes it reads it: the page
(`transcriber.http.page.session`, which signs in and out with it) and the live socket,
which the page's script opens with it (`transcriber.http.live.session`). Faces never
import each other, so its names and the owner it vouches for live here, in the core."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from transcriber.db.database import Database
from transcriber.http.sessions import SECRET_MAX, is_https, secret_hash
from transcriber.records.page_sessions import live_session

COOKIE = "transcriber_session"
"""The session cookie's name over plain HTTP: a browser refuses the `__Host-` prefix on
a cookie that is not Secure, and a Secure cookie is not sent back over plain HTTP."""
HTTPS_COOKIE = "__Host-" + COOKIE
"""Its name over HTTPS."""


def page_secret(connection: HTTPConnection) -> str | None:
    """The secret of the owner's page session the connection carries, if any (over TLS
    only the `__Host-` cookie, which no sibling subdomain can set)."""
    secret = connection.cookies.get(HTTPS_COOKIE if is_https(connection) else COOKIE)
    return secret if secret and len(secret) <= SECRET_MAX else None


async def owner_of_page_secret(db: Database, secret: str) -> int | None:
    """The owner whose live page session `secret` is, else None (unknown, expired, or its
    token revoked). Cancellation: plain reads."""
    found = await live_session(db, secret_hash(secret))
    return None if found is None else found.owner
