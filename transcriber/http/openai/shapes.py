"""The OpenAI endpoint's pydantic shapes: its error body, for the OpenAPI document."""

from __future__ import annotations

from pydantic import BaseModel


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(BaseModel):
    """OpenAI's error shape."""

    error: ErrorDetail
