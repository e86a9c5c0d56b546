"""Read-only links to one record through the API (`/v1/recordings/{id}/shares`): make,
list and revoke them. The record page's forms do the same (`page.shares`), and the
page's share view (`page.shared_view`) is what a link opens."""

import datetime as dt
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from transcriber.http.api.shapes import NewShare
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError, documented_errors, not_found
from transcriber.http.owned_cards import owned, parse_id
from transcriber.http.share_links import expiry, link_of
from transcriber.http.uploads import check_text
from transcriber.records.shares import NOTE_MAX, add_share, revoke_share, shares_of

router = APIRouter()


def share_json(row: dict[str, Any]) -> dict[str, Any]:
    def iso(t: dt.datetime | None) -> str | None:
        return None if t is None else t.isoformat()

    return {
        "id": str(row["id"]),
        "note": row["note"],
        "created_at": iso(row["created_at"]),
        "expires_at": iso(row["expires_at"]),
        "revoked_at": iso(row["revoked_at"]),
        "opened": row["opened"],
        "last_opened_at": iso(row["last_opened_at"]),
    }


# --- the owner's API -------------------------------------------------------------------


@router.post(
    "/v1/recordings/{recording_id}/shares",
    status_code=201,
    summary="Make a read-only link",
    response_model=None,
    responses={
        201: {"description": "the link; its `url` is shown this once"},
        **documented_errors(400, 404, 408, 413),
    },
)
async def make_share(
    request: Request, owner: Owner, db: Db, recording_id: str, body: NewShare
) -> JSONResponse:
    rid = await owned(db, owner, recording_id)
    try:
        note = check_text(body.note.strip(), "the note", NOTE_MAX)
    except ValueError as e:
        raise ApiError(400, str(e)) from None
    made = await add_share(db, owner, rid, note=note, expires_at=expiry(body.expires_in_days))
    if made is None:  # deleted meanwhile
        raise not_found()
    secret, row = made
    return JSONResponse({**share_json(row), "url": link_of(request, secret)}, status_code=201)


@router.get(
    "/v1/recordings/{recording_id}/shares",
    summary="The record's read-only links",
    response_model=None,
    responses={200: {"description": "the links, oldest first"}, **documented_errors(404)},
)
async def list_shares(owner: Owner, db: Db, recording_id: str) -> JSONResponse:
    rid = await owned(db, owner, recording_id)
    return JSONResponse({"items": [share_json(s) for s in await shares_of(db, owner, rid)]})


@router.delete(
    "/v1/recordings/{recording_id}/shares/{share_id}",
    status_code=204,
    summary="Revoke a read-only link",
    response_model=None,
    responses={204: {"description": "revoked"}, **documented_errors(404)},
)
async def revoke(owner: Owner, db: Db, recording_id: str, share_id: str) -> Response:
    rid, sid = parse_id(recording_id), parse_id(share_id)
    if rid is None or sid is None or not await revoke_share(db, owner, rid, sid):
        raise not_found()
    return Response(status_code=204)


# --- the record page's form ------------------------------------------------------------


# --- the shared view -------------------------------------------------------------------
