"""The record page's speaker forms: a name for a speaker, a segment (or the part of one
that one speaker says) given to another; the same changes as the API's
(`transcriber.http.speaker_changes`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from transcriber.http import i18n
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import (
    parse_id,
)
from transcriber.http.page.html import (
    html,
    lang_of,
    mine,
    not_found_page,
)
from transcriber.http.page.record import record_context
from transcriber.http.page.session import (
    CSRF_FIELD,
    Session,
    check_csrf,
)
from transcriber.http.speaker_changes import reassign, rename
from transcriber.records.owner_text import described
from transcriber.records.speaker_names import NAME_MAX, WHOLE, BadSpeaker

router = APIRouter(include_in_schema=False)


def speaker_refused(lang: i18n.Lang, e: BadSpeaker) -> str:
    """Why a speaker's name or a segment's speaker was refused, in the reader's language."""
    if e.taken:
        return lang.gettext("Another speaker already has that name.")
    if e.chars:
        return lang.gettext("The name contains characters it may not hold: %(names)s") % {
            "names": described(e.chars)
        }
    return lang.gettext("A name is one line of plain text, at most %(max)d characters.") % {
        "max": NAME_MAX
    }


async def speakers_form(
    request: Request, db: Db, session: Session, recording_id: str, change: Any
) -> Response:
    """A speakers form of the record page: the change made, then back to the page's
    speakers; refused, the page again with the reason."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(request, session)
    rid = parse_id(recording_id)
    try:
        await change(rid, form)
    except BadSpeaker as e:
        context = await record_context(db, session.owner, card, session.csrf)
        errors = {"speakers": speaker_refused(lang_of(request), e)}
        return html(request, "record.html", 422, **{**context, "errors": errors})
    return RedirectResponse(f"/recordings/{card['id']}#speakers", status_code=303)


def part_of(form: Any) -> int:
    """The form's part of a segment: its first word (field `word`), or WHOLE without
    one; 404 for anything but a word's index."""
    word = str(form.get("word", ""))
    if not word:
        return WHOLE
    if not word.isascii() or not word.isdigit() or len(word) > 6:
        raise ApiError(404, "no such part of the segment")
    return int(word)


@router.post("/recordings/{recording_id}/speakers/{label}")
async def rename_speaker(
    request: Request, db: Db, session: Session, recording_id: str, label: str
) -> Response:
    """The record page's rename form (field `name`; empty: the found label again)."""

    async def change(rid: Any, form: Any) -> None:
        await rename(db, session.owner, rid, label, str(form.get("name", "")), "page")

    return await speakers_form(request, db, session, recording_id, change)


@router.post("/recordings/{recording_id}/segments/{index}/speaker")
async def move_segment(
    request: Request, db: Db, session: Session, recording_id: str, index: int
) -> Response:
    """The record page's speaker of one segment (field `speaker`: a label), or of the part
    of it from word `word` (a field the page sends where the segment is split)."""

    async def change(rid: Any, form: Any) -> None:
        speaker = str(form.get("speaker", "")) or None
        await reassign(db, session.owner, rid, index, speaker, "page", part_of(form))

    return await speakers_form(request, db, session, recording_id, change)
