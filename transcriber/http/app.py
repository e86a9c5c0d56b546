"""The application: the routers of every area of the API, assembled by `create_app`.

A new area is a module with an `APIRouter` named `router`, added to `ROUTERS`; its
routes take what they share from `deps` (the database, the configuration), `auth` (the
calling owner), `errors` (the error shape) and `cards` (an owner's records).
"""

from typing import Any

from fastapi import APIRouter, FastAPI, Request

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import (
    events,
    health,
    openai_api,
    ops,
    page,
    recordings,
    shares,
    speakers,
    transcripts,
)
from transcriber.http.errors import ErrorShapes, install_error_handlers
from transcriber.http.middleware import (
    JSON_BODY_MAX,
    AllowedHosts,
    Budget,
    DrainRequestBody,
    Guard,
    NoRetry,
    RequestBudgets,
)
from transcriber.http.page_sign_in import session_of
from transcriber.http.quotas import UploadSlots
from transcriber.http.waiting import Waiting

ROUTERS: list[APIRouter] = [
    recordings.router,
    transcripts.router,
    speakers.router,
    events.router,
    health.router,
    page.router,
    ops.router,
    shares.router,
    openai_api.router,
]

PUBLIC_PATHS: set[str] = {"/healthz", "/metrics", "/openapi.json"}
"""Paths answered without an owner's token; every other path needs one before
anything of the request is read (`middleware.Guard`) — but the page's, which
authenticate by the page's session cookie before they read a body (`page`)."""

STREAMED: set[tuple[str, str]] = {
    ("POST", "/v1/recordings"),
    *page.STREAMED,
    *(("POST", path) for path in openai_api.UPLOADS),
}
"""(method, path) of the routes that stream their body themselves under their own cap;
every other body is capped at `middleware.JSON_BODY_MAX`."""

ERROR_SHAPES = ErrorShapes(
    tuple((prefix, openai_api.error_body) for prefix in openai_api.PREFIXES),
    no_retry=openai_api.PREFIXES,
)
"""The areas that answer errors in another shape than the API's own: OpenAI's clients
read OpenAI's (`middleware.Guard` and the application's handlers both use it)."""


def create_app(db: Database, config: Config, *, max_upload_bytes: int | None = None) -> FastAPI:
    """The API on `db`, storing uploads in the store `config` names, refusing bodies over
    `max_upload_bytes` (default: the configured limit)."""
    # No slash redirects: they would name the request's own Host header back to it.
    app = FastAPI(
        title="transcriber",
        version="1",
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
        description="Self-hosted audio transcription. Authenticate with "
        "`Authorization: Bearer <token>` (`transcriber owner add`).",
    )
    app.state.db = db
    app.state.config = config
    app.state.max_upload_bytes = (
        config.max_upload_bytes if max_upload_bytes is None else max_upload_bytes
    )
    app.state.upload_slots = UploadSlots(config.owner_max_uploads)
    # Requests that wait on a record (openai): told to answer when the service stops.
    app.state.waiting = Waiting()
    # The last added runs first: NoRetry around DrainRequestBody around AllowedHosts
    # around Guard around the routes.
    app.state.budgets = RequestBudgets(
        Budget(config.http_max_requests), Budget(config.http_max_strangers)
    )

    async def session_owner(scope: dict[str, Any]) -> int | None:
        # A request with a body on the page's paths, vouched for by its session.
        if not page.is_page_path(scope["path"]):
            return None
        session = await session_of(db, Request(scope))
        return None if session is None else session.owner

    app.add_middleware(
        Guard,
        db=db,
        budgets=app.state.budgets,
        public=lambda path: (
            path in PUBLIC_PATHS
            or page.is_page_path(path)
            or ops.is_ops_path(path)
            or shares.is_share_path(path)
        ),
        streamed=lambda method, path: (method, path) in STREAMED,
        shapes=ERROR_SHAPES,
        body_deadline_s=config.http_body_deadline_s,
        body_cap=lambda method, path: page.BODY_CAPS.get((method, path), JSON_BODY_MAX),
        session_owner=session_owner,
    )
    app.add_middleware(AllowedHosts, allowed=config.http_allowed_hosts, shapes=ERROR_SHAPES)
    app.add_middleware(DrainRequestBody, idle_s=config.http_body_idle_s)
    app.add_middleware(NoRetry, shapes=ERROR_SHAPES)
    install_error_handlers(app, ERROR_SHAPES)
    for router in ROUTERS:
        app.include_router(router)

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
