"""Transcribing a record again from its page: a finished record (transcribed, or stopped
for a reason other options may cure) with another language, speakers or task becomes a
new record of the same file (`transcriber.http.transcribing_again`), and the owner is
taken to it. Refused, the record page again with the reason next to the form."""

from __future__ import annotations

import re
import secrets

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError
from transcriber.http.page.html import (
    html,
    lang_of,
    language_code,
    mine,
    not_found_page,
    record_path,
)
from transcriber.http.page.record import record_context
from transcriber.http.page.session import CSRF_FIELD, Session, check_csrf
from transcriber.http.transcribing_again import Change, again
from transcriber.intake import Refused
from transcriber.languages import UnknownLanguage, language_hint
from transcriber.options import TASKS
from transcriber.speaker_options import BadSpeakers, SpeakersOption

router = APIRouter(include_in_schema=False)

ATTEMPT = re.compile(r"[A-Za-z0-9_-]{16,64}")
"""The form's `attempt`: a random value per form shown, so a second press of the same
form (or a resent POST) names the record the first one made."""


def new_attempt() -> str:
    return secrets.token_urlsafe(18)


@router.post("/recordings/{recording_id}/again")
async def transcribe_again(
    request: Request, db: Db, config: Settings, session: Session, recording_id: str
) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(request, session)
    lang = lang_of(request)
    _ = lang.gettext
    values = {k: str(form.get(k, ""))[:100] for k in ("language", "speakers", "task")}
    language = language_code(lang, values["language"])
    speakers = values["speakers"].strip().lower()
    task = values["task"] if values["task"] in TASKS else None
    why = None
    try:
        language_hint(language)
    except UnknownLanguage:
        why = _("The recognizer knows no language “%(code)s”: choose one from the list.") % {
            "code": values["language"].strip()
        }
    if why is None and speakers:
        try:
            SpeakersOption.parse(speakers)
        except BadSpeakers:
            why = _("Speakers: auto, a count such as 2, a range such as 2-4, or off.")
    attempt = str(form.get("attempt", ""))
    key = f"again {card['id']} {attempt}" if ATTEMPT.fullmatch(attempt) else None
    if why is None:
        try:
            got = await again(
                request,
                db,
                config,
                session.owner,
                card["id"],
                Change(language, speakers, task),
                via="page",
                key=key,
            )
        except ApiError as e:
            if e.status == 404:
                return not_found_page(request, session)
            why = (
                _("It is still being transcribed; try again once it is done or stopped.")
                if e.status == 409
                else _("Nothing would change: choose another language, speakers or task.")
            )
        except Refused:
            why = _("There is no room left for it: your quota or the service's storage is full.")
        else:
            return RedirectResponse(record_path(got.id), status_code=303)
    context = await record_context(db, session.owner, card, session.csrf)
    return html(
        request,
        "record.html",
        422,
        **{**context, "errors": {"again": why}, "again_values": values},
    )
