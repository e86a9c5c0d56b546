"""The owner's text of one segment, through the API (`PUT /v1/recordings/{id}/segments/
{index}`): the rules and the journal of the page's correction, which calls the same
`transcriber.records.corrections.correct_segment`."""

import uuid

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from transcriber.http.api.shapes import Card, CorrectedSegment, SegmentText
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError, documented_errors
from transcriber.http.owned_cards import owned_card
from transcriber.records.archive import transcript
from transcriber.records.corrections import BadCorrection, NoSegment, correct_segment

router = APIRouter()


@router.put(
    "/v1/recordings/{recording_id}/segments/{index}",
    summary="Correct a segment's text",
    description=(
        "The owner's text for segment `index` of the transcript (0-based, as in the "
        "JSON transcript's `segments`), shown and exported instead of the recognizer's, "
        "which stays stored; an empty or null `text` (or the recognizer's own) restores "
        "it. Journaled as `corrected`, as the page's correction is."
    ),
    response_model=CorrectedSegment,
    responses={
        409: {"model": Card, "description": "not transcribed (yet): the card"},
        **documented_errors(400, 404, 408, 413, 422),
    },
)
async def put_segment_text(
    owner: Owner, db: Db, recording_id: str, index: int, body: SegmentText
) -> JSONResponse:
    card = await owned_card(db, owner, recording_id)
    rid = uuid.UUID(card["id"])
    t = await transcript(db, owner, rid) if card["readable"] else None
    if t is None:
        return JSONResponse(card, status_code=409)
    detail = {"by": "owner", "owner_id": owner, "via": "api", "segment": index}
    try:
        shown = await correct_segment(db, owner, rid, t["segments"], index, body.text, detail)
    except (NoSegment, BadCorrection) as e:
        raise ApiError(422, str(e)) from None
    return JSONResponse({"segment": index, **shown})
