"""The HTTP API: owners upload recordings, read their cards, edit their own fields and
fetch transcripts. FastAPI, served by Hypercorn's trio worker in the service's own trio
process (with the trio-asyncio loop open, as every database call needs it).

An owner sees only their own records: another owner's id, an unknown id and a
malformed id all answer the same 404, so ids cannot be probed.
"""

# No `from __future__ import annotations` here: FastAPI reads the route functions'
# annotations, and those name dependencies local to create_app.
import base64
import binascii
import contextlib
import datetime as dt
import functools
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import asyncpg
import hypercorn.config
import hypercorn.trio
import trio
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from actors.log import event
from transcriber.auth import owner_of_token
from transcriber.cards import card, card_from_row
from transcriber.config import Config
from transcriber.db import Database, describe
from transcriber.formats import render
from transcriber.metrics import render_metrics
from transcriber.blobs import Incoming, StorageError, blobs_of
from transcriber.uploads import TITLE_MAX, Upload, UploadRefused, check_text, receive

ACCEPT_TIMEOUT_S = 30.0
HEALTH_TIMEOUT_S = 5.0
SUMMARY_MAX = 20_000
TOPICS_MAX = 50
TOPIC_MAX = 100

NOT_FOUND = "no such recording"
UNAUTHORIZED = "missing or invalid API token"

# Where a card's transcript renderings live, by the `links` key.
TRANSCRIPT_PATHS = {"text": "text", "srt": "transcript.srt", "vtt": "transcript.vtt",
                    "json": "transcript.json"}
FORMAT_OF = {"text": "txt", "srt": "srt", "vtt": "vtt", "json": "json"}


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def not_found() -> ApiError:
    return ApiError(404, NOT_FOUND)


# --- the documented shapes ---------------------------------------------------------------

class Error(BaseModel):
    error: str


class Links(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    text: str
    srt: str
    vtt: str
    json_url: str = Field(alias="json")


class Stopped(BaseModel):
    at: dt.datetime
    reason: str
    error: str | None


class Card(BaseModel):
    """What an owner reads about one recording. A stop shows here, as a flag with its
    reason, beside the milestone the record reached."""

    id: uuid.UUID
    title: str | None
    summary: str | None
    topics: list[str]
    filename: str | None
    size_bytes: int | None
    created_at: dt.datetime
    milestone: Literal["received", "normalized", "transcribed"]
    milestone_entered_at: dt.datetime
    done: bool
    progress: float | None
    duration_s: float | None
    language: str | None
    stopped: Stopped | None
    links: Links


class CardPage(BaseModel):
    items: list[Card]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; "
                                                "null on the last page")


class Event(BaseModel):
    id: int
    at: dt.datetime
    origin: Literal["pipeline", "human"]
    kind: str
    milestone: str | None
    detail: dict[str, Any]


class EventPage(BaseModel):
    events: list[Event]
    next_after: int | None = Field(description="pass as `after` for the next page; "
                                               "null when there is no more")


class Segment(BaseModel):
    model_config = ConfigDict(extra="allow")
    start: float
    end: float
    text: str


class Transcript(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: uuid.UUID
    language: str | None
    model: str | None
    duration_s: float | None
    text: str
    segments: list[Segment]


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    error: str | None = None


def _valid(what: str, max_chars: int) -> AfterValidator:
    return AfterValidator(lambda v: check_text(v, what, max_chars))


Topic = Annotated[str, Field(min_length=1), _valid("a topic", TOPIC_MAX)]


class Edit(BaseModel):
    """The owner's fields; any other field is refused. A field left out is unchanged;
    send an empty string or list to clear one."""

    model_config = ConfigDict(extra="forbid")
    title: Annotated[str, _valid("title", TITLE_MAX)] = Field(default=None)
    summary: Annotated[str, _valid("summary", SUMMARY_MAX)] = Field(default=None)
    topics: Annotated[list[Topic], Field(max_length=TOPICS_MAX)] = Field(default=None)


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    # 422 always: FastAPI would otherwise document its own validation body, and every
    # error here answers {"error": ...}.
    return {code: {"model": Error} for code in (*codes, 422)}


class SrtResponse(Response):
    media_type = "application/x-subrip"


class VttResponse(Response):
    media_type = "text/vtt"


class TextResponse(Response):
    media_type = "text/plain"


class RenderedJsonResponse(Response):
    """JSON already rendered by transcriber.formats (JSONResponse would encode it again)."""

    media_type = "application/json"


RESPONSE_CLASSES: dict[str, type[Response]] = {
    "text": TextResponse, "srt": SrtResponse, "vtt": VttResponse, "json": RenderedJsonResponse}


UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {"schema": {
            "type": "object", "required": ["file"],
            "properties": {
                "file": {"type": "string", "format": "binary"},
                "title": {"type": "string", "maxLength": TITLE_MAX},
                "language": {"type": "string", "pattern": "^[A-Za-z]{2,3}$",
                             "description": "a language hint such as en or ru"},
            }}},
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        "audio/*": {"schema": {"type": "string", "format": "binary"}},
    },
}

