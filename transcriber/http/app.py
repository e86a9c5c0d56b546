"""The application: every face of the service assembled by `create_app` over the core
it shares (middleware, error shapes, sessions, uploads, quotas, waiting).

A face is a package under `transcriber.http` whose `FACE` (`faces.Face`) says all the
application needs of it: its routers, the paths it authenticates itself, the routes
that stream their body, the bodies capped below the API's own, where its errors take
another shape. A new face (a live endpoint) is its package and one line in `FACES`.
"""

from collections.abc import MutableMapping
from typing import Any

from fastapi import APIRouter, FastAPI, Request

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import api, live, openai, ops, page
from transcriber.http.errors import ErrorShapes, install_error_handlers
from transcriber.http.faces import Face
from transcriber.http.middleware import (
    JSON_BODY_MAX,
    AllowedHosts,
    Budget,
    DrainRequestBody,
    Guard,
    NoRetry,
    RequestBudgets,
)
from transcriber.http.quotas import UploadSlots
from transcriber.http.rendering import SITE
from transcriber.http.waiting import Waiting

FACES: tuple[Face, ...] = (
    api.FACE,
    page.FACE,
    ops.FACE,
    openai.FACE,
    live.FACE,
    SITE,
)
"""Every face, in the order its routes are included (and documented)."""

ROUTERS: list[APIRouter] = [router for face in FACES for router in face.routers]

PUBLIC_PATHS: set[str] = {"/openapi.json", *(path for face in FACES for path in face.public)}
"""Paths answered without an owner's token; every other path needs one before
anything of the request is read (`middleware.Guard`) — but those a face authenticates
itself (`Face.authenticates`: the page's and the screen's by their session cookie
before they read a body, a share link by its secret)."""

STREAMED: set[tuple[str, str]] = {route for face in FACES for route in face.streamed}
"""(method, path) of the routes that stream their body themselves under their own cap;
every other body is capped at `middleware.JSON_BODY_MAX` or a face's own cap."""

BODY_CAPS: dict[tuple[str, str], int] = {
    route: cap for face in FACES for route, cap in face.body_caps.items()
}

ERROR_SHAPES = ErrorShapes(
    tuple(
        (prefix, face.error_body)
        for face in FACES
        if face.error_body is not None
        for prefix in face.error_prefixes
    ),
    no_retry=tuple(prefix for face in FACES for prefix in face.no_retry),
    not_stored=tuple(prefix for face in FACES for prefix in face.not_stored),
)
"""The faces that answer errors in another shape than the API's own: OpenAI's clients
read OpenAI's (`middleware.Guard` and the application's handlers both use it)."""


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or any(face.authenticates(path) for face in FACES)


ROUTE_PATTERNS = [route.path_regex for router in ROUTERS for route in router.routes]  # type: ignore[attr-defined]
NOT_FOUND_PAGES = [face.not_found_page for face in FACES if face.not_found_page is not None]


def unknown_page(scope: MutableMapping[str, Any]) -> bool:
    """A browser navigating (GET, HEAD; HTML wanted; no bearer token) to an address no
    route answers: it gets the page's styled not-found page, not the API's 401 JSON. An
    API client (no `text/html` in its Accept, or a token) is answered as before."""
    if scope["method"] not in ("GET", "HEAD") or not NOT_FOUND_PAGES:
        return False
    headers = dict(scope["headers"])
    if b"text/html" not in headers.get(b"accept", b"") or b"authorization" in headers:
        return False
    path = scope["path"]
    return path != "/openapi.json" and not any(p.match(path) for p in ROUTE_PATTERNS)


async def not_found_page(request: Request) -> Any:
    """The answer to `unknown_page` (errors.install_error_handlers), else None."""
    return await NOT_FOUND_PAGES[0](request) if unknown_page(request.scope) else None


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
        # A request with a body on a face's paths, vouched for by that face's session.
        for face in FACES:
            if face.session_owner is not None and face.authenticates(scope["path"]):
                return await face.session_owner(db, scope)
        return None

    app.add_middleware(
        Guard,
        db=db,
        budgets=app.state.budgets,
        public=is_public,
        lets_through=unknown_page,
        streamed=lambda method, path: (method, path) in STREAMED,
        shapes=ERROR_SHAPES,
        body_deadline_s=config.http_body_deadline_s,
        body_cap=lambda method, path: BODY_CAPS.get((method, path), JSON_BODY_MAX),
        session_owner=session_owner,
    )
    app.add_middleware(AllowedHosts, allowed=config.http_allowed_hosts, shapes=ERROR_SHAPES)
    app.add_middleware(DrainRequestBody, idle_s=config.http_body_idle_s)
    app.add_middleware(NoRetry, shapes=ERROR_SHAPES)
    install_error_handlers(app, ERROR_SHAPES, not_found_page=not_found_page)
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
