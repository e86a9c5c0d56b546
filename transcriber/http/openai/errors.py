"""The OpenAI endpoint's errors in OpenAI's shape, `{"error": {"message", "type",
"param", "code"}}`, which OpenAI's clients read, whichever layer answers them
(`error_body` is this face's `errors.ErrorShapes` entry, used by the middleware and
the application's handlers); and the route class that answers its routes' errors so."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from transcriber.http.errors import validation_message
from transcriber.http.openai_shape import openai_error
from transcriber.http.uploads import UploadRefused
from transcriber.http.waiting import Waiting

PREFIXES = ("/v1/audio", "/v1/models")
"""Where this area's paths live: every error under them is in OpenAI's shape."""


CODE_OF_STATUS = {
    400: "invalid_request",
    401: "invalid_api_key",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "file_too_large",
    415: "invalid_content_type",
    422: "invalid_request",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "service_unavailable",
    507: "insufficient_storage",
}


def error_body(
    status: int, message: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error shape (`transcriber.http.openai_shape`) with this face's codes."""
    return openai_error(status, message, CODE_OF_STATUS, code=code, param=param)


class OpenAIError(Exception):
    """An answer in OpenAI's error shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        return JSONResponse(
            error_body(self.status, self.message, code=self.code, param=self.param),
            status_code=self.status,
            headers=self.headers,
        )


def as_openai(exc: Exception) -> OpenAIError | None:
    """The errors whose status OpenAI's clients expect otherwise than the rest of the
    API gives it (an upload refused, a malformed request: 400, not 422), and this
    module's own; None for any other, which the application's handlers answer, in
    OpenAI's shape too (`error_body`)."""
    if isinstance(exc, OpenAIError):
        return exc
    if isinstance(exc, UploadRefused):
        # OpenAI answers 400 for what this API answers 422 (a field it cannot use).
        status = 400 if exc.status == 422 else exc.status
        return OpenAIError(status, exc.message, code=CODE_OF_STATUS.get(exc.status))
    if isinstance(exc, RequestValidationError):
        return OpenAIError(400, validation_message(exc), code="invalid_request")
    return None


class OpenAIRoute(APIRoute):
    """A route of this module: its errors in OpenAI's shape (the application's handlers
    give every other route the API's own), and counted among the requests a stopping
    service waits for (`Waiting`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def openai_errors(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception as e:
                error = as_openai(e)
                if error is None:
                    raise
                return error.response()

        return openai_errors

    async def handle(self, scope: Any, receive: Any, send: Any) -> None:
        with waiting_of(scope["app"]).hold():
            await super().handle(scope, receive, send)


def waiting_of(app: Any) -> Waiting:
    waiting: Waiting = app.state.waiting
    return waiting
