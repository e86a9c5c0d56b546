"""The record page's share forms: a new read-only link (shown once, after a redirect)
and a link revoked. The view a link opens is `shared_view`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from transcriber.db.database import Database
from transcriber.http.deps import Db
from transcriber.http.owned_cards import (
    parse_id,
)
from transcriber.http.page.html import (
    mine,
    not_found_page,
    record_path,
)
from transcriber.http.page.session import (
    CSRF_FIELD,
    Session,
    check_csrf,
    is_https,
)
from transcriber.http.share_links import MAX_DAYS, expiry, link_of
from transcriber.http.uploads import check_text
from transcriber.records.shares import (
    NOTE_MAX,
    add_share,
    open_share,
    revoke_share,
)

router = APIRouter(include_in_schema=False)


NEW_SHARE_COOKIE = "transcriber_new_share"
"""Carries a link just made from the form's POST to the record page's GET it redirects
to (Post/Redirect/Get: a reload then reads the page again instead of making another
link). Scoped to that record's page, HttpOnly, SameSite=Strict, short-lived, and read
once; the page shows it only while it is a live link of that very record of the
signed-in owner, so a forged one shows nothing it would not anyway."""


NEW_SHARE_MAX_AGE_S = 300


def carry_new_share(response: Response, request: Request, recording_id: Any, secret: str) -> None:
    response.set_cookie(
        NEW_SHARE_COOKIE,
        secret,
        max_age=NEW_SHARE_MAX_AGE_S,
        path=record_path(recording_id),
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )


async def new_share_of(request: Request, db: Database, owner: int, recording_id: Any) -> str | None:
    """The link the form just made for this record, carried by NEW_SHARE_COOKIE, if it
    is still a live link of the owner's record. Cancellation: a plain read."""
    secret = request.cookies.get(NEW_SHARE_COOKIE)
    if not secret or len(secret) > 200:
        return None
    shared = await open_share(db, secret, count=False)
    if shared is None or (shared.owner, str(shared.recording_id)) != (owner, str(recording_id)):
        return None
    return link_of(request, secret)


@router.post("/recordings/{recording_id}/shares", include_in_schema=False)
async def page_make_share(
    request: Request, db: Db, session: Session, recording_id: str
) -> Response:
    """A new link from the record page's form (`note`, `days`: empty for none), then a
    redirect (303) to the record page, which shows the new link this once: reloading
    that page reads it again and makes no second link."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(request, session)
    note = str(form.get("note", "")).strip()[:NOTE_MAX]
    try:
        days = float(str(form.get("days", "")).strip() or "nan")
    except ValueError:
        days = float("nan")
    days_or_none = days if 0 < days <= MAX_DAYS else None
    try:
        check_text(note, "the note", NOTE_MAX)
    except ValueError:
        note = ""
    made = await add_share(
        db, session.owner, card["id"], note=note, expires_at=expiry(days_or_none)
    )
    if made is None:
        return not_found_page(request, session)
    response = RedirectResponse(f"{record_path(card['id'])}#shares", status_code=303)
    carry_new_share(response, request, card["id"], made[0])
    return response


@router.post("/recordings/{recording_id}/shares/{share_id}/revoke", include_in_schema=False)
async def page_revoke(
    request: Request, db: Db, session: Session, recording_id: str, share_id: str
) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    rid, sid = parse_id(recording_id), parse_id(share_id)
    if rid is None or sid is None or not await revoke_share(db, session.owner, rid, sid):
        return not_found_page(request, session)
    return RedirectResponse(f"/recordings/{rid}#shares", status_code=303)
