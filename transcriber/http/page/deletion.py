"""Deleting from the page: the records selected in the list, or the one of a record
page, after the page asked the owner to confirm."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from transcriber.http.deps import Db, Settings
from transcriber.http.owned_cards import (
    parse_id,
)
from transcriber.http.page.html import (
    not_found_page,
)
from transcriber.http.page.recordings import PAGE_SIZE
from transcriber.http.page.session import (
    CSRF_FIELD,
    Session,
    check_csrf,
)
from transcriber.records.deletion import delete_own
from transcriber.storage.configured import blobs_of

router = APIRouter(include_in_schema=False)


@router.post("/delete")
async def delete_selected(request: Request, db: Db, config: Settings, session: Session) -> Response:
    """The records selected in the list (form fields `id`), after the page asked the
    owner to confirm; ids not theirs are passed over. Back to the list, which says how
    many went."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    ids = [rid for v in form.getlist("id") if (rid := parse_id(str(v))) is not None]
    gone = (
        await delete_own(db, blobs_of(config), session.owner, ids[: PAGE_SIZE * 4], via="page")
        if ids
        else []
    )
    return deleted(len(gone))


@router.post("/recordings/{recording_id}/delete")
async def delete_one(
    request: Request, db: Db, config: Settings, session: Session, recording_id: str
) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    rid = parse_id(recording_id)
    gone = (
        []
        if rid is None
        else await delete_own(db, blobs_of(config), session.owner, [rid], via="page")
    )
    if not gone:
        return not_found_page(request, session)
    return deleted(len(gone))


def deleted(n: int) -> Response:
    """Back to the list, which says that `n` recordings were deleted."""
    return RedirectResponse(f"/?deleted={n}", status_code=303)
