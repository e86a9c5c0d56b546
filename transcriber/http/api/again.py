"""The API's `POST /v1/recordings/{id}/again`: a finished recording transcribed again
with another language, speakers or task, as a new record
(`transcriber.http.transcribing_again`)."""

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse

from transcriber.http.api.shapes import Again, Card
from transcriber.http.auth import Owner
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError, documented_errors
from transcriber.http.owned_cards import card_response, parse_id
from transcriber.http.transcribing_again import KEY_MAX, Change, again

router = APIRouter()


@router.post(
    "/v1/recordings/{recording_id}/again",
    status_code=201,
    summary="Transcribe a recording again with other options",
    response_model=None,
    responses={
        201: {"model": Card, "description": "the new record"},
        200: {"model": Card, "description": "this Idempotency-Key was used before: that record"},
        **documented_errors(400, 404, 408, 409, 413, 507),
    },
)
async def transcribe_again(
    request: Request,
    owner: Owner,
    db: Db,
    config: Settings,
    recording_id: str,
    body: Again,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=KEY_MAX,
            description="retrying with the same key returns the first new record",
        ),
    ] = None,
) -> JSONResponse:
    """A transcribed or stopped recording's uploaded file becomes a new record, with the
    language, speakers and task given (a field left out: as the recording had it); the
    recording itself, its transcript and corrections stay, and its journal says which
    record it became (`transcribed_again`). 409 while it is still being transcribed;
    422 for a language or option no recognizer takes, or when nothing differs."""
    rid = parse_id(recording_id)
    if rid is None:
        raise ApiError(404, "no such recording")
    got = await again(
        request,
        db,
        config,
        owner,
        rid,
        Change(body.language, body.speakers, body.task),
        via="api",
        key=idempotency_key,
    )
    return await card_response(db, owner, got.id, 201 if got.created else 200)
