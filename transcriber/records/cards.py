"""The record card: what an owner reads about one recording."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from transcriber.db.database import Database
from transcriber.milestones import NORMALIZED, RECEIVED, RECOGNIZED, TRANSCRIBED
from transcriber.stops import stop_message

# Where a record is, as its owner reads it (the card's `state`): waiting in the queue,
# one of the steps at work on it, done, or stopped.
QUEUED = "queued"
NORMALIZING = "normalizing"
TRANSCRIBING = "transcribing"
FINDING_SPEAKERS = "finding_speakers"
DONE = "done"
STOPPED = "stopped"
STATES = (QUEUED, NORMALIZING, TRANSCRIBING, FINDING_SPEAKERS, DONE, STOPPED)
# The step at work on a claimed record, by the milestone it starts from.
AT_WORK = {RECEIVED: NORMALIZING, NORMALIZED: TRANSCRIBING, RECOGNIZED: FINDING_SPEAKERS}


async def owner_card(db: Database, owner: int, recording_id: Any) -> dict[str, Any] | None:
    """The card of the owner's record `recording_id`, or None if there is no such
    record or it is another owner's. Cancellation: a plain read."""
    r = await db.fetchrow("owner_recording", owner, recording_id)
    if r is None:
        return None
    card = card_from_row(r)
    await add_queue_places(db, owner, [card])
    return card


async def add_queue_places(db: Database, owner: int, cards: Sequence[dict[str, Any]]) -> None:
    """Fills in `queue_ahead` of the owner's queued `cards`: how many records a worker
    would claim before each (the `queue_ahead` query). Cancellation: a plain read; the
    cards are filled only once it answered."""
    queued = {c["id"]: c for c in cards if c["state"] == QUEUED}
    if not queued:
        return
    for row in await db.fetch("queue_ahead", owner, list(queued)):
        queued[str(row["id"])]["queue_ahead"] = row["ahead"]


def state_of_row(r: Mapping[str, Any], now: dt.datetime | None = None) -> str:
    """The record's state: a step is at work on it while a claim's lease holds; a claim
    whose lease ran out is the queue's again (the next claim takes it over)."""
    if r["stopped_at"] is not None:
        return STOPPED
    if r["milestone"] == TRANSCRIBED:
        return DONE
    lease = r.get("lease_expires_at")
    now = now or dt.datetime.now(dt.UTC)
    if r.get("claim_token") is not None and lease is not None and lease > now:
        return AT_WORK.get(r["milestone"], QUEUED)
    return QUEUED


def card_from_row(r: Mapping[str, Any], *, owner: bool = True) -> dict[str, Any]:
    """The card from a row shaped like the `recording` query's. A stop shows here as a
    flag with its time, reason, the reason in plain words and the error (which the HTTP
    API leaves out: it is the operator's), beside the milestone the record reached.
    `progress` is the step's own report, while a step is at work only (a stale one of a
    lost claim is not shown). `owner`: read by the record's owner, who also sees which
    of its options came from their defaults (`from_settings`; an operator does not)."""
    state = state_of_row(r)
    card = {
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
        "state": state,
        # Filled in by `add_queue_places` for a queued record read by its owner.
        "queue_ahead": None,
        # The transcript is stored, and readable, from recognition on: a diarization
        # still running, or stopped, hides none of it.
        "readable": r["milestone"] in (RECOGNIZED, TRANSCRIBED),
        "speakers": {
            "asked": r.get("speakers_asked"),
            "found": r.get("speaker_count"),
        },
        # The owner's: the operator's card leaves it out (transcriber.pipeline.operator).
        "task": r.get("task") or "transcribe",
        "vocabulary": _terms(r.get("vocabulary")),
        "progress": r["progress"] if state in AT_WORK.values() else None,
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
    if owner:
        card["from_settings"] = list(r.get("from_settings") or [])
    else:
        # The vocabulary is the owner's words (names of people, of projects): not the
        # operator's to read, as the owner's memory never is.
        del card["vocabulary"]
    return card


def _terms(stored: Any) -> list[str] | None:
    """The record's vocabulary as stored (jsonb, which asyncpg may hand over as text)."""
    if isinstance(stored, str):
        stored = json.loads(stored)
    return list(stored) if stored else None
