"""The OpenAI-compatible endpoint: `POST /v1/audio/transcriptions`,
`POST /v1/audio/translations` and `GET /v1/models`, as OpenAI's clients call them
(the `openai` SDKs, subtitle tools, voice pipelines), on the durable pipeline.

Each request becomes a record of the caller's owner (journaled `accepted` with
`via: openai`), like an upload to `POST /v1/recordings`; the request then waits until
the record is transcribed or stopped and answers in OpenAI's shape. The record's id is
in the `X-Transcriber-Recording-Id` header of every answer given after it committed.
The record does not depend on the request: a client that goes away, a wait that runs
past `TRANSCRIBER_OPENAI_WAIT_S`, a service that stops — the record goes on, and its
card and transcript are at `/v1/recordings/{id}` as for any other.

Errors of these routes are in OpenAI's shape,
`{"error": {"message", "type", "param", "code"}}`, which OpenAI's clients read, whichever
layer answers them (`error_body` is this area's `errors.ErrorShapes` entry, used by the
middleware and the application's handlers); the rest of the API keeps its own. Uploads
here are bounded as those to `POST /v1/recordings` are: the owner's uploads at once
(429), quota and disk (507), a silent body (408). Every 5xx answer here,
and any answer about a record the client must not send again (stopped, still working,
the service stopping), carries `x-should-retry: false`, which OpenAI's SDKs obey; a
retry that comes anyway (another client, a cut connection) names the first record
(`recordings.accept`: the same owner, bytes and fields).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import attrs
import trio
from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.requests import ClientDisconnect

from actors.log import event
from transcriber.audio.speakers_model import WeightsMissing
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.auth import Owner
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import MAY_RETRY, NO_RETRY, RETRY_AFTER, validation_message
from transcriber.http.middleware import SLOT
from transcriber.http.openai_answers import AudioRequest, answer
from transcriber.http.openai_speakers import (
    LONG_FIELDS,
    NAMES,
    REFERENCES,
    BadKnown,
    known_names,
    parse_known,
    reference_voices,
)
from transcriber.http.owned_cards import TRANSCRIPT_PATHS, card_path, owned_card
from transcriber.http.quotas import BUSY_RETRY_AFTER_S, audio_fits, room_refusals, upload_room
from transcriber.http.recordings import Hashed, accept
from transcriber.http.uploads import (
    FORM_SLACK,
    PROMPT_MAX,
    Upload,
    UploadRefused,
    check_text,
    clean_filename,
    clean_language,
    is_form,
    receive_form,
)
from transcriber.http.waiting import Waiting
from transcriber.options import RecognitionOptions
from transcriber.pipeline.audio_steps import recognizer_name
from transcriber.records.archive import transcript
from transcriber.storage.configured import blobs_of

UPLOADS = ("/v1/audio/transcriptions", "/v1/audio/translations")
"""The routes that take audio: they stream their body under the upload size limit."""
PREFIXES = ("/v1/audio", "/v1/models")
"""Where this area's paths live: every error under them is in OpenAI's shape."""

RECORDING_HEADER = "X-Transcriber-Recording-Id"
# OpenAI's SDKs retry 5xx answers (and 408, 409, 429) on their own, each retry a new
# request: every 5xx of this area says not to (`middleware.NoRetry`), and so does an
# answer about a record that exists already, whatever its status.

WHISPER_1 = "whisper-1"
FORMATS = ("json", "text", "srt", "vtt", "verbose_json", "diarized_json")
DIARIZED = "diarized_json"
"""Asks who spoke, too: the record's speakers are `auto` (OpenAI's diarizing models'
answer shape, openai_answers.diarized)."""
GRANULARITIES = ("segment", "word")
MODEL_MAX = 200
KEY_MAX = 200
"""Characters of an Idempotency-Key, as `POST /v1/recordings` takes it."""

COMMON_FIELDS = frozenset({"model", "prompt", "response_format", "temperature", "language"})
IGNORED_FIELDS = frozenset(
    {
        "stream",
        "include[]",
        "chunking_strategy",
        "chunking_strategy[type]",
        "chunking_strategy[prefix_padding_ms]",
        "chunking_strategy[silence_duration_ms]",
        "chunking_strategy[threshold]",
        "keywords[]",
        "languages[]",
    }
)
"""OpenAI's fields for its newer models that no Whisper recognizer can honour: taken, so
a client that always sends them works, and otherwise unused (see the README)."""
DROPPED_FIELDS = IGNORED_FIELDS - {"stream"}
"""The ignored fields thrown away as they are read (`stream` is read: true is refused)."""
TRANSCRIPTION_FIELDS = (
    COMMON_FIELDS | {"timestamp_granularities[]", NAMES, REFERENCES} | IGNORED_FIELDS
)
# OpenAI's translations take no language (the text is English); a language given
# anyway is the speech's, a hint as for a transcription.
TRANSLATION_FIELDS = COMMON_FIELDS

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
    """OpenAI's error shape; `code` by default the one of `status`."""
    # As OpenAI types them: a bad key is an invalid request too (code invalid_api_key).
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {
        "error": {
            "message": message,
            "type": kind,
            "param": param,
            "code": code if code is not None else CODE_OF_STATUS.get(status),
        }
    }


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


