"""The page's upload: one file of the upload form, sent by the page's script, taken in
as the API's are (`transcriber.http.accepting`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from transcriber.http.accepting import store_upload
from transcriber.http.deps import Db, Settings
from transcriber.http.owned_cards import (
    owned_card,
)
from transcriber.http.page.session import (
    ChangingSession,
)

router = APIRouter(include_in_schema=False)


@router.post("/upload")
async def upload(
    request: Request, db: Db, config: Settings, session: ChangingSession
) -> JSONResponse:
    """One file of the upload form, sent by the page's script: `multipart/form-data`
    with `file`, `title`, `language`, `speakers`, like the API's upload. 201 with the
    card (200 with the earlier record's, for the same upload again), or the reason it
    was refused in words (`{"error": ...}`)."""
    # The session (cookie, origin and anti-forgery header) was checked by the
    # dependency before anything of the body is read; the API's bounds apply as to any
    # upload (429, 507).
    got = await store_upload(request, db, config, session.owner, None, via="page")
    card = await owned_card(db, session.owner, got.id)
    # 200: the same file with the same fields was uploaded before, and that record is
    # named (the intake never makes a second of the same request): the page says so.
    return JSONResponse(
        {**card, "page": f"/recordings/{got.id}"}, status_code=201 if got.created else 200
    )
