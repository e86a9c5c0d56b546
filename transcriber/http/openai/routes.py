"""The OpenAI endpoint's routes: `POST /v1/audio/transcriptions`,
`POST /v1/audio/translations` (take the audio as a record, wait for it, answer as
OpenAI would) and `GET /v1/models`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from actors.log import event
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.auth import Owner
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import MAY_RETRY, NO_RETRY, NOT_STORED, RETRY_AFTER
from transcriber.http.middleware import SLOT
from transcriber.http.openai.answers import answer
from transcriber.http.openai.errors import OpenAIError, OpenAIRoute, waiting_of
from transcriber.http.openai.outcome import GONE, STOPPING, TIMED_OUT, outcome_unless_gone
from transcriber.http.openai.requests import (
    TRANSCRIPTION_FIELDS,
    TRANSLATION_FIELDS,
    WHISPER_1,
    receive_request,
)
from transcriber.http.openai.shapes import ErrorBody
from transcriber.http.openai.speakers import known_names
from transcriber.http.openai.streamed import text_events
from transcriber.http.owned_cards import TRANSCRIPT_PATHS, card_path
from transcriber.http.quotas import BUSY_RETRY_AFTER_S
from transcriber.pipeline.audio_steps import recognizer_name
from transcriber.records.archive import transcript

UPLOADS = ("/v1/audio/transcriptions", "/v1/audio/translations")
"""The routes that take audio: they stream their body under the upload size limit."""

RECORDING_HEADER = "X-Transcriber-Recording-Id"
# OpenAI's SDKs retry 5xx answers (and 408, 409, 429) on their own, each retry a new
# request: every 5xx of this area says not to (`middleware.NoRetry`), and so does an
# answer about a record that exists already, whatever its status.


# Why a record stopped → the status OpenAI's clients expect for it.
STOP_STATUS = {
    "undecodable_audio": 400,
    "empty_audio": 400,
    "recognizer_refused_audio": 400,
    "too_long": 413,
    "implausible_rate": 400,
    "implausible_duration": 400,
    "audio_quota": 507,  # as an upload past the quota
}
STOP_STATUS_OTHER = 503


router = APIRouter(route_class=OpenAIRoute, tags=["OpenAI-compatible"])


def stopped_error(c: dict[str, Any], headers: dict[str, str]) -> OpenAIError:
    """The stop of the owner's card `c`: its reason as the code, its plain words for the
    owner as the message (the error text is the operator's, as on the card)."""
    stop = c["stopped"]
    return OpenAIError(
        STOP_STATUS.get(stop["reason"], STOP_STATUS_OTHER),
        f"recording {c['id']} stopped at {c['milestone']} ({stop['reason']}): {stop['message']}",
        code=stop["reason"],
        param="file",
        headers=headers,
    )


def deleted_error(rid: Any, headers: dict[str, str]) -> OpenAIError:
    """The record the request waited for was deleted meanwhile (by its owner, the
    operator or retention): 404, as for any record that is not there. Not to be retried:
    a retry would upload it again."""
    return OpenAIError(
        404,
        f"recording {rid} was deleted while this request waited for it",
        code="not_found",
        headers={**headers, **NO_RETRY},
    )


def streamed(
    events: AsyncIterator[bytes], held: contextlib.ExitStack, headers: dict[str, str]
) -> StreamingResponse:
    """The events as the answer's body; `held` is let go when they end."""

    async def body() -> AsyncIterator[bytes]:
        with held:
            async for chunk in events:
                yield chunk

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={**headers, **NO_RETRY, **NOT_STORED},
    )


