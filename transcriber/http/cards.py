"""An owner's records as the API shows them: finding one the caller owns (404 alike for
another owner's, an unknown and a malformed id, so ids cannot be probed) and its card
with the links to its transcripts."""

import uuid
from typing import Any

from fastapi.responses import JSONResponse

from transcriber.cards import card
from transcriber.db import Database
from transcriber.http.errors import not_found

# Where a card's transcript renderings live, by the `links` key.
TRANSCRIPT_PATHS = {"text": "text", "srt": "transcript.srt", "vtt": "transcript.vtt",
                    "json": "transcript.json"}


def parse_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def card_path(rid: Any) -> str:
    return f"/v1/recordings/{rid}"


def with_links(c: dict[str, Any]) -> dict[str, Any]:
    base = card_path(c["id"])
    return {**c, "links": {k: f"{base}/{p}" for k, p in TRANSCRIPT_PATHS.items()}}


async def owned(db: Database, owner: int, recording_id: str) -> uuid.UUID:
    """The id of the caller's record `recording_id`; 404 if it is not theirs."""
    rid = parse_id(recording_id)
    if rid is None or await db.fetchval("recording_owner", rid) != owner:
        raise not_found()
    return rid


async def card_of(db: Database, rid: uuid.UUID) -> dict[str, Any]:
    c = await card(db, rid)
    if c is None:  # records are never deleted; kept for safety
        raise not_found()
    return with_links(c)


async def card_response(db: Database, rid: uuid.UUID, status: int) -> JSONResponse:
    return JSONResponse(await card_of(db, rid), status_code=status,
                        headers={"Location": card_path(rid)})
