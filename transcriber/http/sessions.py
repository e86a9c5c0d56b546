"""Signing in to a page with a session cookie instead of a bearer token, one flow for
every kind of session: the owner's page (transcriber.http.page.session) and the
operator's screen (transcriber.http.ops.session) each name a `SessionKind` — its
cookie, the path the cookie is scoped to, where to sign in, and how its sessions are
started, found and ended — and share everything else here.

A token given once buys a random session secret in an HttpOnly, SameSite=Strict cookie,
Secure over HTTPS (or behind a proxy that says `X-Forwarded-Proto: https`); only the
secret's sha256 is stored (transcriber.records.page_sessions), with the hash of the
token signed in with, so a session lives only while its token would still be accepted.
Every state-changing request must carry the session's anti-forgery token (a form field
or the `X-CSRF-Token` header) and, when the browser names one, come from this very
origin. A page the browser navigates to is redirected to sign in; a request of a page's
script is answered 401, which the script handles in place.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Generic, Protocol, TypeVar

import attrs
from fastapi import Request
from fastapi.responses import Response
from starlette.requests import ClientDisconnect, HTTPConnection

from transcriber.db.database import Database
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError

CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
SESSION_EXPIRED = "your session has ended; sign in again"
FORGED = "refused: this request did not come from this site's own page"
SECRET_MAX = 200
"""Characters of a cookie's secret worth looking up (ours are 43)."""
SIGNIN_FORM_MAX = 4096
"""Bytes of a sign-in form (`sign_in_form`), the page's and the operator's screen's: a
token (about 50 characters), where to go next (at most 2000) and the form's own
encoding. Read before anything vouches for its sender, so it is kept small: each face
names its sign-in path in its `body_caps` (`middleware.Guard` refuses more with 413)."""


class Signed(Protocol):
    """What every kind's session holds: its anti-forgery token and its secret's hash."""

    @property
    def csrf(self) -> str: ...

    @property
    def secret_hash(self) -> bytes: ...


S = TypeVar("S", bound=Signed)


@attrs.frozen
class SignedIn:
    """A session just started: the cookie's secret, the anti-forgery token, and who
    signed in (as the log names them)."""

    secret: str
    csrf: str
    who: str


def secret_hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def is_https(request: HTTPConnection) -> bool:
    """Over TLS, here or at a proxy that says so (a WebSocket's `wss` too)."""
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return request.url.scheme in ("https", "wss") or forwarded == "https"


def same_origin(request: HTTPConnection) -> bool:
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


def from_own_page(connection: HTTPConnection) -> bool:
    """The browser says the connection was opened by a page of this very origin: an
    `Origin` of this scheme and host, and no `Sec-Fetch-Site: cross-site`. Stricter than
    `same_origin`, for a WebSocket upgrade with a session cookie: browsers send the
    cookie on another site's upgrade too, with its `Origin`; a client that names none is
    not this site's page."""
    origin = connection.headers.get("origin")
    if origin is None or not same_origin(connection):
        return False
    return urllib.parse.urlsplit(origin).scheme == ("https" if is_https(connection) else "http")


def check_origin(request: Request) -> None:
    if not same_origin(request):
        raise ApiError(403, FORGED)


def check_csrf(request: Request, session: Signed, sent: str | None) -> None:
    """The request came from this site's own page: same origin and the session's token."""
    check_origin(request)
    if not sent or not hmac.compare_digest(sent.encode(), session.csrf.encode()):
        raise ApiError(403, FORGED)


def safe_next(target: str | None, home: str = "/") -> str:
    """Where to go next (after signing in, after the language switch): `target` when it
    is `home` or a path below it, else `home`; never another site."""
    if not target or target.startswith("//") or "\\" in target:
        return home
    if target == home or target.startswith(home.rstrip("/") + "/"):
        return target
    return home


