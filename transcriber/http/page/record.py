"""The record page at `/recordings/{id}`: the card, the transcript against the player,
who spoke, the journal, the share links; its audio, its waveform and its downloads."""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from transcriber.db.database import Database
from transcriber.http.deps import Db, Settings
from transcriber.http.downloads import attachment, transcript_response
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import (
    owned_card,
    parse_id,
)
from transcriber.http.page.audio import audio_response, open_audio, peaks
from transcriber.http.page.html import (
    head_words,
    html,
    lang_of,
    mine,
    not_found_page,
    record_path,
)
from transcriber.http.page.new_share import NEW_SHARE_COOKIE, new_share_of
from transcriber.http.page.session import (
    PageOwner,
    Session,
    is_https,
)
from transcriber.records.archive import (
    journal_page,
    transcript,
)
from transcriber.records.shares import (
    shares_of,
)
from transcriber.stops import owner_detail
from transcriber.subtitles.profiles import NAMES as SUBTITLE_PROFILES
from transcriber.transcripts import owner_parts

router = APIRouter(include_in_schema=False)

JOURNAL_SHOWN = 500
"""Events of the record's journal its page shows."""


# Downloads by extension, and the transcript route's kind for each.
DOWNLOADS = {
    "txt": "text",
    "srt": "srt",
    "vtt": "vtt",
    "json": "json",
    "md": "markdown",
    "docx": "docx",
}


async def record_context(
    db: Database, owner: int, card: dict[str, Any], csrf: str
) -> dict[str, Any]:
    """What the record page shows of the owner's record `card`. Cancellation: plain
    reads."""
    segments: list[dict[str, Any]] = []
    speakers: list[dict[str, Any]] = []
    if card["done"]:
        t = await transcript(db, owner, card["id"])
        if t is not None:
            # The segments as the exports show them (split where the speakers change),
            # each with its address: a split segment's part is moved and corrected as a
            # part (its first word), a whole one as the segment.
            _, shown, labels = await owner_parts(db, owner, card["id"], t)
            speakers = speaker_rows(labels)
            number = {s["name"]: s["n"] for s in speakers}
            segments = [
                {
                    **p.shown,
                    "speaker_n": number.get(p.shown.get("speaker")),
                    "segment": p.segment,
                    "word": None if p.whole else p.word,
                }
                for p in shown
            ]
    # Numbered within the record, as `/events` numbers them; the operator's detail left out.
    journal = [
        {**e, "detail": owner_detail(e["detail"])}
        for e in await journal_page(db, owner, card["id"], 0, JOURNAL_SHOWN)
    ]
    return {
        "card": card,
        "segments": segments,
        "speakers": speakers,
        "journal": journal,
        "csrf": csrf,
        "downloads": list(DOWNLOADS),
        "subtitle_profiles": list(SUBTITLE_PROFILES),
        "has_audio": card["duration_s"] is not None,
        "errors": {},
        "values": None,
        "shares": await shares_of(db, owner, card["id"]),
        "new_share": None,
        "share_values": None,
        # "Transcribe again with…" (again.py): what the form shows, and its attempt.
        "again_values": None,
        "attempt": secrets.token_urlsafe(18),
    }


SPEAKER_COLOURS = 8
"""Distinct colours of the page's speakers (page.css .spk-0 … .spk-7), then again."""


def speaker_rows(labels: dict[str, str]) -> list[dict[str, Any]]:
    """The record's speakers for the page, by number: label, name shown, colour."""
    rows = []
    for name, label in labels.items():
        n = int(label.rsplit(" ", 1)[1]) - 1
        rows.append({"n": n, "label": label, "name": name, "colour": n % SPEAKER_COLOURS})
    return sorted(rows, key=lambda r: r["n"])


@router.get("/recordings/{recording_id}")
async def record_page(
    request: Request,
    db: Db,
    session: Session,
    recording_id: str,
    fragment: Annotated[str | None, Query(max_length=20)] = None,
) -> HTMLResponse:
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(request, session)
    context = await record_context(db, session.owner, card, session.csrf)
    if fragment == "live":
        return html(request, "_record_live.html", **context)
    if NEW_SHARE_COOKIE not in request.cookies:
        return html(request, "record.html", **context)
    # The link the form made, shown this once: read, then the cookie is gone.
    new_share = await new_share_of(request, db, session.owner, card["id"])
    response = html(request, "record.html", **{**context, "new_share": new_share})
    response.delete_cookie(
        NEW_SHARE_COOKIE,
        path=record_path(card["id"]),
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )
    return response


@router.api_route("/recordings/{recording_id}/audio", methods=["GET", "HEAD"])
async def record_audio(
    request: Request, db: Db, config: Settings, owner: PageOwner, recording_id: str
) -> Response:
    rid = parse_id(recording_id)
    audio = None if rid is None else await open_audio(db, config, owner, rid)
    if audio is None:
        raise ApiError(404, "no such audio")
    return audio_response(request, audio)


@router.get("/recordings/{recording_id}/peaks.json")
async def record_peaks(db: Db, config: Settings, owner: PageOwner, recording_id: str) -> Response:
    """The waveform overview of the record's normalized audio (`audio.peaks`)."""
    rid = parse_id(recording_id)
    audio = None if rid is None else await open_audio(db, config, owner, rid)
    found = None if audio is None else await peaks(audio, (owner, rid, audio.size))
    if found is None:
        raise ApiError(404, "no such audio")
    return JSONResponse(found, headers={"Cache-Control": "private, max-age=86400"})


@router.get("/recordings/{recording_id}/transcript.{ext}")
async def download(
    request: Request,
    db: Db,
    owner: PageOwner,
    recording_id: str,
    ext: str,
    machine: Annotated[bool, Query()] = False,
    profile: Annotated[str | None, Query()] = None,
    report: Annotated[bool, Query()] = False,
) -> Response:
    if ext not in DOWNLOADS:
        raise ApiError(404, "no such recording")
    response = await transcript_response(
        db,
        owner,
        recording_id,
        DOWNLOADS[ext],
        machine=machine,
        profile=profile,
        report=report,
        head_words=head_words(lang_of(request)),
    )
    if response.status_code == 200 and not report:
        # Named after the title, else the uploaded file's name without its extension.
        card = await owned_card(db, owner, recording_id)
        response.headers["Content-Disposition"] = attachment(
            card["title"] or (card["filename"] or "").rsplit(".", 1)[0],
            str(card["id"]),
            f"{'.machine' if machine else ''}.{ext}",
        )
    return response
