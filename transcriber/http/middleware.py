"""ASGI middleware under the application, outermost first:

- `NoRetry` gives every answer `nosniff` and a closed CSP, and tells the clients of
  the areas that retry a 5xx on their own not to (`ErrorShapes.no_retry`);
- `DrainRequestBody` bounds how long a request body may stay silent (408) and lets an
  early answer out while the client still sends;
- `Guard` refuses before the application runs, so before any byte of the body is
  read: too many requests at once (503; strangers' bodies out of a budget of their
  own), no valid token (401), a JSON body over its cap (413), and gives a body read
  whole a deadline (408).
"""

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs
import trio
from starlette.exceptions import HTTPException

from transcriber.db.database import Database
from transcriber.http.errors import (
    DATABASE_AWAY,
    RETRY_AFTER_S,
    UNAUTHORIZED,
    ErrorShape,
    ErrorShapes,
    is_database_away,
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


class BodyLate(HTTPException):
    """A body the application reads whole did not arrive whole within its deadline."""

    def __init__(self, deadline_s: float):
        super().__init__(
            408,
            f"the request body did not arrive whole within {deadline_s:g} s",
            headers={"Connection": "close"},
        )


BODY_DEADLINE = "transcriber.body_deadline"
"""The scope key under which `Guard` leaves the deadline of a body the application reads
whole: (trio time, its length in seconds), enforced by `DrainRequestBody`."""


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


ANSWER_HEADERS = {
    "x-content-type-options": "nosniff",
    # An answer opened by itself (a download, an error) is data, never a page with
    # powers: the page's own documents say their own policy.
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
}
"""Headers every answer carries unless it says its own."""


class NoRetry:
    """ASGI middleware: every answer carries `ANSWER_HEADERS` unless it has its own,
    and every 5xx answer under `shapes.no_retry` carries `x-should-retry: false`,
    whichever layer sends it (the application's 500 for an unexpected error goes out
    below Starlette's own outermost layer and gets it from
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
                extra = {**ANSWER_HEADERS, **self.shapes.headers(path, message["status"])}
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
        ended = False
        gave_up: HTTPException | None = None

        async def tracked() -> dict[str, Any]:
            nonlocal ended, gave_up
            message: dict[str, Any]
            if gave_up is not None:
                raise gave_up
            if ended:
                # The body is all here: what is left to receive is the client's
                # disconnect, which may come at any time or never. A client waiting for
                # its answer sends nothing and is not a silent body.
                message = await receive()
                return message
            # A body the application reads whole has a deadline besides (`Guard`).
            idle_until = trio.current_time() + self.idle_s
            deadline: tuple[float, float] = scope.get(BODY_DEADLINE, (idle_until, 0.0))
            late = deadline[0] < idle_until
            with trio.move_on_at(deadline[0] if late else idle_until):
                message = await receive()
                if message["type"] == "http.disconnect" or not message.get("more_body"):
                    ended = True
                return message
            ended = True
            gave_up = BodyLate(deadline[1]) if late else BodyIdle(self.idle_s)
            raise gave_up

        async def send_draining(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and not ended:
                # Hypercorn closes a connection whose request body was not read to its
                # end. Said in the answer, a client's pool does not hand the connection
                # to its next request, which would find it closed ("Server disconnected
                # without sending a response" in httpx, under load).
                message = {**message, "headers": [*closing(message.get("headers", []))]}
            last = message["type"] == "http.response.body" and not message.get("more_body")
            if not last or ended:
                await send(message)
                return
            async with trio.open_nursery() as nursery:

                async def drain() -> None:
                    try:
                        while not ended:
                            await tracked()
                    except (BodyIdle, BodyLate):
                        # Silent: no room will come for the answer; the connection goes.
                        nursery.cancel_scope.cancel()

                nursery.start_soon(drain)
                await send(message)
                nursery.cancel_scope.cancel()

        await self.app(scope, tracked, send_draining)


def closing(headers: Any) -> list[tuple[bytes, bytes]]:
    """`headers` with `Connection: close` in place of any connection header."""
    kept = [(k, v) for k, v in headers if k.lower() != b"connection"]
    return [*kept, (b"connection", b"close")]


@attrs.define
class Budget:
    """Requests served at once out of one budget, at most `limit`."""

    limit: int
    taken: int = 0


@attrs.define(eq=False)
class Slot:
    """A request's place in a budget, given back once (`release`) however often asked:
    when the request ends, moves to another budget, or waits on something that is not
    the service's work (the OpenAI endpoint's wait for its record)."""

    budget: Budget | None = None

    def take(self, budget: Budget) -> bool:
        """Into `budget` (out of the one held, if any); False when it is full, and then
        the slot holds none."""
        self.release()
        if budget.taken >= budget.limit:
            return False
        budget.taken += 1
        self.budget = budget
        return True

    def release(self) -> None:
        if self.budget is not None:
            self.budget.taken -= 1
            self.budget = None


@attrs.frozen
class RequestBudgets:
    """The service's budgets of requests at once: `requests` for everything an owner's
    token or page session vouches for (and any request without a body); `strangers` for
    a request with a body that nothing vouches for (the sign-in form, a bad token's
    upload while its 401 goes out), which so cannot take the owners' places however
    slowly it sends."""

    requests: Budget
    strangers: Budget


SLOT = "transcriber.slot"
"""The scope key under which `Guard` leaves the request's `Slot`."""


def has_body(headers: dict[bytes, bytes]) -> bool:
    return b"transfer-encoding" in headers or headers.get(b"content-length", b"0") not in (
        b"",
        b"0",
    )


