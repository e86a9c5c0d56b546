"""ASGI middleware under the application, outermost first:

- `NoRetry` tells the clients of the areas that retry a 5xx on their own not to
  (`ErrorShapes.no_retry`);
- `DrainRequestBody` bounds how long a request body may stay silent (408) and lets an
  early answer out while the client still sends;
- `Guard` refuses before the application runs, so before any byte of the body is
  read: too many requests at once (503), no valid token (401), a JSON body over its
  cap (413).
"""

import ipaddress
import json
from collections.abc import Callable, Iterable
from typing import Any

import trio
from starlette.exceptions import HTTPException

from transcriber.db.database import Database
from transcriber.http.errors import (
    DATABASE_AWAY,
    DATABASE_AWAY_ERRORS,
    RETRY_AFTER_S,
    UNAUTHORIZED,
    ErrorShape,
    ErrorShapes,
)
from transcriber.owners import owner_of_token

API_SHAPES = ErrorShapes()
"""The API's own error body everywhere: an application with no other areas."""

JSON_BODY_MAX = 128 * 1024
"""Bytes of a body the application parses whole (an edit). The largest valid edit, a
20 000-character summary and 50 topics of 100 characters, is about 100 KB even when
every character takes four bytes; nothing valid comes near this."""

OWNER = "transcriber.owner"
"""The scope key under which `Guard` leaves the authenticated owner's id."""


class BodyIdle(HTTPException):
    """The client sent no byte of the body for the idle bound."""

    def __init__(self, idle_s: float):
        super().__init__(
            408, f"the request body sent nothing for {idle_s:g} s", headers={"Connection": "close"}
        )


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int):
        super().__init__(
            413, f"the request body is larger than {limit} bytes", headers={"Connection": "close"}
        )


