"""The owner's say on who spoke, through the API: a name for a speaker diarization found
(`PUT /v1/recordings/{id}/speakers/{label}`) and a segment moved to another speaker
(`PUT /v1/recordings/{id}/segments/{index}/speaker`). The page's forms call the same
`rename` and `reassign`. Every rendering of the transcript shows them (transcripts.py)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from transcriber.db.database import Database
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError, documented_errors
from transcriber.http.owned_cards import owned
from transcriber.records.archive import transcript
from transcriber.records.speaker_names import (
    NAME_MAX,
    BadSpeaker,
    check_name,
    choose_speaker,
    default_label,
    name_speaker,
    owner_speakers,
    speaker_number,
)

router = APIRouter()

NOT_DIARIZED = "the record's speakers were not told apart (speakers off, or not yet)"


class SpeakerName(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str | None, Field(max_length=4 * NAME_MAX)] = Field(
        description="the speaker's name; empty or null: back to the label diarization gave"
    )


class SegmentSpeaker(BaseModel):
    model_config = ConfigDict(extra="forbid")
    speaker: Annotated[str | None, Field(max_length=4 * NAME_MAX)] = Field(
        description="the speaker's label (Speaker 2) or name; null: the one diarization found"
    )


async def _diarized(db: Database, owner: int, rid: uuid.UUID) -> dict[str, Any]:
    t = await transcript(db, owner, rid)
    if t is None or t.get("turns") is None:
        raise ApiError(409, NOT_DIARIZED)
    return t


def _found(t: dict[str, Any]) -> set[int]:
    return {turn[2] for turn in t["turns"]}


async def rename(
    db: Database, owner: int, rid: uuid.UUID, label: str, name: str | None, via: str
) -> dict[str, Any]:
    """The owner's `name` for the speaker `label` ("Speaker 2", 2, or its current name)
    of their diarized record: the speaker's label and name now. 404: no such speaker;
    409: not diarized; BadSpeaker: the name refused. Cancellation: reads, then one write."""
    t = await _diarized(db, owner, rid)
    said = await owner_speakers(db, owner, rid)
    try:
        n = speaker_number(label, said.names)
    except BadSpeaker:
        raise ApiError(404, "no such speaker") from None
    if n not in _found(t) | set(said.choices.values()):
        raise ApiError(404, "no such speaker")
    stored = check_name(name or "", n, said.names)
    detail = {
        "by": "owner",
        "owner_id": owner,
        "via": via,
        "speaker": default_label(n),
        "name": stored,
    }
    await name_speaker(db, owner, rid, n, stored, detail)
    return {"label": default_label(n), "name": stored or default_label(n)}


async def reassign(
    db: Database, owner: int, rid: uuid.UUID, index: int, speaker: str | None, via: str
) -> dict[str, Any]:
    """Segment `index` (of the stored segments) of the owner's diarized record given to
    `speaker` (a label or a name; None: back to the one found). 404: no such segment;
    409: not diarized; BadSpeaker: no such speaker. Cancellation: reads, then one write."""
    t = await _diarized(db, owner, rid)
    if not 0 <= index < len(t["segments"]):
        raise ApiError(404, "no such segment")
    said = await owner_speakers(db, owner, rid)
    n = None if not speaker else speaker_number(speaker, said.names)
    if n is not None and n not in _found(t) | set(said.choices.values()):
        raise BadSpeaker(f"no speaker {speaker!r} in this recording")
    detail = {"by": "owner", "owner_id": owner, "via": via, "segment": index}
    await choose_speaker(
        db, owner, rid, index, n, {**detail, "speaker": None if n is None else default_label(n)}
    )
    who = None if n is None else said.names.get(n) or default_label(n)
    return {"segment": index, "speaker": who}


@router.put(
    "/v1/recordings/{recording_id}/speakers/{label}",
    summary="Name a speaker",
    response_model=None,
    responses=documented_errors(400, 404, 408, 409, 413),
)
async def put_speaker_name(
    owner: Owner, db: Db, recording_id: str, label: str, body: SpeakerName
) -> JSONResponse:
    rid = await owned(db, owner, recording_id)
    try:
        return JSONResponse(await rename(db, owner, rid, label, body.name, "api"))
    except BadSpeaker as e:
        raise ApiError(422, str(e)) from None


@router.put(
    "/v1/recordings/{recording_id}/segments/{index}/speaker",
    summary="Give a segment to a speaker",
    response_model=None,
    responses=documented_errors(400, 404, 408, 409, 413),
)
async def put_segment_speaker(
    owner: Owner, db: Db, recording_id: str, index: int, body: SegmentSpeaker
) -> JSONResponse:
    rid = await owned(db, owner, recording_id)
    try:
        return JSONResponse(await reassign(db, owner, rid, index, body.speaker, "api"))
    except BadSpeaker as e:
        raise ApiError(422, str(e)) from None
