"""Read-only links to one record: the owner's API (`/v1/recordings/{id}/shares`) and the
record page's form make, list and revoke them; `/s/{secret}` is the shared view, opened
without signing in — the player, the transcript (the owner's corrections applied, with
speakers when there are), the downloads — and nothing else: no edit, no other record.

The shared view is never indexed (`X-Robots-Tag: noindex` and its meta twin) and never
tells the next site where it came from (`Referrer-Policy: no-referrer`): its address is
the capability. An unknown, revoked or expired link, or one of a deleted record, answers
the same 404.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from transcriber.db.database import Database
from transcriber.http import page
from transcriber.http.auth import Owner
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError, documented_errors, not_found
from transcriber.http.owned_cards import owned, owned_card, parse_id
from transcriber.http.page_audio import audio_response, open_audio
from transcriber.http.page_sign_in import CSRF_FIELD, Session, check_csrf
from transcriber.http.transcripts import owner_transcript, transcript_response
from transcriber.http.uploads import check_text
from transcriber.records.archive import transcript
from transcriber.records.shares import (
    NOTE_MAX,
    Shared,
    add_share,
    open_share,
    revoke_share,
    shares_of,
)

MAX_DAYS = 3650.0
SHARE_PREFIX = page.SHARE_PREFIX
link_of = page.link_of
_SHARE_PATH = re.compile(r"/s/[A-Za-z0-9_-]{20,100}(?:/audio|/transcript\.[a-z]+)?")

SHARED_HEADERS = {
    **page.SECURITY_HEADERS,
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
}

router = APIRouter()


def is_share_path(path: str) -> bool:
    """A path of the shared view: public (the link is the capability), so a guard
    asking for the API's bearer token must let it through."""
    return _SHARE_PATH.fullmatch(path) is not None


class NewShare(BaseModel):
    """A new link: a note (who it is for), and how many days it lasts (none: until
    revoked)."""

    model_config = ConfigDict(extra="forbid")
    note: str = Field(default="", max_length=NOTE_MAX)
    expires_in_days: float | None = Field(default=None, gt=0, le=MAX_DAYS)


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


def expiry(days: float | None) -> dt.datetime | None:
    return None if days is None else dt.datetime.now(dt.UTC) + dt.timedelta(days=days)


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


@router.post("/recordings/{recording_id}/shares", include_in_schema=False)
async def page_make_share(
    request: Request, db: Db, session: Session, recording_id: str
) -> Response:
    """A new link from the record page's form (`note`, `days`: empty for none), then a
    redirect (303) to the record page, which shows the new link this once: reloading
    that page reads it again and makes no second link."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await page.mine(db, session.owner, recording_id)
    if card is None:
        return page.not_found_page(request, session)
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
        return page.not_found_page(request, session)
    response = RedirectResponse(f"{page.record_path(card['id'])}#shares", status_code=303)
    page.carry_new_share(response, request, card["id"], made[0])
    return response


@router.post("/recordings/{recording_id}/shares/{share_id}/revoke", include_in_schema=False)
async def page_revoke(
    request: Request, db: Db, session: Session, recording_id: str, share_id: str
) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    rid, sid = parse_id(recording_id), parse_id(share_id)
    if rid is None or sid is None or not await revoke_share(db, session.owner, rid, sid):
        return page.not_found_page(request, session)
    return RedirectResponse(f"/recordings/{rid}#shares", status_code=303)


# --- the shared view -------------------------------------------------------------------


def shared_page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Template `name` of the shared view in the reader's language (chosen as on the
    owner's pages: the language cookie, else `Accept-Language`), with the shared view's
    headers."""
    response = page.html(request, name, status, **context)
    response.headers.update(SHARED_HEADERS)
    return response


def refused(request: Request) -> HTMLResponse:
    return shared_page(request, "share_gone.html", 404)


async def shared_context(db: Database, shared: Shared, secret: str) -> dict[str, Any]:
    """What the shared view shows: the card, the corrected segments (with `speaker`
    when a segment has one), the downloads. Cancellation: plain reads."""
    card = await owned_card(db, shared.owner, shared.recording_id)
    segments: list[dict[str, Any]] = []
    if card["done"]:
        t = await transcript(db, shared.owner, shared.recording_id)
        # Corrected, and with the owner's names of the speakers, as every rendering.
        _, segments, _ = await owner_transcript(db, shared.owner, shared.recording_id, t)
    return {
        "card": card,
        "segments": segments,
        "base": SHARE_PREFIX + secret,
        "downloads": list(page.DOWNLOADS),
        "has_audio": card["duration_s"] is not None,
    }


@router.get("/s/{secret}", include_in_schema=False)
async def shared_view(request: Request, db: Db, secret: str) -> HTMLResponse:
    shared = await open_share(db, secret, count=True)
    if shared is None:
        return refused(request)
    try:
        context = await shared_context(db, shared, secret)
    except ApiError:  # deleted between the two reads
        return refused(request)
    return shared_page(request, "share.html", **context)


@router.api_route("/s/{secret}/audio", methods=["GET", "HEAD"], include_in_schema=False)
async def shared_audio(request: Request, db: Db, config: Settings, secret: str) -> Response:
    shared = await open_share(db, secret, count=False)
    audio = (
        None if shared is None else await open_audio(db, config, shared.owner, shared.recording_id)
    )
    if audio is None:
        return refused(request)
    response = audio_response(request, audio)
    response.headers.update({k: v for k, v in SHARED_HEADERS.items() if k != "Cache-Control"})
    return response


@router.get("/s/{secret}/transcript.{ext}", include_in_schema=False)
async def shared_download(
    request: Request, db: Db, secret: str, ext: str, machine: Annotated[bool, Query()] = False
) -> Response:
    shared = await open_share(db, secret, count=False)
    if shared is None or ext not in page.DOWNLOADS:
        return refused(request)
    response = await transcript_response(
        db, shared.owner, shared.recording_id, page.DOWNLOADS[ext], machine=machine
    )
    if response.status_code != 200:
        return refused(request)
    response.headers.update(SHARED_HEADERS)
    name = f"{shared.recording_id}{'.machine' if machine else ''}.{ext}"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
