"""A record's journal, page by page."""

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from transcriber.http.api.shapes import EventPage
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.errors import documented_errors
from transcriber.http.owned_cards import owned
from transcriber.records.archive import journal_page
from transcriber.stops import owner_detail

router = APIRouter()


@router.get(
    "/v1/recordings/{recording_id}/events",
    summary="The record's journal",
    response_model=None,
    responses={200: {"model": EventPage}, **documented_errors(404)},
)
async def events(
    owner: Owner,
    db: Db,
    recording_id: str,
    after: Annotated[
        int,
        Query(
            ge=0,
            le=2**62,
            description="the number of the last event the client has (0: from the first);"
            " an event shows once every transaction that began before it has ended, so"
            " paging by `after` gives each event once",
        ),
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> JSONResponse:
    rid = await owned(db, owner, recording_id)
    rows = await journal_page(db, owner, rid, after, limit)
    found = [
        {
            "id": e["seq"],
            "at": e["at"].isoformat(),
            "origin": e["origin"],
            "kind": e["kind"],
            "milestone": e["milestone"],
            "detail": owner_detail(e["detail"]),
        }
        for e in rows
    ]
    return JSONResponse(
        {"events": found, "next_after": found[-1]["id"] if len(found) == limit else None}
    )
