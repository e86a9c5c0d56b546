"""OpenAI's error shape, `{"error": {"message", "type", "param", "code"}}`, which OpenAI's
clients read: the core's, because two faces answer in it (the OpenAI endpoint and the
live socket), each with the codes of its own statuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def openai_error(
    status: int,
    message: str,
    codes: Mapping[int, str],
    *,
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    """OpenAI's error body; `code` by default the one `codes` gives `status`."""
    # As OpenAI types them: a bad key is an invalid request too (code invalid_api_key).
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {
        "error": {
            "message": message,
            "type": kind,
            "param": param,
            "code": code if code is not None else codes.get(status),
        }
    }
