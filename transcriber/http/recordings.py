"""Intake and the archive: uploading a recording, listing mine, reading and editing a
card."""

import base64
import binascii
import contextlib
import datetime as dt
import hashlib
import json
import logging
import uuid
from typing import Annotated, Any, Literal

import asyncpg
import attrs
import trio
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from actors.log import event
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.auth import Owner
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError, documented_errors, not_found
from transcriber.http.owned_cards import card_response, owned, owned_card, parse_id, with_links
from transcriber.http.quotas import audio_fits, room_refusals, upload_room
from transcriber.http.shapes import Card, CardPage, Edit
from transcriber.http.uploads import PROMPT_MAX, TITLE_MAX, Upload, receive
from transcriber.options import TASKS, RecognitionOptions
from transcriber.records.archive import edit_owner_fields, records_page
from transcriber.records.deletion import delete_own
from transcriber.records.uploaded import commit_upload, upload_by_fingerprint, upload_by_key
from transcriber.storage.blobs import Incoming
from transcriber.storage.configured import blobs_of

ACCEPT_TIMEOUT_S = 30.0

TASK_SCHEMA = {
    "type": "string",
    "enum": list(TASKS),
    "description": "transcribe (text in the speech's language, the default) "
    "or translate (English text)",
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
                    "language": {
                        "type": "string",
                        "pattern": "^[A-Za-z]{2,3}$",
                        "description": "a language hint such as en or ru",
                    },
                    "task": TASK_SCHEMA,
                    "prompt": PROMPT_SCHEMA,
                    "speakers": SPEAKERS_SCHEMA,
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


def encode_cursor(created_at: dt.datetime, rid: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{rid}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, uuid.UUID]:
    """The position a cursor names; 400 for anything `encode_cursor` did not make."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, _, rid = raw.partition("|")
        created_at = dt.datetime.fromisoformat(at)
        if created_at.tzinfo is None:
            raise ValueError("naive time")
        # In UTC, as the database compares it: a time at the edge of Python's range
        # with an offset (year 1 at +05:00) falls outside it here, not in the driver.
        return created_at.astimezone(dt.UTC), uuid.UUID(rid)
    except (ValueError, OverflowError, UnicodeDecodeError, binascii.Error):
        raise ApiError(400, "invalid cursor; pass the next_cursor of the previous page") from None


@attrs.define(eq=False)
class Hashed:
    """Where `receive` writes an upload: on to `into` (None: nowhere, for a replay that
    is only compared), hashing the bytes on the way."""

    into: Incoming | None
    size: int = 0
    _digest: Any = attrs.field(factory=hashlib.sha256)

    @property
    def ref(self) -> str:
        return "" if self.into is None else self.into.ref

    async def write(self, data: bytes) -> None:
        self._digest.update(data)
        self.size += len(data)
        if self.into is not None:
            await self.into.write(data)

    async def finish(self) -> None:
        if self.into is not None:
            await self.into.finish()

    def fingerprint(self, up: Upload) -> bytes:
        """What identifies the request: its fields, its size and its content."""
        asked = [up.title, up.language, up.filename, up.size, self._digest.hexdigest()]
        if up.options != RecognitionOptions():
            # Only when asked for, so a default request keeps the fingerprint it had
            # before uploads took options.
            asked.append(up.options.to_json())
        return hashlib.sha256(json.dumps(asked).encode()).digest()


def same_request(first: Any, fingerprint: bytes | None) -> bool:
    """Whether a request with `fingerprint` repeats the first one of its key (`first`, a
    `recording_by_key` row). A record made before fingerprints were kept counts as the
    same."""
    return first["fingerprint"] is None or bytes(first["fingerprint"]) == fingerprint


def key_reused(key: str) -> ApiError:
    return ApiError(
        422,
        f"the Idempotency-Key {key!r} was used before with a different "
        "request (title, language, task, prompt, filename or content); "
        "send a new recording with a new key",
    )


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
        **documented_errors(400, 408, 413, 415, 429, 503, 507),
    },
)
async def upload(
    request: Request,
    owner: Owner,
    db: Db,
    config: Settings,
    title: Annotated[str | None, Query(max_length=TITLE_MAX, description="for a raw body")] = None,
    language: Annotated[
        str | None, Query(pattern="^[A-Za-z]{2,3}$", description="for a raw body")
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
    """A multipart form (`file`, `title`, `language`, `task`, `prompt`, `speakers`) or the audio
    itself as the body. The recording is stored (on disk, or whole in the object
    store) and its record committed before the answer; 503 with Retry-After when
    the store is unavailable."""
    rid, status = await store_upload(
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
    )
    return await card_response(db, owner, rid, status)


async def store_upload(
    request: Request,
    db: Database,
    config: Config,
    owner: int,
    key: str | None,
    title: str | None = None,
    language: str | None = None,
    filename: str | None = None,
    task: str | None = None,
    prompt: str | None = None,
    via: str = "api",
    speakers: str | None = None,
) -> tuple[uuid.UUID, int]:
    """Receive the request's body as `owner`'s upload, within their bounds (uploads at
    once 429, stored bytes and the disk's room 507), and commit its record: (id, 201),
    or (the first id, 200) when `key` was used before by the same request (422 by
    another). The API's upload and the page's both come here; the caller authenticated
    the owner before anything of the body was read. `via` names the door in the log and
    the journal's `accepted`.

    Cancellation: see `accept`; a file received but not committed goes."""
    with request.app.state.upload_slots.take(owner):
        first = None if key is None else await upload_by_key(db, owner, key)
        max_upload = request.app.state.max_upload_bytes
        room = await upload_room(db, config, owner, max_upload) if first is None else None
        try:
            with room_refusals(room, owner):
                # Closed at once even when the upload is refused halfway, so the generator
                # is not left for the garbage collector.
                async with contextlib.aclosing(request.stream()) as body:
                    if first is not None:
                        # A retry: its body is only compared with the first request's.
                        hashed = Hashed(None)
                        up = await receive_into(
                            request,
                            body,
                            hashed,
                            max_upload,
                            title,
                            language,
                            filename,
                            task,
                            prompt,
                            speakers,
                        )
                        if not same_request(first, hashed.fingerprint(up)):
                            raise key_reused(str(key))
                        rid, status = first["id"], 200
                    else:
                        assert room is not None  # measured for every first upload
                        async with blobs_of(config).incoming() as into:
                            hashed = Hashed(into)
                            up = await receive_into(
                                request,
                                body,
                                hashed,
                                room.limit,
                                title,
                                language,
                                filename,
                                task,
                                prompt,
                                speakers,
                            )
                            await audio_fits(room, up.ref)
                            rid, status = await accept(
                                db, owner, up, key, hashed.fingerprint(up), into, via=via
                            )
        except ClientDisconnect:
            event(logging.INFO, "upload_interrupted", owner=owner, via=via)
            raise ApiError(400, "the upload was interrupted") from None
    event(
        logging.INFO,
        "upload_accepted" if status == 201 else "upload_replayed",
        id=rid,
        owner=owner,
        size=up.size,
        via=via,
    )
    return rid, status


async def receive_into(
    request: Request,
    body: Any,
    into: Hashed,
    limit: int,
    title: str | None,
    language: str | None,
    filename: str | None,
    task: str | None,
    prompt: str | None,
    speakers: str | None = None,
) -> Upload:
    # `Hashed` writes as `Incoming` does, which is all `receive` asks of its target.
    return await receive(
        body,
        content_type=request.headers.get("content-type", ""),
        content_length=request.headers.get("content-length"),
        disposition=request.headers.get("content-disposition"),
        into=into,  # type: ignore[arg-type]
        limit=limit,
        title=title,
        language=language,
        filename=filename,
        task=task,
        prompt=prompt,
        speakers=speakers,
    )


async def accept(
    db: Database,
    owner: int,
    up: Upload,
    key: str | None,
    fingerprint: bytes | None,
    into: Incoming,
    *,
    via: str,
) -> tuple[uuid.UUID, int]:
    """Commit the record of a received upload; (id, 201), or (the first id, 200)
    when `key` was used meanwhile by the same request (422 by another) — or, without a
    key, when the same request (`fingerprint`: the same owner, fields and bytes) made a
    record before: a client's retry after a 5xx, a timeout or a cut connection names the
    first record, never a second. `via` names the route in the journal's `accepted`.

    Cancellation: the insert runs shielded (with a deadline), so a shutdown never
    leaves it unknown whether the record committed; if it still is unknown (the
    connection broke), the file stays and the startup sweep decides.
    """
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + ACCEPT_TIMEOUT_S
        try:
            rid = await commit_upload(
                db,
                owner,
                filename=up.filename,
                size=up.size,
                ref=up.ref,
                language=up.language,
                title=up.title,
                key=key,
                options=up.options.to_json(),
                fingerprint=fingerprint,
                via=via,
            )
        except asyncpg.PostgresError:
            raise  # refused by the database: surely no record; the file goes
        except BaseException:
            into.keep()
            raise
    if scope.cancelled_caught:
        into.keep()
        raise ApiError(503, "the database did not confirm the upload in time")
    if rid is None:
        # Another upload with this key, or without one the same request, committed
        # first; this file goes.
        if key is None:
            assert fingerprint is not None  # without either nothing conflicts
            first = await upload_by_fingerprint(db, owner, fingerprint)
            return first["id"], 200
        first = await upload_by_key(db, owner, key)
        if not same_request(first, fingerprint):
            raise key_reused(key)
        return first["id"], 200
    into.keep()
    return rid, 201


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
