"""Errors of the live face in OpenAI's shape, `{"error": {"message", "type", "param",
"code"}}`, which OpenAI's clients read: a refused upgrade, and any plain HTTP answer
under `/v1/realtime`."""

from __future__ import annotations

from typing import Any

from transcriber.http.openai_shape import openai_error

PREFIXES = ("/v1/realtime",)

CODE_OF_STATUS = {
    400: "invalid_request",
    401: "invalid_api_key",
    404: "not_found",
    429: "too_many_sessions",
}


def error_body(
    status: int, message: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    """OpenAI's error shape (`transcriber.http.openai_shape`) with this face's codes."""
    return openai_error(status, message, CODE_OF_STATUS, code=code, param=param)