router = APIRouter(route_class=OpenAIRoute, tags=["OpenAI-compatible"])


# --- the request ---------------------------------------------------------------------


def form_value(fields: dict[str, str], name: str) -> str | None:
    value = fields.get(name)
    return None if value is None or value == "" else value


def parse_request(task: str, fields: dict[str, str], lists: dict[str, list[str]]) -> AudioRequest:
    """The form's fields as an AudioRequest; OpenAIError 400 naming the field that is
    wrong."""

    def bad(param: str, message: str) -> OpenAIError:
        return OpenAIError(400, message, code="invalid_value", param=param)

    model = form_value(fields, "model") or WHISPER_1
    if len(model) > MODEL_MAX:
        raise bad("model", f"model is longer than {MODEL_MAX} characters")
    response_format = form_value(fields, "response_format") or "json"
    if response_format not in FORMATS:
        raise bad(
            "response_format",
            f"response_format must be one of {', '.join(FORMATS)}, not {response_format!r}",
        )
    try:
        language = clean_language(form_value(fields, "language"))
    except ValueError as e:
        raise bad("language", str(e)) from None
    prompt = form_value(fields, "prompt")
    if prompt is not None:
        try:
            check_text(prompt, "prompt", PROMPT_MAX, lines=True)
        except ValueError as e:
            raise bad("prompt", str(e)) from None
    temperature = None
    if (raw := form_value(fields, "temperature")) is not None:
        try:
            temperature = float(raw)
        except ValueError:
            raise bad("temperature", f"temperature must be a number, not {raw!r}") from None
        if not 0 <= temperature <= 1:
            raise bad("temperature", f"temperature must be from 0 to 1, not {raw}")
        # OpenAI: 0 means "raise the temperature as needed", which is the recognizer's
        # own fallback; only another value fixes it.
        temperature = temperature or None
    granularities = frozenset(lists.get("timestamp_granularities[]", ()))
    if unknown := granularities - set(GRANULARITIES):
        raise bad(
            "timestamp_granularities",
            f"timestamp_granularities takes segment and word, not {', '.join(sorted(unknown))}",
        )
    if (form_value(fields, "stream") or "false").lower() not in ("false", "0"):
        raise bad("stream", "streaming is not supported: leave stream out or false")
    if response_format == DIARIZED and task != "transcribe":
        raise bad("response_format", "diarized_json is for transcriptions, not translations")
    speakers = "auto" if response_format == DIARIZED else None
    try:
        known = parse_known(lists)
    except BadKnown as e:
        raise bad(e.param, str(e)) from None
    return AudioRequest(
        task,
        model,
        language,
        RecognitionOptions(task=task, prompt=prompt, temperature=temperature, speakers=speakers),
        response_format,
        granularities,
        known,
    )


async def receive_request(
    request: Request, owner: int, db: Database, config: Config, task: str
) -> tuple[uuid.UUID, AudioRequest]:
    """Store the form's file and commit its record; the record's id and the request.
    The same request again (the same owner, bytes and fields, or the same
    Idempotency-Key) names the first record (`accept`). Bounded as `POST /v1/recordings`
    is: one of the owner's upload slots while it is
    received (429), the owner's quota and the disk's room (507).

    Cancellation: as `POST /v1/recordings`: before the commit nothing is kept; the commit
    itself is shielded.
    """
    content_type = request.headers.get("content-type", "")
    if not is_form(content_type):
        raise OpenAIError(
            400, "send multipart/form-data with a 'file' field", code="invalid_content_type"
        )
    fields = TRANSCRIPTION_FIELDS if task == "transcribe" else TRANSLATION_FIELDS
    key = request.headers.get("idempotency-key")
    if key is not None and not 1 <= len(key) <= KEY_MAX:
        raise OpenAIError(
            400, f"Idempotency-Key must be 1 to {KEY_MAX} characters", code="invalid_request"
        )
    with request.app.state.upload_slots.take(owner):
        room = await upload_room(db, config, owner, request.app.state.max_upload_bytes)
        try:
            with room_refusals(room, owner):
                declared = request.headers.get("content-length")
                if (
                    declared is not None
                    and declared.isdigit()
                    and int(declared) > room.limit + FORM_SLACK
                ):
                    raise UploadRefused(413, f"the file is larger than {room.limit} bytes")
                async with (
                    blobs_of(config).incoming() as into,
                    contextlib.aclosing(request.stream()) as body,
                ):
                    hashed = Hashed(into)
                    # `Hashed` writes as `Incoming` does, which is all the form asks.
                    form = await receive_form(
                        body,
                        content_type,
                        hashed,  # type: ignore[arg-type]
                        room.limit,
                        fields,
                        DROPPED_FIELDS,
                        LONG_FIELDS if task == "transcribe" else None,
                    )
                    if hashed.size == 0:
                        raise OpenAIError(400, "the file is empty", code="empty_file", param="file")
                    asked = parse_request(task, form.fields, form.lists)
                    if asked.known and asked.response_format == DIARIZED:
                        asked = attrs.evolve(asked, voices=await known_voices(asked))
                    await hashed.finish()
                    up = Upload(
                        into.ref,
                        hashed.size,
                        clean_filename(form.filename),
                        None,
                        asked.language,
                        asked.options,
                    )
                    await audio_fits(room, up.ref)
                    # What the record is made of decides; how the answer is shaped
                    # (response_format, granularities, model) does not.
                    rid, status = await accept(
                        db, owner, up, key, hashed.fingerprint(up), into, via="openai"
                    )
        except ClientDisconnect:
            raise OpenAIError(400, "the upload was interrupted", code="invalid_request") from None
    event(
        logging.INFO,
        "openai_accepted" if status == 201 else "openai_replayed",
        id=rid,
        owner=owner,
        size=up.size,
        task=task,
        model=asked.model,
    )
    return rid, asked


