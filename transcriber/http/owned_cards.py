"""An owner's records as the API shows them: the card of a record the caller owns (404
alike for another owner's, an unknown and a malformed id, so ids cannot be probed),
with the links to its transcripts and without the operator's error text."""

import uuid
from typing import Any

from fastapi.responses import JSONResponse

from transcriber.db.database import Database
from transcriber.http.errors import not_found
from transcriber.records.cards import owner_card

# Where a card's transcript renderings live, by the `links` key.
TRANSCRIPT_PATHS = {
    "text": "text",
    "srt": "transcript.srt",
    "vtt": "transcript.vtt",
    "json": "transcript.json",
    "markdown": "transcript.md",
    "docx": "transcript.docx",
}


def parse_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


def card_path(rid: Any) -> str:
    return f"/v1/recordings/{rid}"


def with_links(c: dict[str, Any]) -> dict[str, Any]:
    """The card as its owner reads it: with the links to its transcripts; a stop with
    its reason and plain words, without the error text, which is the operator's."""
    base = card_path(c["id"])
    stopped = c["stopped"] and {k: v for k, v in c["stopped"].items() if k != "error"}
    return {
        **c,
        "stopped": stopped,
        "links": {k: f"{base}/{p}" for k, p in TRANSCRIPT_PATHS.items()},
    }


async def owned_card(db: Database, owner: int, recording_id: Any) -> dict[str, Any]:
    """The card of the caller's record `recording_id`; 404 if it is not theirs."""
    rid = recording_id if isinstance(recording_id, uuid.UUID) else parse_id(recording_id)
    found = None if rid is None else await owner_card(db, owner, rid)
    if found is None:
        raise not_found()
    return with_links(found)


async def owned(db: Database, owner: int, recording_id: str) -> uuid.UUID:
    """The id of the caller's record `recording_id`; 404 if it is not theirs."""
    return uuid.UUID((await owned_card(db, owner, recording_id))["id"])


async def card_response(db: Database, owner: int, rid: uuid.UUID, status: int) -> JSONResponse:
    return JSONResponse(
        await owned_card(db, owner, rid), status_code=status, headers={"Location": card_path(rid)}
    )
