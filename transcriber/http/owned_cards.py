"""An owner's records as every face shows them: the card of a record the caller owns
(404 alike for another owner's, an unknown and a malformed id, so ids cannot be
probed), with the links to its transcripts and without the operator's error text; the
bounds of the owner's own fields; the cursor of a list of them."""

import base64
import binascii
import datetime as dt
import uuid
from typing import Any

from fastapi.responses import JSONResponse

from transcriber.db.database import Database
from transcriber.http.errors import ApiError, not_found
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


SUMMARY_MAX = 20_000


TOPICS_MAX = 50


TOPIC_MAX = 100