LOCATION = {"Location": {"description": "the card's address", "required": True,
                         "schema": {"type": "string"}}}


# --- helpers -------------------------------------------------------------------------------

def parse_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def card_path(rid: Any) -> str:
    return f"/v1/recordings/{rid}"


def with_links(c: dict[str, Any]) -> dict[str, Any]:
    base = card_path(c["id"])
    return {**c, "links": {k: f"{base}/{p}" for k, p in TRANSCRIPT_PATHS.items()}}


def encode_cursor(created_at: dt.datetime, rid: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{rid}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, _, rid = raw.partition("|")
        created_at = dt.datetime.fromisoformat(at)
        if created_at.tzinfo is None:
            raise ValueError("naive time")
        return created_at, uuid.UUID(rid)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise ApiError(422, "invalid cursor; pass the next_cursor of the previous page") from None


def _error_response(status: int, message: str, headers: dict[str, str] | None = None
                    ) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "request"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


class DrainRequestBody:
    """ASGI middleware that lets an early answer out while the client still sends.

    Hypercorn's trio worker queues a few chunks of the request body for the application
    and stops reading the socket until the application takes them. When the application
    answers before reading the body — 413 as soon as the limit is passed, 401, an
    idempotent replay — Hypercorn's last step of that answer waits for room in the full
    queue, and so does its reader: the connection hangs, and a client still sending
    never reads the answer. So while the last part of an answer is sent, the rest of the
    body is read here and thrown away (nothing of it is stored); once the answer is out,
    Hypercorn closes the connection (or keeps it, if the body had ended).
    """

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ended = False

        async def tracked() -> dict[str, Any]:
            nonlocal ended
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                ended = True
            return message

        async def drain() -> None:
            while not ended:
                await tracked()

        async def send_draining(message: dict[str, Any]) -> None:
            last = message["type"] == "http.response.body" and not message.get("more_body")
            if not last or ended:
                await send(message)
                return
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain)
                await send(message)
                nursery.cancel_scope.cancel()

        await self.app(scope, tracked, send_draining)


# --- the application ---------------------------------------------------------------------

