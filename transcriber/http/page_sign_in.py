"""Signing in to the owner's page: a session cookie instead of the bearer token, and the
checks that keep another site from acting with it.

The owner gives their API token once; the server answers with a random session secret
in an HttpOnly, SameSite=Strict cookie (over HTTPS, or behind a proxy that says
`X-Forwarded-Proto: https`, Secure and named with the `__Host-` prefix; over plain HTTP
without it, which browsers refuse there). Only the secret's sha256 is stored, with the owner and the
hash of the token signed in with (transcriber.records.page_sessions): every request
checks that hash with the API's own token lookup, so a session lives only while its
token would still let the owner use the API — rotating or revoking the token ends it. Every
state-changing request must carry the session's anti-forgery token (a form field or the
`X-CSRF-Token` header) and, when the browser names one, come from this very origin.

The API's `middleware.Guard` lets the page's paths through without a bearer token
(`page.is_page_path`); the session is checked here, by a dependency, before a route
reads any of the body.

`PageOwner` is the page's counterpart of `Owner`: it yields the same owner id. The
bearer tokens of the API are untouched by any of this.
"""

from __future__ import annotations

import hashlib
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
from transcriber.owners import owner_of_token
from transcriber.records.page_sessions import end_session, live_session, start_session

COOKIE = "transcriber_session"
"""The session cookie's name over plain HTTP (loopback, or a network the operator
trusts without TLS): a browser refuses the `__Host-` prefix on a cookie that is not
Secure, and a Secure cookie is not sent back over plain HTTP."""
HTTPS_COOKIE = "__Host-" + COOKIE
"""Its name over HTTPS: the browser then takes it only as Secure, for this host alone
(no Domain) and all its paths, so neither a sibling subdomain nor a plain-HTTP page can
set or shadow it."""
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
SIGNIN_PATH = "/signin"
SESSION_EXPIRED = "your session has ended; sign in again"
FORGED = "refused: this request did not come from this site's own page"


@attrs.frozen
class PageSession:
    owner: int
    csrf: str
    secret_hash: bytes


def secret_hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def is_https(request: Request) -> bool:
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme == "https" or forwarded == "https"


async def sign_in(db: Database, token: str, lifetime_s: float) -> tuple[str, str] | None:
    """A new session for the owner of API token `token`: (the cookie's secret, the
    anti-forgery token), or None when no owner holds the token.
    Cancellation: plain queries; a session cut off before its answer is never used."""
    owner = await owner_of_token(db, token)
    if owner is None:
        return None
    secret, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    await start_session(db, owner, secret_hash(secret), csrf, lifetime_s)
    return secret, csrf


def cookie_name(request: Request) -> str:
    return HTTPS_COOKIE if is_https(request) else COOKIE


def set_cookie(response: Response, request: Request, secret: str, lifetime_s: float) -> None:
    response.set_cookie(
        cookie_name(request),
        secret,
        max_age=int(lifetime_s),
        path="/",
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )


def clear_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(
        cookie_name(request), path="/", httponly=True, samesite="strict", secure=is_https(request)
    )


async def session_of(db: Database, request: Request) -> PageSession | None:
    """The live session of the request's cookie, if any. Cancellation: a plain read."""
    secret = request.cookies.get(cookie_name(request))
    if not secret or len(secret) > 200:
        return None
    hashed = secret_hash(secret)
    live = await live_session(db, hashed)
    return None if live is None else PageSession(live.owner, live.csrf, hashed)


async def sign_out(db: Database, session: PageSession) -> None:
    """The session ends. Cancellation: one statement."""
    await end_session(db, session.owner, session.secret_hash)


def wants_html(request: Request) -> bool:
    """A page the browser navigates to (answered with a redirect to sign in), not a
    request of the page's script (answered 401, which the script handles in place, so
    nothing typed is lost)."""
    return (
        request.method == "GET"
        and "text/html" in request.headers.get("accept", "")
        and not request.headers.get(CSRF_HEADER)
    )


def sign_in_first(request: Request) -> ApiError:
    if wants_html(request):
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        where = f"{SIGNIN_PATH}?{urllib.parse.urlencode({'next': back})}"
        return ApiError(303, SESSION_EXPIRED, {"Location": where})
    return ApiError(401, SESSION_EXPIRED)


def same_origin(request: Request) -> bool:
    """False when the browser says the request comes from another site: an `Origin`
    other than this host, or `Sec-Fetch-Site: cross-site`. Browsers send one or both
    with every POST; a client that sends neither is not a browser acting for a page."""
    if request.headers.get("sec-fetch-site", "") == "cross-site":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("x-forwarded-host") or request.headers.get("host", "")
    return origin != "null" and urllib.parse.urlsplit(origin).netloc == host


def check_origin(request: Request) -> None:
    if not same_origin(request):
        raise ApiError(403, FORGED)


def check_csrf(request: Request, session: PageSession, sent: str | None) -> None:
    """The request came from this site's page: same origin and the session's token."""
    check_origin(request)
    if not sent or not hmac.compare_digest(sent.encode(), session.csrf.encode()):
        raise ApiError(403, FORGED)


async def page_session(request: Request, db: Db) -> PageSession:
    """The signed-in owner's session; a page is redirected to sign in, a script's
    request answered 401."""
    session = await session_of(db, request)
    if session is None:
        raise sign_in_first(request)
    return session


async def changing_session(request: Request, db: Db) -> PageSession:
    """`page_session` for a state-changing request sent by the page's script: the
    anti-forgery token comes in the `X-CSRF-Token` header, checked before the body is
    read. (Forms put it in a field; their routes call `check_csrf` themselves.)"""
    check_origin(request)
    session = await page_session(request, db)
    check_csrf(request, session, request.headers.get(CSRF_HEADER))
    return session


Session = Annotated[PageSession, Depends(page_session)]
ChangingSession = Annotated[PageSession, Depends(changing_session)]


async def page_owner(session: Session) -> int:
    return session.owner


PageOwner = Annotated[int, Depends(page_owner)]
"""The same owner id as `transcriber.http.auth.Owner`, from the session cookie."""
