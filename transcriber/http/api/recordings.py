"""The API's recordings: uploading one (`transcriber.http.accepting` takes it in),
listing mine, reading, editing and deleting a card."""

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse, Response

from transcriber.http.accepting import store_upload
from transcriber.http.api.shapes import Card, CardPage, Edit
from transcriber.http.auth import Owner
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import documented_errors, not_found
from transcriber.http.owned_cards import (
    card_response,
    decode_cursor,
    encode_cursor,
    owned,
    owned_card,
    parse_id,
    with_links,
)
from transcriber.http.uploads import PROMPT_MAX, TITLE_MAX
from transcriber.languages import NAMES
from transcriber.options import (
    ALIGN_TEXT_MAX,
    TASKS,
    VOCABULARY_CHARS_MAX,
    VOCABULARY_TERM_MAX,
    VOCABULARY_TERMS_MAX,
)
from transcriber.records.archive import edit_owner_fields, records_page
from transcriber.records.deletion import delete_own
from transcriber.storage.configured import blobs_of

TASK_SCHEMA = {
    "type": "string",
    "enum": list(TASKS),
    "description": "transcribe (text in the speech's language, the default), "
    "translate (English text) or align (the form's `text`, timed word by word)",
}
VOCABULARY_SCHEMA = {
    "type": "string",
    "maxLength": VOCABULARY_CHARS_MAX + VOCABULARY_TERMS_MAX * 2,
    "description": f"names and terms the recognizer is to hear, separated by commas or "
    f"new lines: at most {VOCABULARY_TERMS_MAX} terms of {VOCABULARY_TERM_MAX} characters, "
    f"{VOCABULARY_CHARS_MAX} in all; default: the service's TRANSCRIBER_VOCABULARY",
}
TEXT_SCHEMA = {
    "type": "string",
    "maxLength": ALIGN_TEXT_MAX,
    "description": "with task align: the owner's text of the speech, which the transcript "
    "becomes, each word timed (words the audio has no room for are kept, marked "
    "`timing: unplaced`)",
}
PROMPT_SCHEMA = {
    "type": "string",
    "maxLength": PROMPT_MAX,
    "description": "text the recognizer takes as coming before the audio: names, spelling, style",
}

SPEAKERS_SCHEMA = {
    "type": "string",
    "pattern": "^(off|auto|[0-9]{1,2}(-[0-9]{1,2})?)$",
    "description": "who spoke: off, auto, an exact count (2) or a range (2-4); "
    "default: the service's TRANSCRIBER_SPEAKERS",
}

LANGUAGE_SCHEMA = {
    "type": "string",
    "enum": ["", "auto", *sorted(NAMES)],
    "description": "a language hint: one of the recognizer's (Whisper's) codes, such as "
    "en or ru, in any case; empty or auto to detect it; any other is 422",
}
LANGUAGE_MAX = 20
"""Longer is surely no code: refused before the body is read, like the others."""

UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary"},
                    "title": {"type": "string", "maxLength": TITLE_MAX},
                    "language": LANGUAGE_SCHEMA,
                    "task": TASK_SCHEMA,
                    "prompt": PROMPT_SCHEMA,
                    "speakers": SPEAKERS_SCHEMA,
                    "vocabulary": VOCABULARY_SCHEMA,
                    "text": TEXT_SCHEMA,
                },
            }
        },
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        "audio/*": {"schema": {"type": "string", "format": "binary"}},
    },
}

LOCATION = {
    "Location": {
        "description": "the card's address",
        "required": True,
        "schema": {"type": "string"},
    }
}

router = APIRouter()


# --- intake ---


