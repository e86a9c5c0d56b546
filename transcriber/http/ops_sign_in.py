"""Signing in to the operator's screen (/ops): the owner's page's rules
(transcriber.http.page_sign_in) with an operator's token and a session of kind
'operator' — its own cookie, scoped to /ops, HttpOnly, SameSite=Strict, Secure over
HTTPS; the anti-forgery token and origin checks on every change.

The two kinds never cross: an owner's session secret finds no operator session (and an
operator's none of an owner's, see sql/page.sql `page_session`), whichever cookie it
is sent in; an operator's token is no owner's API token.
"""

from __future__ import annotations

import hmac
import secrets
import urllib.parse
from typing import Annotated

import attrs
from fastapi import Depends, Request
from fastapi.responses import Response

from transcriber.db.database import Database
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError
from transcriber.http.page_sign_in import (
    CSRF_HEADER,
    FORGED,
    SESSION_EXPIRED,
    check_origin,
    is_https,
    secret_hash,
    wants_html,
)
from transcriber.operators import operator_of_token
from transcriber.records.page_sessions import (
    end_operator_session,
    live_operator_session,
    start_operator_session,
)

COOKIE = "transcriber_ops_session"
PREFIX = "/ops"
SIGNIN_PATH = "/ops/signin"


@attrs.frozen
class OpsSession:
    operator: int
    name: str
    csrf: str
    secret_hash: bytes


async def sign_in(db: Database, token: str, lifetime_s: float) -> tuple[str, str, str] | None:
    """A new session for the operator holding `token`: (cookie secret, anti-forgery
    token, operator's name), or None. Cancellation: plain queries."""
    signed = await operator_of_token(db, token)
    if signed is None:
        return None
    secret, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    await start_operator_session(db, signed.id, secret_hash(secret), csrf, lifetime_s)
    return secret, csrf, signed.name


def set_cookie(response: Response, request: Request, secret: str, lifetime_s: float) -> None:
    response.set_cookie(
        COOKIE,
        secret,
        max_age=int(lifetime_s),
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )


def clear_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(
        COOKIE, path=PREFIX, httponly=True, samesite="strict", secure=is_https(request)
    )


async def session_of(db: Database, request: Request) -> OpsSession | None:
    """The live operator session of the request's cookie. Cancellation: a plain read."""
    secret = request.cookies.get(COOKIE)
    if not secret or len(secret) > 200:
        return None
    hashed = secret_hash(secret)
    live = await live_operator_session(db, hashed)
    return None if live is None else OpsSession(live.operator, live.name, live.csrf, hashed)


async def sign_out(db: Database, session: OpsSession) -> None:
    """The session ends. Cancellation: one statement."""
    await end_operator_session(db, session.operator, session.secret_hash)


def sign_in_first(request: Request) -> ApiError:
    if wants_html(request):
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        where = f"{SIGNIN_PATH}?{urllib.parse.urlencode({'next': back})}"
        return ApiError(303, SESSION_EXPIRED, {"Location": where})
    return ApiError(401, SESSION_EXPIRED)


def check_csrf(request: Request, session: OpsSession, sent: str | None) -> None:
    """The request came from this site's screen: same origin and the session's token."""
    check_origin(request)
    if not sent or not hmac.compare_digest(sent.encode(), session.csrf.encode()):
        raise ApiError(403, FORGED)


async def ops_session(request: Request, db: Db) -> OpsSession:
    """The signed-in operator's session; a page is redirected to sign in, a script's
    request answered 401."""
    session = await session_of(db, request)
    if session is None:
        raise sign_in_first(request)
    return session


async def changing_session(request: Request, db: Db) -> OpsSession:
    """`ops_session` for a change sent by the screen's script (`X-CSRF-Token`)."""
    check_origin(request)
    session = await ops_session(request, db)
    check_csrf(request, session, request.headers.get(CSRF_HEADER))
    return session


OperatorSession = Annotated[OpsSession, Depends(ops_session)]
ChangingOperatorSession = Annotated[OpsSession, Depends(changing_session)]
