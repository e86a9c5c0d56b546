"""The shared view at `/s/{secret}`, opened without signing in: the player, the
transcript (the owner's corrections applied, with speakers when there are), the
downloads — and nothing else: no edit, no other record.

The shared view is never indexed (`X-Robots-Tag: noindex` and its meta twin) and never
tells the next site where it came from (`Referrer-Policy: no-referrer`): its address is
the capability. An unknown, revoked or expired link, or one of a deleted record, answers
the same 404.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from transcriber.db.database import Database
from transcriber.http.deps import Db, Settings
from transcriber.http.downloads import owner_transcript, transcript_response
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import (
    owned_card,
)
from transcriber.http.page.audio import audio_response, open_audio
from transcriber.http.page.html import (
    SECURITY_HEADERS,
    html,
)
from transcriber.http.page.record import DOWNLOADS
from transcriber.http.share_links import SHARE_PREFIX
from transcriber.records.archive import (
    transcript,
)
from transcriber.records.shares import (
    Shared,
    open_share,
)
from transcriber.subtitles.profiles import NAMES as SUBTITLE_PROFILES

router = APIRouter(include_in_schema=False)


_SHARE_PATH = re.compile(r"/s/[A-Za-z0-9_-]{20,100}(?:/audio|/transcript\.[a-z]+)?")


SHARED_HEADERS = {
    **SECURITY_HEADERS,
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
}


def is_share_path(path: str) -> bool:
    """A path of the shared view: public (the link is the capability), so a guard
    asking for the API's bearer token must let it through."""
    return _SHARE_PATH.fullmatch(path) is not None


def shared_page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Template `name` of the shared view in the reader's language (chosen as on the
    owner's pages: the language cookie, else `Accept-Language`), with the shared view's
    headers."""
    response = html(request, name, status, **context)
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
        "downloads": list(DOWNLOADS),
        "subtitle_profiles": list(SUBTITLE_PROFILES),
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
    request: Request,
    db: Db,
    secret: str,
    ext: str,
    machine: Annotated[bool, Query()] = False,
    profile: Annotated[str | None, Query()] = None,
    report: Annotated[bool, Query()] = False,
) -> Response:
    shared = await open_share(db, secret, count=False)
    if shared is None or ext not in DOWNLOADS:
        return refused(request)
    # An unknown profile answers 422 naming the known ones, to the link's holder only:
    # the link has been checked above.
    response = await transcript_response(
        db,
        shared.owner,
        shared.recording_id,
        DOWNLOADS[ext],
        machine=machine,
        profile=profile,
        report=report,
    )
    if response.status_code != 200:
        return refused(request)
    response.headers.update(SHARED_HEADERS)
    if report:
        return response
    name = f"{shared.recording_id}{'.machine' if machine else ''}.{ext}"
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
