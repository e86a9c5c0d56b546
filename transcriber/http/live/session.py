"""Who a realtime upgrade is for, decided before it is accepted: the owner's bearer
token (the SDK's `api_key`, in `Authorization`), or — for the owner's page, whose
script cannot set a header on a WebSocket — the page's session cookie
(`transcriber.http.page_cookie`) with the request's `Origin` this service's own.

A browser sends the cookie on any site's upgrade to this host (SameSite does not hold
a cross-site WebSocket back everywhere), naming that site in `Origin`: so a cookie
with a foreign `Origin`, or none, is refused 403 before the cookie is even looked up.
A header-less client names no `Origin`: it signs in with its token."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs
from fastapi import WebSocket

from transcriber.db.database import Database
from transcriber.http.page_cookie import owner_of_page_secret, page_secret
from transcriber.http.sessions import from_own_page
from transcriber.owners import owner_of_token

FOREIGN_ORIGIN = (
    "refused: a page session's WebSocket must come from this site's own page "
    "(its Origin is another site's, or missing)"
)


@attrs.frozen
class Refusal:
    """An upgrade refused: its status, message and OpenAI error code."""

    status: int
    message: str
    code: str


@attrs.frozen
class Caller:
    """The owner an upgrade is for, and how to ask whether the credential it came with
    (the token, or the page session) still vouches for them: a session whose token is
    revoked or replaced, or whose page signed out, ends (`endings.REVOKED`)."""

    owner: int
    allowed: Callable[[], Awaitable[bool]]


NO_CALLER = Refusal(
    401, "a valid API token (or a signed-in page of this site) is required", "invalid_api_key"
)


def bearer_token(websocket: WebSocket) -> str | None:
    """The bearer token of `Authorization`; "" for another scheme, None without one."""
    header = websocket.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


async def caller(db: Database, websocket: WebSocket) -> Caller | Refusal:
    """The owner the upgrade is for, or why it is refused. A request with an
    `Authorization` header is judged by its token alone (a browser's script cannot send
    one); else by the page's cookie, from this site's page. Cancellation: plain reads."""
    token = bearer_token(websocket)
    secret = page_secret(websocket) if token is None else None
    if secret is None:
        by_token = token or ""
        owner = await owner_of_token(db, by_token)
        if owner is None:
            return NO_CALLER

        async def token_works() -> bool:
            return await owner_of_token(db, by_token) == owner

        return Caller(owner, token_works)
    if not from_own_page(websocket):
        return Refusal(403, FOREIGN_ORIGIN, "invalid_origin")
    owner = await owner_of_page_secret(db, secret)
    if owner is None:
        return NO_CALLER
    signed_in = secret

    async def page_works() -> bool:
        return await owner_of_page_secret(db, signed_in) == owner

    return Caller(owner, page_works)
