"""The owner's settings and voices on the page: `/settings` (the defaults an upload that
does not say uses, and whether voices are remembered), `/voices` (the library: each
voice, and deleting one), and "remember this voice" in a record's speaker list. The same
changes as the API's `/v1/settings` and `/v1/voices`."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from transcriber.http import i18n
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import parse_id
from transcriber.http.owner_voices import remember_speaker
from transcriber.http.page.html import html, lang_of, mine, not_found_page
from transcriber.http.page.session import CSRF_FIELD, Session, check_csrf
from transcriber.languages import NAMES
from transcriber.records.settings import BadSettings, change_settings, owner_settings
from transcriber.records.speaker_names import NAME_MAX
from transcriber.records.voices import BadVoice, NotRemembering, delete_voice, list_voices
from transcriber.subtitles import profiles

router = APIRouter(include_in_schema=False)

FORM_FIELDS = ("language", "speakers", "vocabulary", "subtitle_profile", "remember_voices")


def settings_refused(lang: i18n.Lang, e: BadSettings) -> str:
    """Why a setting was refused, in the reader's language (the field's name, then the
    domain's reason, which names the values it takes)."""
    words = {
        "language": lang.gettext("Language"),
        "speakers": lang.gettext("Speakers"),
        "vocabulary": lang.gettext("Vocabulary"),
        "subtitle_profile": lang.gettext("Subtitle profile"),
        "remember_voices": lang.gettext("Remember voices"),
    }
    return f"{words.get(e.field, e.field)}: {e}"


async def _context(db: Db, owner: int, csrf: str) -> dict[str, Any]:
    return {
        "settings": (await owner_settings(db, owner)).to_json(),
        "languages_known": sorted(NAMES.items()),
        "subtitle_profiles": profiles.NAMES,
        "voices": await list_voices(db, owner),
        "csrf": csrf,
        "errors": {},
        "saved": False,
        "deleted": False,
    }


@router.get("/settings")
async def settings_page(request: Request, db: Db, session: Session) -> HTMLResponse:
    context = await _context(db, session.owner, session.csrf)
    context["saved"] = bool(request.query_params.get("saved"))
    return html(request, "settings.html", **context)


@router.post("/settings")
async def save_settings(request: Request, db: Db, session: Session) -> Response:
    """The settings form: every field at once (an empty one clears it; the box unticked
    turns remembering voices off). Refused: the form again with the reason."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    vocabulary = str(form.get("vocabulary", "")).splitlines()
    given = {
        "language": str(form.get("language", "")) or None,
        "speakers": str(form.get("speakers", "")).strip() or None,
        "vocabulary": vocabulary,
        "subtitle_profile": str(form.get("subtitle_profile", "")) or None,
        "remember_voices": form.get("remember_voices") == "on",
    }
    try:
        await change_settings(db, session.owner, given, profiles.NAMES)
    except BadSettings as e:
        context = await _context(db, session.owner, session.csrf)
        context["errors"] = {"settings": settings_refused(lang_of(request), e)}
        return html(request, "settings.html", 422, **context)
    return RedirectResponse("/settings?saved=1", status_code=303)


@router.get("/voices")
async def voices_page(request: Request, db: Db, session: Session) -> HTMLResponse:
    context = await _context(db, session.owner, session.csrf)
    context["deleted"] = bool(request.query_params.get("deleted"))
    return html(request, "voices.html", **context)


@router.post("/voices/{voice_id}/delete")
async def delete_one_voice(request: Request, db: Db, session: Session, voice_id: str) -> Response:
    """A voice gone, its vector and the names it gave with it; back to the list."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    vid = parse_id(voice_id)
    if vid is None or not await delete_voice(db, session.owner, vid):
        return not_found_page(request, session)
    return RedirectResponse("/voices?deleted=1", status_code=303)


@router.post("/recordings/{recording_id}/speakers/{label}/remember")
async def remember_voice(
    request: Request, db: Db, config: Settings, session: Session, recording_id: str, label: str
) -> Response:
    """ "Remember this voice": the speaker kept as the voice of the name the form gives
    (field `name`; empty: the speaker's name on the page). Back to the record's
    speakers; refused, to the voices page with the reason."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(request, session)
    name = str(form.get("name", ""))
    lang = lang_of(request)
    try:
        await remember_speaker(db, config, session.owner, uuid.UUID(card["id"]), label, name)
    except NotRemembering:
        error = lang.gettext("Turn on remembering voices in your settings first.")
    except BadVoice:
        error = lang.gettext(
            "A voice's name is a person's name: one line of plain text, at most %(max)d "
            "characters, not a speaker's label."
        ) % {"max": NAME_MAX}
    except ApiError as e:
        if e.status == 404:
            return not_found_page(request, session)
        error = lang.gettext("This speaker's voice cannot be remembered.")
    else:
        return RedirectResponse(f"/recordings/{card['id']}?remembered=1#speakers", 303)
    context = await _context(db, session.owner, session.csrf)
    context["errors"] = {"voices": error}
    return html(request, "voices.html", 409, **context)
