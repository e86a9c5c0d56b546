"""The shared view at `/s/{secret}`, opened without signing in: the player, the
transcript (the owner's corrections applied, with speakers when there are), the
downloads — and nothing else: no edit, no other record.

The shared view is never indexed (`X-Robots-Tag: noindex` and its meta twin) and never
tells the next site where it came from (`Referrer-Policy: no-referrer`): its address is
the capability. An unknown, revoked or expired link, one of a deleted record, or one of
an owner whose token is revoked, answers the same 404 (sql/shares.sql `share_find`).

A link gives what its owner shows, always: the corrected text (there is no `machine`
download here, and no recognizer's text or words under a corrected segment), with the
headers of the owner's own downloads and audio (a sandboxed CSP; nothing a cache keeps,
so nothing is read from one after the link is revoked).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from transcriber.db.database import Database
from transcriber.http.deps import Db, Settings
from transcriber.http.downloads import attachment, transcript_response
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import (
    owned_card,
)
from transcriber.http.page.audio import audio_response, open_audio
from transcriber.http.page.html import (
    SECURITY_HEADERS,
    head_words,
    html,
    lang_of,
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
from transcriber.transcripts import owner_transcript, shown_to_others

router = APIRouter(include_in_schema=False)


_SHARE_PATH = re.compile(r"/s/[A-Za-z0-9_-]{20,100}(?:/audio|/transcript\.[a-z]+)?")


LINK_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
}
"""What every answer under a link carries besides its own kind's headers."""

SHARED_HEADERS = {**SECURITY_HEADERS, **LINK_HEADERS}
"""The shared view's page (and its refusal): the page's headers, and the link's."""

SHARED_AUDIO_CACHE = "no-store"
"""The shared audio is never stored by the browser: a link is revoked at once, and a
copy kept would still play. `no-store` rather than `private, no-cache`: revalidating
would need validators this route does not keep, and `no-cache` still writes the bytes
to the disk cache. A player seeking asks for ranges (206) each time, which is all
`no-store` costs."""


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


REFUSED_ADDRESS = SHARE_PREFIX + "this-link-is-not-valid"
"""Where the refusal's language switch comes back to: a link no secret can be (a secret
is 43 characters), so it is refused again, in the language picked. Not the address
asked for: every refused link answers the very same page, which tells nothing of why."""


def refused(request: Request) -> HTMLResponse:
    return shared_page(request, "share_gone.html", 404, switch_back=REFUSED_ADDRESS)


async def shared_context(db: Database, shared: Shared, secret: str) -> dict[str, Any]:
    """What the shared view shows: the card, the corrected segments (with `speaker`
    when a segment has one), the downloads. Cancellation: plain reads."""
    card = await owned_card(db, shared.owner, shared.recording_id)
    segments: list[dict[str, Any]] = []
    if card["done"]:
        t = await transcript(db, shared.owner, shared.recording_id)
        # Corrected, and with the owner's names of the speakers, as every rendering.
        # Not the names the owner's voices gave: nothing of a voice is shown to others.
        _, segments, _ = await owner_transcript(
            db, shared.owner, shared.recording_id, t, voices=False
        )
        segments = shown_to_others(segments)
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
    response.headers.update(LINK_HEADERS)
    response.headers["Cache-Control"] = SHARED_AUDIO_CACHE
    return response


@router.get("/s/{secret}/transcript.{ext}", include_in_schema=False)
async def shared_download(
    request: Request,
    db: Db,
    secret: str,
    ext: str,
    profile: Annotated[str | None, Query()] = None,
    report: Annotated[bool, Query()] = False,
) -> Response:
    """The corrected transcript, always: a link shares what its owner shows, so the
    recognizer's text behind a correction is not offered (`machine` is not read, and a
    corrected segment has neither `machine_text` nor the recognizer's `words`). SRT and
    VTT by the subtitle `profile`, or the checker's `report` of that file."""
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
        shared=True,
        profile=profile,
        report=report,
        head_words=head_words(lang_of(request)),
    )
    if response.status_code != 200:
        return refused(request)
    response.headers.update(LINK_HEADERS)  # the download's own CSP and caching stay
    if report:
        return response
    # Named as the owner's downloads are: after the title the link's page shows.
    card = await owned_card(db, shared.owner, shared.recording_id)
    response.headers["Content-Disposition"] = attachment(
        card["title"] or (card["filename"] or "").rsplit(".", 1)[0],
        str(shared.recording_id),
        f".{ext}",
    )
    return response
