"""The shape of every answer that is not a success: the API's `{"error": "..."}`, or
the shape of the area a path belongs to (`ErrorShapes`: the OpenAI-compatible routes
answer OpenAI's), and the handlers that give it to every error the application raises."""

import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

import asyncpg
import attrs
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from actors import describe
from actors.log import event
from transcriber.db.database import DatabaseBusy, DatabaseUnreachable, connection_lost
from transcriber.http.uploads import UploadRefused
from transcriber.intake import Conflicted, KeyReused, NoRoom, Refused, TooLarge, Unconfirmed
from transcriber.storage.blobs import StorageError

NOT_FOUND = "no such recording"
UNAUTHORIZED = "missing or invalid API token"
INTERNAL = "internal error; the operator's log has the details"
DATABASE_AWAY = "the database is not answering; retry shortly"
RETRY_AFTER_S = 5
STORE_RETRY_AFTER_S = 30

# A database that is busy or whose connection broke: the request may well succeed later.
# (The API's routes make no other connections, so a ConnectionError is the database's.)
# asyncpg's InterfaceError is that only in its closed-connection kind (`connection_lost`);
# its other kinds are bugs, answered 500.
DATABASE_AWAY_ERRORS = (
    DatabaseBusy,
    DatabaseUnreachable,
    asyncpg.PostgresConnectionError,
    ConnectionError,
)


def is_database_away(error: BaseException) -> bool:
    """Whether `error` says the database is away (busy, unreachable, its connection or
    pool closed), not that the code is wrong."""
    return isinstance(error, DATABASE_AWAY_ERRORS) or connection_lost(error)


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


REFUSAL_STATUS: tuple[tuple[type[Refused], int], ...] = (
    (Conflicted, 409),
    (TooLarge, 413),
    (KeyReused, 422),
    (Unconfirmed, 503),
    (NoRoom, 507),
)
"""The answer to each way the intake refuses a recording."""


def refusal_status(refused: Refused) -> int:
    return next(status for kind, status in REFUSAL_STATUS if isinstance(refused, kind))


def not_found() -> ApiError:
    return ApiError(404, NOT_FOUND)


class Error(BaseModel):
    error: str


ALWAYS = (401, 422, 500, 503)
"""Errors any owner's route may answer: no valid token, an invalid parameter (FastAPI
would otherwise document its own validation body), an unexpected error, the database
or the recording store away, or the service busy."""


RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds after which a retry may succeed",
        "schema": {"type": "string"},
    }
}
MAY_RETRY = frozenset({429, 503, 507})