# --- waiting for the record ------------------------------------------------------------

STOPPING = "stopping"
TIMED_OUT = "timed_out"


async def outcome(
    db: Database, owner: int, rid: uuid.UUID, wait_s: float, waiting: Waiting
) -> dict[str, Any] | str:
    """The owner's record's card (as the owner reads it) once it is transcribed or
    stopped; STOPPING when the service stops first, TIMED_OUT after `wait_s`.

    Reads the card whenever the journal has news, and at growing intervals besides
    (see Waiting). Cancellation: nothing to undo; the record goes on.
    """
    poll = waiting.poll_first_s
    with trio.move_on_after(wait_s):
        while True:
            news = waiting.next_news()
            c = await owned_card(db, owner, rid)  # deleted meanwhile: 404, as any other
            if c["done"] or c["stopped"]:
                return c
            await waiting.pause(news, poll)
            if waiting.stopping.is_set():
                return STOPPING
            poll = min(poll * 1.5, waiting.poll_max_s)
    return TIMED_OUT


async def outcome_unless_gone(
    request: Request, db: Database, owner: int, rid: uuid.UUID, wait_s: float
) -> dict[str, Any] | str | None:
    """`outcome`, or None as soon as the client disconnects (nobody would read the
    answer; the record goes on).

    Cancellation: the watch on the connection ends with the wait.
    """
    found: dict[str, Any] | str | None = None
    async with trio.open_nursery() as nursery:

        async def wait() -> None:
            nonlocal found
            found = await outcome(db, owner, rid, wait_s, waiting_of(request.app))
            nursery.cancel_scope.cancel()

        async def watch() -> None:
            # The body was read whole: what the connection says next is its end.
            while (await request.receive())["type"] != "http.disconnect":
                pass
            nursery.cancel_scope.cancel()

        nursery.start_soon(wait)
        nursery.start_soon(watch)
    return found


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


async def recognize(
    request: Request, owner: int, db: Database, config: Config, task: str
) -> Response:
    """Take the request's audio as a record, wait for it, answer as OpenAI would.

    Cancellation (the server cut at once): before the commit nothing is kept, the commit
    is shielded, and after it the record goes on without the request.
    """
    waiting = waiting_of(request.app)
    if waiting.stopping.is_set():
        raise OpenAIError(
            503, "the service is stopping; try again shortly", code="service_unavailable"
        )
    with waiting.owners_place(owner, config.owner_max_waiting) as placed:
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
    assert isinstance(found, dict)
    if found["stopped"]:
        raise stopped_error(found, {**headers, **NO_RETRY})
    t = await transcript(db, owner, rid)
    named = await known_names(db, config, owner, rid, t, asked.voices) if t else {}
    return answer(found, t, asked, headers, named)


async def known_voices(asked: AudioRequest) -> list[tuple[str, Any]]:
    """The voices of the request's known speakers; OpenAIError 400 for a clip that
    cannot be one, 503 without the speaker model. Cancellation: as `reference_voices`."""
    try:
        return await reference_voices(asked.known)
    except BadKnown as e:
        raise OpenAIError(400, str(e), code="invalid_value", param=e.param) from None
    except WeightsMissing as e:
        raise OpenAIError(503, str(e), code="speaker_model_missing") from None


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorBody(BaseModel):
    """OpenAI's error shape."""

    error: ErrorDetail


AUDIO_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the transcript in the asked response_format; the record's id in "
        f"the {RECORDING_HEADER} header",
        "content": {"application/json": {}, "text/plain": {}, "text/vtt": {}},
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