def wants_html(request: Request) -> bool:
    """A page the browser navigates to (answered with a redirect to sign in), not a
    request of a page's script (answered 401, which the script handles in place, so
    nothing typed is lost)."""
    return (
        request.method == "GET"
        and "text/html" in request.headers.get("accept", "")
        and not request.headers.get(CSRF_HEADER)
    )


async def sign_in_form(request: Request) -> tuple[str, str]:
    """The sign-in form's token and where to go next (unchecked), once the request is
    known to come from this site. Cancellation: reads the body."""
    check_origin(request)
    try:
        form = await request.form()
    except ClientDisconnect:
        raise ApiError(400, "the sign-in was interrupted") from None
    return str(form.get("token", "")).strip(), str(form.get("next", ""))


@attrs.frozen
class SessionKind(Generic[S]):
    """One kind of session: its cookie's names (over plain HTTP a browser refuses a
    `__Host-` name, which must be Secure), the path the cookie is scoped to and the one
    place a sign-in may go on to (`home` and below), where to sign in, and its storage:
    `start` (token, secret hash, anti-forgery token, lifetime) → who signed in, None
    when nobody holds the token; `find` a live session by its secret's hash; `end` one."""

    cookie: str
    https_cookie: str
    path: str
    home: str
    signin_path: str
    start: Callable[[Database, str, bytes, str, float], Awaitable[str | None]]
    find: Callable[[Database, bytes], Awaitable[S | None]]
    end: Callable[[Database, S], Awaitable[None]]

    def cookie_name(self, request: Request) -> str:
        return self.https_cookie if is_https(request) else self.cookie

    def safe_next(self, target: str | None) -> str:
        """Where to go after signing in: a path of this kind's pages only, never
        another site."""
        return safe_next(target, self.home)

    async def sign_in(self, db: Database, token: str, lifetime_s: float) -> SignedIn | None:
        """A new session for the holder of `token`, or None when nobody holds it.
        Cancellation: plain queries; a session cut off before its answer is never used."""
        secret, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        who = await self.start(db, token, secret_hash(secret), csrf, lifetime_s)
        return None if who is None else SignedIn(secret, csrf, who)

    def set_cookie(
        self, response: Response, request: Request, secret: str, lifetime_s: float
    ) -> None:
        response.set_cookie(
            self.cookie_name(request),
            secret,
            max_age=int(lifetime_s),
            path=self.path,
            httponly=True,
            samesite="strict",
            secure=is_https(request),
        )

    def clear_cookie(self, response: Response, request: Request) -> None:
        response.delete_cookie(
            self.cookie_name(request),
            path=self.path,
            httponly=True,
            samesite="strict",
            secure=is_https(request),
        )

    async def session_of(self, db: Database, request: Request) -> S | None:
        """The live session of the request's cookie, if any. Cancellation: a plain read."""
        secret = request.cookies.get(self.cookie_name(request))
        if not secret or len(secret) > SECRET_MAX:
            return None
        return await self.find(db, secret_hash(secret))

    async def sign_out(self, db: Database, session: S) -> None:
        """The session ends. Cancellation: one statement."""
        await self.end(db, session)

    def sign_in_first(self, request: Request) -> ApiError:
        if wants_html(request):
            back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            where = f"{self.signin_path}?{urllib.parse.urlencode({'next': back})}"
            return ApiError(303, SESSION_EXPIRED, {"Location": where})
        return ApiError(401, SESSION_EXPIRED)

    async def required(self, request: Request, db: Db) -> S:
        """The dependency of a route that needs a session: a page is redirected to sign
        in, a script's request answered 401."""
        session = await self.session_of(db, request)
        if session is None:
            raise self.sign_in_first(request)
        return session

    async def changing(self, request: Request, db: Db) -> S:
        """`required` for a state-changing request sent by a page's script: the
        anti-forgery token comes in the `X-CSRF-Token` header, checked before the body
        is read. (Forms put it in a field; their routes call `check_csrf` themselves.)"""
        check_origin(request)
        session = await self.required(request, db)
        check_csrf(request, session, request.headers.get(CSRF_HEADER))
        return session