def documented_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a route for these error statuses and `ALWAYS`, for the
    OpenAPI document; every one answers {"error": ...}, some with Retry-After."""
    return {
        code: {"model": Error, **({"headers": RETRY_AFTER} if code in MAY_RETRY else {})}
        for code in sorted({*codes, *ALWAYS})
    }


ErrorShape = Callable[[int, str], dict[str, Any]]
"""The body of an error answer from its status and message."""


def api_error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": message}


@attrs.frozen
class ErrorShapes:
    """The error body of each area of the API, by the path it lives under (a path equal
    to a prefix or below it); the API's own `{"error": "..."}` elsewhere; and the
    headers each area's answers carry (`headers`). Used by the application's handlers
    and by the middleware that answers before them, so a client reads one shape
    whichever layer refused it."""

    areas: tuple[tuple[str, ErrorShape], ...] = ()
    no_retry: tuple[str, ...] = ()
    """Prefixes of the areas whose clients retry a 5xx on their own unless told not to
    (OpenAI's SDKs, each retry a new upload): every 5xx there says `x-should-retry:
    false`."""

    def of(self, path: str) -> ErrorShape:
        for prefix, shape in self.areas:
            if _under(path, prefix):
                return shape
        return api_error_body

    not_stored: tuple[str, ...] = ()
    """Prefixes of the areas whose every answer is one owner's data (`Face.not_stored`):
    each says `NOT_STORED`, whichever layer answers, unless it says its own."""

    def headers(self, path: str, status: int) -> dict[str, str]:
        """What every answer of `status` at `path` carries besides its own."""
        found: dict[str, str] = {}
        if any(_under(path, prefix) for prefix in self.not_stored):
            found.update(NOT_STORED)
        if status >= 500 and any(_under(path, prefix) for prefix in self.no_retry):
            found.update(NO_RETRY)
        return found


NO_RETRY = {"x-should-retry": "false"}
NOT_STORED = {"cache-control": "private, no-store"}


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "request"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def _routes(routes: Iterable[Any]) -> Iterator[Any]:
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI's included router
        # The ROUTERS are included without a prefix, so their paths are whole.
        yield from _routes(included.routes) if included is not None else (route,)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route answers at this request's path (Starlette's 405 names
    only the first matching route's)."""
    found = {"OPTIONS"}
    for route in _routes(request.app.routes):
        regex = getattr(route, "path_regex", None)
        if regex is not None and regex.match(request.url.path):
            found |= set(getattr(route, "methods", None) or ())
    return sorted(found)


def install_error_handlers(
    app: FastAPI,
    shapes: ErrorShapes = ErrorShapes(),
    *,
    not_found_page: Callable[[Request], Awaitable[Response | None]] | None = None,
) -> None:
    """Every answer but a success is JSON in the shape of its path's area (`shapes`),
    the 500 of an unexpected error included, which names no internal detail (the log
    has the traceback); but a 404 that `not_found_page` answers with a page (a browser
    at an address no route answers)."""

    def error_response(
        request: Request, status: int, message: str, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        path = request.url.path
        return JSONResponse(
            shapes.of(path)(status, message),
            status_code=status,
            headers={**(headers or {}), **shapes.headers(path, status)},
        )

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(request, exc.status, exc.message, exc.headers)

    @app.exception_handler(UploadRefused)
    async def refused(request: Request, exc: UploadRefused) -> JSONResponse:
        return error_response(request, exc.status, exc.message)

    @app.exception_handler(Refused)
    async def intake_refused(request: Request, exc: Refused) -> JSONResponse:
        after = exc.retry_after
        headers = None if after is None else {"Retry-After": str(after)}
        return error_response(request, refusal_status(exc), exc.message, headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 404 and not_found_page is not None:
            page = await not_found_page(request)
            if page is not None:
                return page
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=headers)
        return error_response(request, exc.status_code, str(exc.detail), headers or None)

    async def database_away(request: Request, exc: Exception) -> JSONResponse:
        event(
            logging.WARNING,
            "database_away",
            path=request.url.path,
            error=describe(exc, with_type=False),
        )
        return error_response(request, 503, DATABASE_AWAY, {"Retry-After": str(RETRY_AFTER_S)})

    for cls in DATABASE_AWAY_ERRORS:
        app.add_exception_handler(cls, database_away)

    @app.exception_handler(asyncpg.InterfaceError)
    async def interface_error(request: Request, exc: asyncpg.InterfaceError) -> JSONResponse:
        if connection_lost(exc):
            return await database_away(request, exc)
        # A bug: on to the handler of every other exception (500, and the server's log).
        raise exc

    @app.exception_handler(StorageError)
    async def store_unavailable(request: Request, exc: StorageError) -> JSONResponse:
        # Nothing was kept (the upload's own block removed or aborted it); try later. The
        # store's own words (endpoints, keys) are the operator's: in the log only.
        event(logging.WARNING, "storage_unavailable", path=request.url.path, error=str(exc))
        return error_response(
            request,
            503,
            "the recording store is unavailable; retry later",
            {"Retry-After": str(STORE_RETRY_AFTER_S)},
        )

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        # Starlette sends this answer, then raises `exc` on to the server's error log.
        return error_response(request, 500, INTERNAL)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(request, 422, validation_message(exc))