@router.post(
    "/v1/recordings",
    status_code=201,
    summary="Upload a recording",
    response_model=None,
    openapi_extra={"requestBody": UPLOAD_BODY},
    responses={
        201: {"model": Card, "description": "accepted", "headers": LOCATION},
        200: {
            "model": Card,
            "headers": LOCATION,
            "description": "this Idempotency-Key was used before: the first recording",
        },
        **documented_errors(400, 408, 409, 413, 415, 429, 503, 507),
    },
)
async def upload(
    request: Request,
    owner: Owner,
    db: Db,
    config: Settings,
    title: Annotated[str | None, Query(max_length=TITLE_MAX, description="for a raw body")] = None,
    language: Annotated[
        str | None,
        Query(
            max_length=LANGUAGE_MAX,
            description=f"for a raw body: {LANGUAGE_SCHEMA['description']}",
            json_schema_extra={"enum": LANGUAGE_SCHEMA["enum"]},
        ),
    ] = None,
    filename: Annotated[str | None, Query(max_length=1000, description="for a raw body")] = None,
    task: Annotated[
        Literal["transcribe", "translate"] | None,
        Query(description="for a raw body: transcribe (the default) or translate"),
    ] = None,
    prompt: Annotated[
        str | None, Query(max_length=PROMPT_MAX, description="for a raw body")
    ] = None,
    speakers: Annotated[
        str | None,
        Query(
            pattern=SPEAKERS_SCHEMA["pattern"],
            description="for a raw body: off, auto, a count or a range such as 2-4",
        ),
    ] = None,
    vocabulary: Annotated[
        str | None,
        Query(
            max_length=VOCABULARY_SCHEMA["maxLength"],
            description="for a raw body: names and terms, separated by commas",
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=200,
            description="retrying with the same key returns the first recording; the "
            "same key with another request is 422",
        ),
    ] = None,
) -> JSONResponse:
    """A multipart form (`file`, `title`, `language`, `task`, `prompt`, `speakers`,
    `vocabulary`, `text`) or the audio itself as the body. The recording is stored (on
    disk, or whole in the object store) and its record committed before the answer; 503
    with Retry-After when the store is unavailable."""
    got = await store_upload(
        request,
        db,
        config,
        owner,
        idempotency_key,
        title,
        language,
        filename,
        task,
        prompt,
        speakers=speakers,
        vocabulary=vocabulary,
    )
    return await card_response(db, owner, got.id, 201 if got.created else 200)


# --- the archive ---


@router.get(
    "/v1/recordings",
    summary="My recordings, newest first",
    response_model=None,
    responses={200: {"model": CardPage}, **documented_errors(400)},
)
async def list_recordings(
    owner: Owner,
    db: Db,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> JSONResponse:
    found = await records_page(db, owner, decode_cursor(cursor) if cursor else None, limit)
    more = found.more_after
    return JSONResponse(
        {
            "items": [with_links(c) for c in found.cards],
            "next_cursor": None if more is None else encode_cursor(*more),
        }
    )


@router.get(
    "/v1/recordings/{recording_id}",
    summary="The record card",
    response_model=None,
    responses={200: {"model": Card}, **documented_errors(404)},
)
async def get_card(owner: Owner, db: Db, recording_id: str) -> JSONResponse:
    return JSONResponse(await owned_card(db, owner, recording_id))


@router.patch(
    "/v1/recordings/{recording_id}",
    summary="Edit title, summary, topics",
    response_model=None,
    responses={200: {"model": Card}, **documented_errors(400, 404, 408, 413)},
)
async def edit(owner: Owner, db: Db, recording_id: str, body: Edit) -> JSONResponse:
    rid = await owned(db, owner, recording_id)
    changed = sorted(body.model_fields_set)
    if changed:
        await edit_owner_fields(
            db,
            owner,
            rid,
            title=body.title,
            summary=body.summary,
            topics=body.topics,
            detail={"by": "owner", "owner_id": owner, "fields": changed},
        )
    return JSONResponse(await owned_card(db, owner, rid))


@router.delete(
    "/v1/recordings/{recording_id}",
    status_code=204,
    summary="Delete a recording",
    response_model=None,
    responses={204: {"description": "deleted"}, **documented_errors(404)},
)
async def delete(owner: Owner, db: Db, config: Settings, recording_id: str) -> Response:
    """The record, its transcript, corrections and share links, and its stored bytes are
    gone, the quota freed at once; journaled `deleted` (origin `human`). A step working
    on it has its result refused. Another owner's or an unknown id: 404, changing
    nothing."""
    rid = parse_id(recording_id)
    gone = [] if rid is None else await delete_own(db, blobs_of(config), owner, [rid], via="api")
    if not gone:
        raise not_found()
    return Response(status_code=204)
