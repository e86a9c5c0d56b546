"""A request to the OpenAI endpoint taken in: its form's fields read and checked
(`parse_request`, 400 naming the field that is wrong), its file stored and its record
committed by the intake, as any upload's (`receive_request`, `transcriber.intake`)."""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any

import attrs
from fastapi import Request
from starlette.requests import ClientDisconnect

from actors.log import event
from transcriber.audio.speakers_model import WeightsMissing
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.accepting import accept_request
from transcriber.http.openai.answers import AudioRequest
from transcriber.http.openai.errors import OpenAIError
from transcriber.http.openai.speakers import (
    LONG_FIELDS,
    NAMES,
    REFERENCES,
    BadKnown,
    parse_known,
    reference_voices,
)
from transcriber.http.uploads import (
    FORM_SLACK,
    PROMPT_MAX,
    check_text,
    clean_filename,
    clean_language,
    is_form,
    receive_form,
)
from transcriber.intake import Described, Sink, TooLarge
from transcriber.options import RecognitionOptions, parse_vocabulary

WHISPER_1 = "whisper-1"


FORMATS = ("json", "text", "srt", "vtt", "verbose_json", "diarized_json")


DIARIZED = "diarized_json"
"""Asks who spoke, too: the record's speakers are `auto` (OpenAI's diarizing models'
answer shape, `answers.diarized`)."""


GRANULARITIES = ("segment", "word")


MODEL_MAX = 200


KEY_MAX = 200
"""Characters of an Idempotency-Key, as `POST /v1/recordings` takes it."""


COMMON_FIELDS = frozenset(
    {"model", "prompt", "response_format", "temperature", "language", "vocabulary"}
)
"""OpenAI's fields, and `vocabulary` (ours: names and terms the recognizer is to hear,
separated by commas, as `POST /v1/recordings` takes them)."""


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
a client that always sends them works, and otherwise unused (docs/api.md)."""


DROPPED_FIELDS = IGNORED_FIELDS - {"stream"}
"""The ignored fields thrown away as they are read (`stream` is read: `parse_stream`)."""


TRANSCRIPTION_FIELDS = (
    COMMON_FIELDS | {"timestamp_granularities[]", NAMES, REFERENCES} | IGNORED_FIELDS
)


# OpenAI's translations take no language (the text is English); a language given
# anyway is the speech's, a hint as for a transcription.
TRANSLATION_FIELDS = COMMON_FIELDS


def form_value(fields: dict[str, str], name: str) -> str | None:
    value = fields.get(name)
    return None if value is None or value == "" else value


def parse_request(task: str, fields: dict[str, str], lists: dict[str, list[str]]) -> AudioRequest:
    """The form's fields as an AudioRequest; OpenAIError 400 naming the field that is
    wrong."""

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
    try:
        vocabulary = parse_vocabulary(form_value(fields, "vocabulary"))
    except ValueError as e:
        raise bad("vocabulary", str(e)) from None
    granularities = frozenset(lists.get("timestamp_granularities[]", ()))
    if unknown := granularities - set(GRANULARITIES):
        raise bad(
            "timestamp_granularities",
            f"timestamp_granularities takes segment and word, not {', '.join(sorted(unknown))}",
        )
    stream = parse_stream(form_value(fields, "stream"), response_format)
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
        RecognitionOptions(
            task=task,
            prompt=prompt,
            temperature=temperature,
            speakers=speakers,
            vocabulary=vocabulary,
        ),
        response_format,
        granularities,
        known,
        stream=stream,
    )


STREAMED_FORMATS = ("json", "text")
"""The formats OpenAI streams in: each `transcript.text.delta` event carries text."""


def parse_stream(value: str | None, response_format: str) -> bool:
    """Whether the answer is to be OpenAI's server-sent events (`stream=true`, a field of
    transcriptions only, as OpenAI's): in json or text; any other value than true or
    false is refused."""
    word = (value or "false").lower()
    if word in ("false", "0"):
        return False
    if word not in ("true", "1"):
        raise bad("stream", f"stream must be true or false, not {value!r}")
    if response_format not in STREAMED_FORMATS:
        raise bad(
            "stream",
            f"a streamed answer is in json or text, not {response_format}: "
            "leave stream out for that format",
        )
    return True


def bad(param: str, message: str) -> OpenAIError:
    return OpenAIError(400, message, code="invalid_value", param=param)


async def receive_request(
    request: Request, owner: int, db: Database, config: Config, task: str
) -> tuple[uuid.UUID, AudioRequest]:
    """Store the form's file and commit its record; the record's id and the request.
    Through the intake, as `POST /v1/recordings`: the same request again (the same
    owner, bytes and fields, or the same Idempotency-Key) names the first record
    (`accept`); one of the owner's upload slots while it is received (429), the owner's
    quota and the disk's room (507).

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
    asked: AudioRequest | None = None

    async def fill(into: Sink) -> Described:
        nonlocal asked
        assert into.limit is not None  # an HTTP door always has its limits
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > into.limit + FORM_SLACK:
            raise TooLarge(f"the file is larger than {into.limit} bytes")
        async with contextlib.aclosing(request.stream()) as body:
            form = await receive_form(
                body,
                content_type,
                into,
                into.limit,
                fields,
                DROPPED_FIELDS,
                LONG_FIELDS if task == "transcribe" else None,
            )
        if into.size == 0:
            raise OpenAIError(400, "the file is empty", code="empty_file", param="file")
        asked = parse_request(task, form.fields, form.lists)
        if asked.known and asked.response_format == DIARIZED:
            asked = attrs.evolve(asked, voices=await known_voices(asked))
        # What the record is made of decides; how the answer is shaped (response_format,
        # granularities, model) does not.
        return Described(clean_filename(form.filename), None, asked.language, asked.options)

    try:
        got = await accept_request(request, db, config, owner, fill, via="openai", key=key)
    except ClientDisconnect:
        raise OpenAIError(400, "the upload was interrupted", code="invalid_request") from None
    assert asked is not None  # `accept` returns only after `fill` did
    event(
        logging.INFO,
        "openai_accepted" if got.created else "openai_replayed",
        id=got.id,
        owner=owner,
        size=got.size,
        task=task,
        model=asked.model,
    )
    return got.id, asked


async def known_voices(asked: AudioRequest) -> list[tuple[str, Any]]:
    """The voices of the request's known speakers; OpenAIError 400 for a clip that
    cannot be one, 503 without the speaker model. Cancellation: as `reference_voices`."""
    try:
        return await reference_voices(asked.known)
    except BadKnown as e:
        raise OpenAIError(400, str(e), code="invalid_value", param=e.param) from None
    except WeightsMissing as e:
        raise OpenAIError(503, str(e), code="speaker_model_missing") from None
