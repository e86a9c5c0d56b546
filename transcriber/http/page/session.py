"""Signing in to the owner's page: a session of kind 'owner' (transcriber.http.sessions
has the flow and the checks every kind shares) bought with the owner's API token.

Its cookie is scoped to the whole site: over HTTPS named with the `__Host-` prefix, so
the browser takes it only as Secure, for this host alone (no Domain) and all its paths,
and neither a sibling subdomain nor a plain-HTTP page can set or shadow it; over plain
HTTP (loopback, or a network the operator trusts without TLS) without it, which
browsers refuse there. Every request checks the stored hash of the token signed in
with by the API's own token lookup, so rotating or revoking the token ends the session.

The API's `middleware.Guard` lets the page's paths through without a bearer token
(`page.FACE.authenticates`); the session is checked here, by a dependency, before a route
reads any of the body.

`PageOwner` is the page's counterpart of `Owner`: it yields the same owner id. The
bearer tokens of the API are untouched by any of this.
"""

from __future__ import annotations

from typing import Annotated

import attrs
from fastapi import Depends, Request

from transcriber.db.database import Database
from transcriber.http.deps import Db
from transcriber.http.page_cookie import COOKIE, HTTPS_COOKIE
from transcriber.http.sessions import (
    CSRF_FIELD,
    CSRF_HEADER,
    FORGED,
    SESSION_EXPIRED,
    SessionKind,
    check_csrf,
    check_origin,
    is_https,
    same_origin,
    secret_hash,
    wants_html,
)
from transcriber.owners import owner_of_token
from transcriber.records.page_sessions import end_session, live_session, start_session

__all__ = [
    "COOKIE",
    "CSRF_FIELD",
    "CSRF_HEADER",
    "FORGED",
    "HTTPS_COOKIE",
    "OWNER",
    "SESSION_EXPIRED",
    "SIGNIN_PATH",
    "ChangingSession",
    "PageOwner",
    "PageSession",
    "Session",
    "check_csrf",
    "check_origin",
    "is_https",
    "same_origin",
    "secret_hash",
    "session_of",
    "wants_html",
]

SIGNIN_PATH = "/signin"


@attrs.frozen
class PageSession:
    owner: int
    csrf: str
    secret_hash: bytes


async def _start(
    db: Database, token: str, hashed: bytes, csrf: str, lifetime_s: float
) -> str | None:
    owner = await owner_of_token(db, token)
    if owner is None:
        return None
    await start_session(db, owner, hashed, csrf, lifetime_s)
    return str(owner)


async def _find(db: Database, hashed: bytes) -> PageSession | None:
    live = await live_session(db, hashed)
    return None if live is None else PageSession(live.owner, live.csrf, hashed)


async def _end(db: Database, session: PageSession) -> None:
    await end_session(db, session.owner, session.secret_hash)


OWNER: SessionKind[PageSession] = SessionKind(
    cookie=COOKIE,
    https_cookie=HTTPS_COOKIE,
    path="/",
    home="/",
    signin_path=SIGNIN_PATH,
    start=_start,
    find=_find,
    end=_end,
)

session_of = OWNER.session_of


# Dependencies as plain coroutine functions of their own (FastAPI awaits them in place).
async def page_session(request: Request, db: Db) -> PageSession:
    """The signed-in owner's session (`SessionKind.required`)."""
    return await OWNER.required(request, db)


async def changing_session(request: Request, db: Db) -> PageSession:
    """The session of a change sent by the page's script (`SessionKind.changing`)."""
    return await OWNER.changing(request, db)


Session = Annotated[PageSession, Depends(page_session)]
ChangingSession = Annotated[PageSession, Depends(changing_session)]


async def page_owner(session: Session) -> int:
    return session.owner


PageOwner = Annotated[int, Depends(page_owner)]
"""The same owner id as `transcriber.http.auth.Owner`, from the session cookie."""