async def send_error(
    send: Any, shape: ErrorShape, status: int, message: str, headers: Iterable[tuple[str, str]] = ()
) -> None:
    """A whole error answer in `shape`, sent from ASGI middleware."""
    body = json.dumps(shape(status, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *((k.lower().encode(), v.encode()) for k, v in headers),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class NoRetry:
    """ASGI middleware: every 5xx answer under `shapes.no_retry` carries
    `x-should-retry: false`, whichever layer sends it (the application's 500 for an
    unexpected error goes out below Starlette's own outermost layer and gets it from
    `errors.install_error_handlers`). OpenAI's SDKs retry any 5xx unless told so; each
    retry would be a new upload of the same audio."""

    def __init__(self, app: Any, shapes: ErrorShapes):
        self.app = app
        self.shapes = shapes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]

        async def told(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                extra = self.shapes.headers(path, message["status"])
                have = {k.lower() for k, _ in message.get("headers", ())}
                added = [
                    (k.encode(), v.encode()) for k, v in extra.items() if k.encode() not in have
                ]
                if added:
                    message = {**message, "headers": [*message.get("headers", ()), *added]}
            await send(message)

        await self.app(scope, receive, told)


class DrainRequestBody:
    """ASGI middleware that bounds a silent body and lets an early answer out while the
    client still sends.

    A body that sends nothing for `idle_s` raises `BodyIdle` (408) in whatever reads it,
    and counts as ended: nothing more is read from it. Once the body has ended, a read
    waits for the disconnect unbounded (a handler watching for it, as the OpenAI
    endpoint's waits do, is cancelled by its own limit).

    Hypercorn's trio worker queues a few chunks of the request body for the application
    and stops reading the socket until the application takes them. When the application
    answers before reading the body — 413 as soon as the limit is passed, 401, an
    idempotent replay — Hypercorn's last step of that answer waits for room in the full
    queue, and so does its reader: the connection hangs, and a client still sending
    never reads the answer. So while the last part of an answer is sent, the rest of the
    body is read here and thrown away (nothing of it is stored); once the answer is out,
    Hypercorn closes the connection (or keeps it, if the body had ended). A client that
    goes silent meanwhile is given up after `idle_s` as well.
    """

    def __init__(self, app: Any, idle_s: float):
        self.app = app
        self.idle_s = idle_s

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ended = gave_up = False

        async def tracked() -> dict[str, Any]:
            nonlocal ended, gave_up
            message: dict[str, Any]
            if gave_up:
                raise BodyIdle(self.idle_s)
            if ended:
                # The body is all here: what is left to receive is the client's
                # disconnect, which may come at any time or never. A client waiting for
                # its answer sends nothing and is not a silent body.
                message = await receive()
                return message
            with trio.move_on_after(self.idle_s):
                message = await receive()
                if message["type"] == "http.disconnect" or not message.get("more_body"):
                    ended = True
                return message
            ended = gave_up = True
            raise BodyIdle(self.idle_s)

        async def send_draining(message: dict[str, Any]) -> None:
            last = message["type"] == "http.response.body" and not message.get("more_body")
            if not last or ended:
                await send(message)
                return
            async with trio.open_nursery() as nursery:

                async def drain() -> None:
                    try:
                        while not ended:
                            await tracked()
                    except BodyIdle:
                        # Silent: no room will come for the answer; the connection goes.
                        nursery.cancel_scope.cancel()

                nursery.start_soon(drain)
                await send(message)
                nursery.cancel_scope.cancel()

        await self.app(scope, tracked, send_draining)


class Guard:
    """ASGI middleware that refuses before the application runs, so before a byte of
    the body is read:

    - beyond `max_requests` at once: 503 with Retry-After;
    - a path outside `public` without a valid bearer token: 401 — the authenticated
      owner's id is left in the scope under `OWNER` for the `Owner` dependency;
    - a body the application parses whole (any route not in `streamed`) declared or
      found larger than `JSON_BODY_MAX`: 413.

    Each answers in the error shape of its path's area (`shapes`), as the application
    would.

    Cancellation: the token lookup is a plain query; nothing to undo.
    """

    def __init__(
        self,
        app: Any,
        db: Database,
        max_requests: int,
        public: Callable[[str], bool],
        streamed: Callable[[str, str], bool],
        shapes: ErrorShapes = API_SHAPES,
    ):
        self.app = app
        self.shapes = shapes
        self.db = db
        self.max_requests = max_requests
        self.in_flight = 0
        self.public = public
        self.streamed = streamed

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_requests:
            await send_error(
                send,
                self.shapes.of(scope["path"]),
                503,
                "the service is busy; retry shortly",
                [("Retry-After", "1"), ("Connection", "close")],
            )
            return
        self.in_flight += 1
        try:
            await self._guarded(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _guarded(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = dict(scope["headers"])
        shape = self.shapes.of(scope["path"])
        if not self.public(scope["path"]):
            try:
                owner = await self._owner(headers.get(b"authorization", b""))
            except DATABASE_AWAY_ERRORS:
                # Outside the application: its handler for these cannot answer here.
                await send_error(
                    send,
                    shape,
                    503,
                    DATABASE_AWAY,
                    [("Retry-After", str(RETRY_AFTER_S)), ("Connection", "close")],
                )
                return
            if owner is None:
                await send_error(
                    send,
                    shape,
                    401,
                    UNAUTHORIZED,
                    [("WWW-Authenticate", "Bearer"), ("Connection", "close")],
                )
                return
            scope[OWNER] = owner
        if self.streamed(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        declared = headers.get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > JSON_BODY_MAX:
            await send_error(
                send,
                shape,
                413,
                f"the request body is larger than {JSON_BODY_MAX} bytes",
                [("Connection", "close")],
            )
            return
        received = 0

        async def capped() -> dict[str, Any]:
            nonlocal received
            message: dict[str, Any] = await receive()
            received += len(message.get("body", b""))
            if received > JSON_BODY_MAX:
                raise BodyTooLarge(JSON_BODY_MAX)
            return message

        await self.app(scope, capped, send)

    async def _owner(self, authorization: bytes) -> int | None:
        scheme, _, token = authorization.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return await owner_of_token(self.db, token.strip())


def is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
