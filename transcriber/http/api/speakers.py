"""The owner's say on who spoke, through the API: a name for a speaker diarization found
(`PUT /v1/recordings/{id}/speakers/{label}`) and a segment moved to another speaker
(`PUT /v1/recordings/{id}/segments/{index}/speaker`). The page's forms call the same
`rename` and `reassign` (`transcriber.http.speaker_changes`)."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from transcriber.http.api.shapes import SegmentSpeaker, SpeakerName
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError, documented_errors
from transcriber.http.owned_cards import owned
from transcriber.http.speaker_changes import reassign, rename
from transcriber.records.speaker_names import BadSpeaker

router = APIRouter()


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