def create_app(db: Database, config: Config, *, max_upload_bytes: int | None = None
               ) -> FastAPI:
    """The API on `db`, storing uploads in the store `config` names, refusing bodies over
    `max_upload_bytes` (default: the configured limit)."""
    if max_upload_bytes is None:
        max_upload_bytes = config.max_upload_bytes
    app = FastAPI(title="transcriber", version="1", docs_url=None, redoc_url=None,
                  description="Self-hosted audio transcription. Authenticate with "
                              "`Authorization: Bearer <token>` (`transcriber owner add`).")
    app.add_middleware(DrainRequestBody)
    bearer = HTTPBearer(auto_error=False, description="the token of `transcriber owner add`")

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error_response(exc.status, exc.message, exc.headers)

    @app.exception_handler(UploadRefused)
    async def refused(request: Request, exc: UploadRefused) -> JSONResponse:
        return _error_response(exc.status, exc.message)

    @app.exception_handler(StorageError)
    async def store_unavailable(request: Request, exc: StorageError) -> JSONResponse:
        # Nothing was kept (the upload's own block removed or aborted it); try later.
        event(logging.WARNING, "storage_unavailable", error=str(exc))
        return _error_response(503, f"the recording store is unavailable: {exc}",
                               {"Retry-After": "30"})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error_response(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error_response(422, _validation_message(exc))

    async def current_owner(
            credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
    ) -> int:
        owner = None if credentials is None else await owner_of_token(
            db, credentials.credentials)
        if owner is None:
            raise ApiError(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
        return owner

    Owner = Annotated[int, Depends(current_owner)]

    async def owned(owner: int, recording_id: str) -> uuid.UUID:
        rid = parse_id(recording_id)
        if rid is None or await db.fetchval("recording_owner", rid) != owner:
            raise not_found()
        return rid

    async def card_of(rid: uuid.UUID) -> dict[str, Any]:
        c = await card(db, rid)
        if c is None:  # records are never deleted; kept for safety
            raise not_found()
        return with_links(c)

    async def card_response(rid: uuid.UUID, status: int) -> JSONResponse:
        return JSONResponse(await card_of(rid), status_code=status,
                            headers={"Location": card_path(rid)})

    # --- intake ---

    @app.post("/v1/recordings", status_code=201, summary="Upload a recording",
              response_model=None, openapi_extra={"requestBody": UPLOAD_BODY},
              responses={201: {"model": Card, "description": "accepted", "headers": LOCATION},
                         200: {"model": Card, "headers": LOCATION,
                               "description": "this Idempotency-Key was used before: "
                                              "the first recording"},
                         **_errors(400, 401, 413, 415, 503)})
    async def upload(
            request: Request, owner: Owner,
            title: Annotated[str | None, Query(max_length=TITLE_MAX,
                                               description="for a raw body")] = None,
            language: Annotated[str | None, Query(pattern="^[A-Za-z]{2,3}$",
                                                  description="for a raw body")] = None,
            filename: Annotated[str | None, Query(max_length=1000,
                                                  description="for a raw body")] = None,
            idempotency_key: Annotated[str | None, Header(
                min_length=1, max_length=200,
                description="retrying with the same key returns the first recording")] = None,
    ) -> JSONResponse:
        """A multipart form (`file`, `title`, `language`) or the audio itself as the body.
        The recording is on disk and its record committed before the answer."""
        if idempotency_key is not None:
            first = await db.fetchval("recording_by_key", owner, idempotency_key)
            if first is not None:
                return await card_response(first, 200)
        try:
            # Closed at once even when the upload is refused halfway, so the generator
            # is not left for the garbage collector.
            async with blobs_of(config).incoming() as into, \
                    contextlib.aclosing(request.stream()) as body:
                up = await receive(
                    body, content_type=request.headers.get("content-type", ""),
                    content_length=request.headers.get("content-length"),
                    disposition=request.headers.get("content-disposition"), into=into,
                    limit=max_upload_bytes, title=title, language=language, filename=filename)
                rid, status = await accept(owner, up, idempotency_key, into)
        except ClientDisconnect:
            event(logging.INFO, "upload_interrupted", owner=owner)
            raise ApiError(400, "the upload was interrupted") from None
        event(logging.INFO, "upload_accepted" if status == 201 else "upload_replayed",
              id=rid, owner=owner, size=up.size)
        return await card_response(rid, status)

    async def accept(owner: int, up: Upload, key: str | None, into: Incoming
                     ) -> tuple[uuid.UUID, int]:
        """Commit the record of a received upload; (id, 201), or (the first id, 200)
        when `key` was used meanwhile.

        Cancellation: the insert runs shielded (with a deadline), so a shutdown never
        leaves it unknown whether the record committed; if it still is unknown (the
        connection broke), the file stays and the startup sweep decides.
        """
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + ACCEPT_TIMEOUT_S
            try:
                rid = await db.fetchval("accept_upload", owner, up.filename, up.size,
                                        up.ref, up.language, up.title, key)
            except asyncpg.PostgresError:
                raise  # refused by the database: surely no record; the file goes
            except BaseException:
                into.keep()
                raise
        if scope.cancelled_caught:
            into.keep()
            raise ApiError(503, "the database did not confirm the upload in time")
        if rid is None:
            # Another upload with this key committed first; this file goes.
            return await db.fetchval("recording_by_key", owner, key), 200
        into.keep()
        return rid, 201

    # --- the archive ---

    @app.get("/v1/recordings", summary="My recordings, newest first", response_model=None,
             responses={200: {"model": CardPage}, **_errors(401)})
    async def list_recordings(
            owner: Owner, limit: Annotated[int, Query(ge=1, le=100)] = 20,
            cursor: Annotated[str | None, Query(max_length=200)] = None) -> JSONResponse:
        after_at, after_id = decode_cursor(cursor) if cursor else (None, None)
        rows = await db.fetch("recordings_of_owner", owner, after_at, after_id, limit + 1)
        items = [with_links(card_from_row(r)) for r in rows[:limit]]
        last = rows[limit - 1] if len(rows) > limit else None
        return JSONResponse({"items": items, "next_cursor": None if last is None
                             else encode_cursor(last["created_at"], last["id"])})

    @app.get("/v1/recordings/{recording_id}", summary="The record card", response_model=None,
             responses={200: {"model": Card}, **_errors(401, 404)})
    async def get_card(owner: Owner, recording_id: str) -> JSONResponse:
        return JSONResponse(await card_of(await owned(owner, recording_id)))

    @app.patch("/v1/recordings/{recording_id}", summary="Edit title, summary, topics",
               response_model=None,
               responses={200: {"model": Card}, **_errors(400, 401, 404)})
    async def edit(owner: Owner, recording_id: str, body: Edit) -> JSONResponse:
        rid = await owned(owner, recording_id)
        changed = sorted(body.model_fields_set)
        if changed:
            await db.fetchval("edit_owner_fields", rid, body.title, body.summary, body.topics,
                              {"by": "owner", "owner_id": owner, "fields": changed})
        return JSONResponse(await card_of(rid))

    def transcript_route(kind: str) -> None:
        path = f"/v1/recordings/{{recording_id}}/{TRANSCRIPT_PATHS[kind]}"
        response_class = RESPONSE_CLASSES[kind]
        ok: dict[str, Any] = {"description": f"the transcript as {FORMAT_OF[kind]}"}
        if kind == "json":
            ok["model"] = Transcript

        async def get_transcript(owner: Owner, recording_id: str) -> Response:
            rid = await owned(owner, recording_id)
            c = await card_of(rid)
            if not c["done"]:
                return JSONResponse(c, status_code=409)
            t = await db.fetchrow("transcript", rid)
            text, segments = ("", []) if t is None else (t["text"], t["segments"])
            extra = {} if kind != "json" else {
                "id": c["id"], "language": t["language"] if t else c["language"],
                "model": t["model"] if t else None, "duration_s": c["duration_s"]}
            return response_class(render(FORMAT_OF[kind], text, segments, **extra))

        app.get(path, summary=f"The transcript ({FORMAT_OF[kind]})", response_model=None,
                name=f"transcript_{kind}",
                # For the schema: JSON is documented by its model, the rest as text.
                response_class=JSONResponse if kind == "json" else response_class,
                responses={200: ok,
                           409: {"model": Card, "description": "not transcribed (yet): the card"},
                           **_errors(401, 404)})(get_transcript)

    for kind in TRANSCRIPT_PATHS:
        transcript_route(kind)

    @app.get("/v1/recordings/{recording_id}/events", summary="The record's journal",
             response_model=None, responses={200: {"model": EventPage}, **_errors(401, 404)})
    async def events(owner: Owner, recording_id: str,
                     after: Annotated[int, Query(ge=0, le=2**62)] = 0,
                     limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> JSONResponse:
        rid = await owned(owner, recording_id)
        rows = await db.fetch("journal_after", after, rid, limit)
        found = [{"id": e["id"], "at": e["at"].isoformat(), "origin": e["origin"],
                  "kind": e["kind"], "milestone": e["milestone"], "detail": e["detail"]}
                 for e in rows]
        return JSONResponse({"events": found,
                             "next_after": found[-1]["id"] if len(found) == limit else None})

    # --- the service ---

    @app.get("/healthz", summary="Is the database reachable", response_model=None,
             responses={200: {"model": Health}, 503: {"model": Health}})
    async def healthz() -> JSONResponse:
        try:
            with trio.fail_after(HEALTH_TIMEOUT_S):
                await db.fetchval("health")
        except Exception as e:  # noqa: BLE001 - whatever fails, the answer is "unavailable"
            return JSONResponse({"status": "unavailable", "error": describe(e)},
                                status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get("/metrics", summary="Prometheus metrics", response_model=None,
             responses={200: {"content": {"text/plain": {}}}})
    async def metrics() -> Response:
        return Response(await render_metrics(db),
                        media_type="text/plain; version=0.0.4; charset=utf-8")

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = answers_not_ok_are_json(FastAPI.openapi(app))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def answers_not_ok_are_json(schema: dict[str, Any]) -> dict[str, Any]:
    """Every answer but a success is JSON. FastAPI documents the other answers of a
    route in the route's own media type (text/vtt for the transcript's VTT), which is
    not what is sent."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            for code, response in operation.get("responses", {}).items():
                content = response.get("content")
                if content and not code.startswith("2"):
                    response["content"] = {"application/json": next(iter(content.values()))}
    return schema


# --- serving -------------------------------------------------------------------------------

def server_config(host: str = "127.0.0.1", port: int = 8080) -> hypercorn.config.Config:
    """Hypercorn's settings for the service: the service log's logger, no access log."""
    config = hypercorn.config.Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    return config


async def serve_app(app: FastAPI, host: str = "127.0.0.1", port: int = 0, *,
                    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve `app` on `host:port` (0: any free port) until cancelled; for
    `await nursery.start(serve_app, app, host, port)`, which returns the base URL.

    Must run inside `trio_asyncio.open_loop()`. Cancellation stops the server at once:
    requests in flight are cancelled like at a crash (an upload removes its file).
    """
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            functools.partial(hypercorn.trio.serve, app, server_config(host, port)))
        task_status.started(binds[0])


@contextlib.asynccontextmanager
async def serving(app: FastAPI, host: str = "127.0.0.1", port: int = 0
                  ) -> AsyncIterator[str]:
    """`serve_app` for the length of a block, which gets the base URL; leaving the
    block stops the server as a cancellation does."""
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve_app, app, host, port)
        nursery.cancel_scope.cancel()
