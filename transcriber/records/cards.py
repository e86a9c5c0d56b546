"""The record card: what an owner reads about one recording."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transcriber.db.database import Database
from transcriber.milestones import RECOGNIZED, TRANSCRIBED
from transcriber.stops import stop_message


async def owner_card(db: Database, owner: int, recording_id: Any) -> dict[str, Any] | None:
    """The card of the owner's record `recording_id`, or None if there is no such
    record or it is another owner's. Cancellation: a plain read."""
    r = await db.fetchrow("owner_recording", owner, recording_id)
    return None if r is None else card_from_row(r)


def card_from_row(r: Mapping[str, Any]) -> dict[str, Any]:
    """The card from a row shaped like the `recording` query's. A stop shows here as a
    flag with its time, reason, the reason in plain words and the error (which the HTTP
    API leaves out: it is the operator's), beside the milestone the record reached."""
    return {
        "id": str(r["id"]),
        "title": r["title"],
        "summary": r["summary"],
        "topics": list(r["topics"]),
        "filename": r["filename"],
        "size_bytes": r["size_bytes"],
        "created_at": r["created_at"].isoformat(),
        "milestone": r["milestone"],
        "milestone_entered_at": r["milestone_entered_at"].isoformat(),
        "done": r["milestone"] == TRANSCRIBED,
        # The transcript is stored, and readable, from recognition on: a diarization
        # still running, or stopped, hides none of it.
        "readable": r["milestone"] in (RECOGNIZED, TRANSCRIBED),
        "speakers": {
            "asked": r.get("speakers_asked"),
            "found": r.get("speaker_count"),
        },
        "progress": r["progress"],
        "duration_s": r["duration_s"],
        "language": r["language"],
        "stopped": None
        if r["stopped_at"] is None
        else {
            "at": r["stopped_at"].isoformat(),
            "reason": r["stop_reason"],
            "message": stop_message(r["stop_reason"]),
            "error": r["stop_error"],
        },
    }
