"""The server's events of OpenAI's realtime transcription protocol, in the shapes the
`openai` SDK (3.51, `types/realtime/`) parses: each a JSON object with its `type` and an
`event_id` of the server's own."""

from __future__ import annotations

import uuid
from typing import Any


def new_id(prefix: str) -> str:
    """An id in OpenAI's style (`event_…`, `item_…`, `sess_…`)."""
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "event_id": new_id("event"), **fields}


def error(
    code: str,
    message: str,
    *,
    param: str | None = None,
    client_event_id: str | None = None,
    kind: str = "invalid_request_error",
) -> dict[str, Any]:
    """OpenAI's `error` event: the session goes on after it (the SDK's
    `RealtimeErrorEvent`; `client_event_id` names the client's event it answers)."""
    return event(
        "error",
        error={
            "type": kind,
            "code": code,
            "message": message,
            "param": param,
            "event_id": client_event_id,
        },
    )


def committed(item_id: str, previous_item_id: str | None) -> dict[str, Any]:
    return event("input_audio_buffer.committed", item_id=item_id, previous_item_id=previous_item_id)


def delta(item_id: str, text: str) -> dict[str, Any]:
    return event(
        "conversation.item.input_audio_transcription.delta",
        item_id=item_id,
        content_index=0,
        delta=text,
    )


def completed(item_id: str, transcript: str, seconds: float) -> dict[str, Any]:
    return event(
        "conversation.item.input_audio_transcription.completed",
        item_id=item_id,
        content_index=0,
        transcript=transcript,
        usage={"type": "duration", "seconds": round(seconds, 3)},
    )


def failed(item_id: str, message: str) -> dict[str, Any]:
    return event(
        "conversation.item.input_audio_transcription.failed",
        item_id=item_id,
        content_index=0,
        error={"type": "server_error", "code": "transcription_failed", "message": message},
    )


def speech_started(item_id: str, audio_start_ms: int) -> dict[str, Any]:
    """The server's VAD heard speech begin (the prefix padding included) at
    `audio_start_ms` of the session's audio; the turn will be `item_id`."""
    return event(
        "input_audio_buffer.speech_started", item_id=item_id, audio_start_ms=audio_start_ms
    )


def speech_stopped(item_id: str, audio_end_ms: int) -> dict[str, Any]:
    return event("input_audio_buffer.speech_stopped", item_id=item_id, audio_end_ms=audio_end_ms)
