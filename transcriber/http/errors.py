"""The one shape of every answer that is not a success: `{"error": "..."}`, and the
handlers that give it to every error the application raises."""

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from transcriber.http.uploads import UploadRefused

NOT_FOUND = "no such recording"
UNAUTHORIZED = "missing or invalid API token"


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def not_found() -> ApiError:
    return ApiError(404, NOT_FOUND)


class Error(BaseModel):
    error: str


def documented_errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a route for these error statuses, for the OpenAPI document.
    422 always: FastAPI would otherwise document its own validation body, and every
    error here answers {"error": ...}."""
    return {code: {"model": Error} for code in (*codes, 422)}


def error_response(status: int, message: str, headers: dict[str, str] | None = None
                   ) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def validation_message(exc: RequestValidationError) -> str:
    parts = []
    for e in exc.errors()[:5]:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "request"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.headers)

    @app.exception_handler(UploadRefused)
    async def refused(request: Request, exc: UploadRefused) -> JSONResponse:
        return error_response(exc.status, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, validation_message(exc))