class Guard:
    """ASGI middleware that refuses before the application runs, so before a byte of
    the body is read:

    - beyond `budgets.requests` at once: 503 with Retry-After; a request with a body
      that neither a token nor a page session vouches for (`session_owner`) is served
      out of the small `budgets.strangers` instead, 503 beyond it;
    - a path outside `public` without a valid bearer token: 401 — the authenticated
      owner's id is left in the scope under `OWNER` for the `Owner` dependency;
    - a body the application parses whole (any route not in `streamed`) declared or
      found larger than its cap (`body_cap`, by default `JSON_BODY_MAX`): 413; such a
      body, and any body nothing vouches for, must also arrive whole within
      `body_deadline_s` (408, `DrainRequestBody` enforces it), so a slow sender holds
      its place for that long at most.

    The request's `Slot` is in the scope under `SLOT`: a route that waits on something
    other than the service's work gives it back early. Each refusal answers in the
    error shape of its path's area (`shapes`), as the application would.

    Cancellation: the token and session lookups are plain queries; nothing to undo.
    """

    def __init__(
        self,
        app: Any,
        db: Database,
        budgets: RequestBudgets,
        public: Callable[[str], bool],
        streamed: Callable[[str, str], bool],
        shapes: ErrorShapes = API_SHAPES,
        *,
        body_deadline_s: float = 20.0,
        body_cap: Callable[[str, str], int] = lambda method, path: JSON_BODY_MAX,
        session_owner: Callable[[dict[str, Any]], Awaitable[int | None]] | None = None,
        lets_through: Callable[[dict[str, Any]], bool] = lambda scope: False,
    ):
        self.app = app
        self.shapes = shapes
        self.db = db
        self.budgets = budgets
        self.public = public
        self.streamed = streamed
        self.body_deadline_s = body_deadline_s
        self.body_cap = body_cap
        self.session_owner = session_owner
        self.lets_through = lets_through

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        slot = Slot()
        if not slot.take(self.budgets.requests):
            await self._busy(scope, send)
            return
        scope[SLOT] = slot
        # Until an owner is known to stream it, a body must come whole in time.
        scope[BODY_DEADLINE] = (trio.current_time() + self.body_deadline_s, self.body_deadline_s)
        try:
            await self._guarded(scope, receive, send, slot)
        finally:
            slot.release()

    async def _busy(self, scope: dict[str, Any], send: Any) -> None:
        await send_error(
            send,
            self.shapes.of(scope["path"]),
            503,
            "the service is busy; retry shortly",
            [("Retry-After", "1"), ("Connection", "close")],
        )

    async def _guarded(self, scope: dict[str, Any], receive: Any, send: Any, slot: Slot) -> None:
        headers = dict(scope["headers"])
        shape = self.shapes.of(scope["path"])
        # `lets_through`: what the application answers as it would a stranger (a
        # browser at an unknown address gets the not-found page).
        public = self.public(scope["path"]) or self.lets_through(scope)
        body = has_body(headers)
        owner = None
        try:
            if not public:
                owner = await self._owner(headers.get(b"authorization", b""))
            elif body and self.session_owner is not None:
                owner = await self.session_owner(scope)
        except Exception as e:
            if not is_database_away(e):
                raise
            # Outside the application: its handler for these cannot answer here.
            await send_error(
                send,
                shape,
                503,
                DATABASE_AWAY,
                [("Retry-After", str(RETRY_AFTER_S)), ("Connection", "close")],
            )
            return
        if owner is None and body and not slot.take(self.budgets.strangers):
            await self._busy(scope, send)
            return
        if not public:
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
            if owner is not None:
                del scope[BODY_DEADLINE]  # streamed under the upload's own bounds
            await self.app(scope, receive, send)
            return
        cap = self.body_cap(scope["method"], scope["path"])
        declared = headers.get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > cap:
            await send_error(
                send,
                shape,
                413,
                f"the request body is larger than {cap} bytes",
                [("Connection", "close")],
            )
            return
        received = 0

        async def capped() -> dict[str, Any]:
            nonlocal received
            message: dict[str, Any] = await receive()
            received += len(message.get("body", b""))
            if received > cap:
                raise BodyTooLarge(cap)
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


def host_of(value: str) -> str:
    """The name of a Host header's value, lowercased, without its port (an IPv6
    address without its brackets)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def loopback_host(request: Any) -> bool:
    """The request names this host's loopback in its Host header (localhost, 127.x,
    ::1): what a local client says, and what a rebound name does not."""
    name = host_of(request.headers.get("host", ""))
    return name == "localhost" or name.endswith(".localhost") or is_loopback(name)


def _has_port(entry: str) -> bool:
    return "]:" in entry if entry.startswith("[") else entry.count(":") == 1


class AllowedHosts:
    """ASGI middleware: a request whose Host header names none of `allowed` is answered
    421 Misdirected Request before anything else happens (an entry without a port
    allows any port). With no entries every Host is allowed."""

    def __init__(self, app: Any, allowed: tuple[str, ...], shapes: ErrorShapes = API_SHAPES):
        self.app = app
        self.allowed = tuple(a.lower() for a in allowed)
        self.shapes = shapes

    def allows(self, host: str) -> bool:
        host = host.strip().lower()
        return any(
            host == entry or (not _has_port(entry) and host_of(host) == host_of(entry))
            for entry in self.allowed
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.allowed:
            await self.app(scope, receive, send)
            return
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        if self.allows(host):
            await self.app(scope, receive, send)
            return
        await send_error(
            send,
            self.shapes.of(scope["path"]),
            421,
            "this service does not answer to that Host name",
            [("Connection", "close")],
        )