async def recognize(
    request: Request, owner: int, db: Database, config: Config, task: str
) -> Response:
    """Take the request's audio as a record, wait for it, answer as OpenAI would.

    With `stream=true`, the answer is OpenAI's server-sent events as the record is
    recognized (`streamed.text_events`).

    Cancellation (the server cut at once): before the commit nothing is kept, the commit
    is shielded, and after it the record goes on without the request.
    """
    waiting = waiting_of(request.app)
    if waiting.stopping.is_set():
        raise OpenAIError(
            503, "the service is stopping; try again shortly", code="service_unavailable"
        )
    with contextlib.ExitStack() as held:
        placed = held.enter_context(waiting.owners_place(owner, config.owner_max_waiting))
        if not placed:
            raise OpenAIError(
                429,
                f"{config.owner_max_waiting} requests of yours are under way already; "
                "retry when one has been answered",
                code="rate_limit_exceeded",
                headers={"Retry-After": str(BUSY_RETRY_AFTER_S)},
            )
        rid, asked = await receive_request(request, owner, db, config, task)
        # The wait is on the pipeline's work, not the service's: the place among the
        # requests served at once goes back (the owner's own place above bounds it).
        slot = request.scope.get(SLOT)
        if slot is not None:
            slot.release()
        if asked.stream:
            # The owner's place is held until the events end.
            events = text_events(db, waiting, owner, rid, config.openai_wait_s)
            return streamed(events, held.pop_all(), {RECORDING_HEADER: str(rid)})
        found = await outcome_unless_gone(request, db, owner, rid, config.openai_wait_s)
    headers = {RECORDING_HEADER: str(rid)}
    where = card_path(rid)
    if found is None:
        event(logging.INFO, "openai_client_gone", id=rid)
        return Response(status_code=499, headers=headers)  # nobody reads it
    if found == STOPPING:
        raise OpenAIError(
            503,
            f"the service is stopping; recording {rid} is kept and will "
            f"be transcribed when it is back: read it at {where}",
            code="service_stopping",
            headers={**headers, **NO_RETRY},
        )
    if found == TIMED_OUT:
        raise OpenAIError(
            504,
            f"recording {rid} is not transcribed after "
            f"{config.openai_wait_s:g} s; it goes on: read it at {where}"
            f" (its text at {where}/{TRANSCRIPT_PATHS['text']})",
            code="still_working",
            headers={**headers, **NO_RETRY},
        )
    if found == GONE:
        raise deleted_error(rid, headers)
    assert isinstance(found, dict)
    if found["stopped"]:
        raise stopped_error(found, {**headers, **NO_RETRY})
    t = await transcript(db, owner, rid)
    if t is None:  # deleted between its card and its transcript
        raise deleted_error(rid, headers)
    named = await known_names(db, config, owner, rid, t, asked.voices) if t else {}
    return answer(found, t, asked, headers, named)


AUDIO_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the transcript in the asked response_format; the record's id in "
        f"the {RECORDING_HEADER} header",
        "content": {
            "application/json": {},
            "text/plain": {},
            "text/vtt": {},
            "text/event-stream": {
                "description": "with stream=true: transcript.text.delta events as the "
                "record is recognized, then transcript.text.done (or one error event)"
            },
        },
    },
    **{
        code: {
            "description": what,
            "model": ErrorBody,
            **({"headers": RETRY_AFTER} if code in MAY_RETRY else {}),
        }
        for code, what in (
            (400, "unreadable or empty file, a bad field"),
            (401, "bad API token"),
            (408, "the upload sent nothing for TRANSCRIBER_HTTP_BODY_IDLE_S"),
            (413, "file too large"),
            (429, "the owner's uploads, or requests under way, at once are all taken"),
            (500, "an unexpected error"),
            (
                503,
                "cannot take work now (busy, the database away), or stopped for a reason "
                "retrying cannot help",
            ),
            (504, "not transcribed within TRANSCRIBER_OPENAI_WAIT_S; the record goes on"),
            (507, "past the owner's quota or the disk's room"),
        )
    },
}


def openai_form(fields: frozenset[str]) -> dict[str, Any]:
    properties: dict[str, Any] = {"file": {"type": "string", "format": "binary"}}
    properties.update({name: {"type": "string"} for name in sorted(fields)})
    return {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {"type": "object", "required": ["file"], "properties": properties}
            }
        },
    }


@router.post(
    "/v1/audio/transcriptions",
    response_model=None,
    summary="Transcribe (OpenAI-compatible)",
    responses=AUDIO_RESPONSES,
    openapi_extra={"requestBody": openai_form(TRANSCRIPTION_FIELDS)},
)
async def transcriptions(request: Request, owner: Owner, db: Db, config: Settings) -> Response:
    """OpenAI's `audio.transcriptions.create`: the speech as text in its own language."""
    return await recognize(request, owner, db, config, "transcribe")


@router.post(
    "/v1/audio/translations",
    response_model=None,
    summary="Translate to English (OpenAI-compatible)",
    responses=AUDIO_RESPONSES,
    openapi_extra={"requestBody": openai_form(TRANSLATION_FIELDS)},
)
async def translations(request: Request, owner: Owner, db: Db, config: Settings) -> Response:
    """OpenAI's `audio.translations.create`: speech in any language as English text."""
    return await recognize(request, owner, db, config, "translate")


@router.get(
    "/v1/models",
    response_model=None,
    summary="Models (OpenAI-compatible)",
    responses={
        401: {"description": "bad API token", "model": ErrorBody},
        503: {
            "description": "busy, or the database away",
            "model": ErrorBody,
            "headers": RETRY_AFTER,
        },
    },
)
async def models(owner: Owner, config: Settings) -> JSONResponse:
    """What the `model` field may name: `whisper-1` and the configured recognizer's own
    name, both recognized by the configured recognizer."""
    return JSONResponse(
        {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "transcriber"}
                for name in dict.fromkeys([WHISPER_1, recognizer_name(config)])
            ],
        }
    )
