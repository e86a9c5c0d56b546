"""The owner's changes on the record page: the title, summary and topics (a form), and
one segment's text (or one part's, where the speakers change inside it) corrected or
restored (the page's script)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from transcriber.audio.speakers import Turn, part_text
from transcriber.http import i18n
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import (
    SUMMARY_MAX,
    TOPIC_MAX,
    TOPICS_MAX,
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
    ChangingSession,
    Session,
    check_csrf,
)
from transcriber.http.page.speakers import part_of
from transcriber.http.uploads import TITLE_MAX
from transcriber.records.archive import (
    edit_owner_fields,
    transcript,
)
from transcriber.records.corrections import (
    CORRECTION_MAX,
    BadCorrection,
    correct_segment,
)
from transcriber.records.owner_text import RefusedText, check_text, described, is_control
from transcriber.records.speaker_names import WHOLE

router = APIRouter(include_in_schema=False)


def field_errors(
    lang: i18n.Lang, title: str, summary: str, topics_text: str
) -> tuple[dict[str, str], list[str]]:
    """Each refused field's reason in the reader's language. The checks are the API's
    (`check_text`); only the words are the page's."""
    _ = lang.gettext
    errors: dict[str, str] = {}

    def refused(value: str, what: str, limit: int, lines: bool = False) -> str | None:
        try:
            check_text(value, what, limit, lines=lines)
        except RefusedText as e:
            if e.too_long:
                return _("%(what)s is longer than %(limit)d characters") % {
                    "what": what,
                    "limit": limit,
                }
            return _("%(what)s contains characters it may not hold: %(names)s") % {
                "what": what,
                "names": described(e.chars),
            }
        return None

    for name, what, value, limit, lines in (
        ("title", _("The title"), title, TITLE_MAX, False),
        ("summary", _("The summary"), summary, SUMMARY_MAX, True),
    ):
        if (why := refused(value, what, limit, lines)) is not None:
            errors[name] = why
    topics = [t.strip() for t in topics_text.split(",") if t.strip()]
    if len(topics) > TOPICS_MAX:
        errors["topics"] = _("At most %(n)d topics") % {"n": TOPICS_MAX}
    for topic in topics:
        if (why := refused(topic, _("A topic"), TOPIC_MAX)) is not None:
            errors["topics"] = why
    return errors, topics


@router.post("/recordings/{recording_id}/edit")
async def edit(request: Request, db: Db, session: Session, recording_id: str) -> Response:
    """The owner's fields from the record page's form: title, summary, topics (comma
    separated). Refused values come back in the form, each with its reason."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(request, session)
    values = {k: str(form.get(k, "")) for k in ("title", "summary", "topics")}
    errors, topics = field_errors(
        lang_of(request), values["title"], values["summary"], values["topics"]
    )
    if errors:
        context = await record_context(db, session.owner, card, session.csrf)
        return html(request, "record.html", 422, **{**context, "errors": errors, "values": values})
    await edit_owner_fields(
        db,
        session.owner,
        card["id"],
        title=values["title"],
        summary=values["summary"],
        topics=topics,
        detail={
            "by": "owner",
            "owner_id": session.owner,
            "via": "page",
            "fields": ["summary", "title", "topics"],
        },
    )
    return RedirectResponse(f"/recordings/{card['id']}", status_code=303)


def correction_refused(lang: i18n.Lang, form: Any, e: BadCorrection) -> str:
    """Why `check_correction` refused the form's text, in the reader's language: it
    refuses a text too long or one with characters an owner's text may not hold."""
    text = str(form.get("text", ""))
    if not e.chars:
        return lang.gettext(
            "the text is %(n)d characters long; a segment may have at most %(max)d"
        ) % {"n": len(text), "max": CORRECTION_MAX}
    if all(is_control(c) for c in e.chars):
        return lang.gettext(
            "the text contains control characters (%(names)s); "
            "a segment is a single line of plain text"
        ) % {"names": described(e.chars)}
    return lang.gettext(
        "the text contains characters it may not hold (%(names)s); "
        "a segment is a single line of plain text"
    ) % {"names": described(e.chars)}


@router.post("/recordings/{recording_id}/segments/{index}")
async def correct(
    request: Request, db: Db, session: ChangingSession, recording_id: str, index: int
) -> JSONResponse:
    """The owner's text for segment `index`, or for its part from word `word` (a field the
    page sends where the segment is split at a speaker change), from the record page's
    script (form field `text`, or `restore` to go back to the machine's): JSON with the
    text now shown, or `{"error": ...}` (422) saying why the text was refused."""
    rid = parse_id(recording_id)
    t = None if rid is None else await transcript(db, session.owner, rid)
    if rid is None or t is None or not 0 <= index < len(t["segments"]):
        raise ApiError(404, "no such segment")
    form = await request.form()
    word = part_of(form)
    turns = [Turn(*turn) for turn in t.get("turns") or []]
    machine_text = part_text(t["segments"][index], turns, word)
    if machine_text is None:
        raise ApiError(404, "no such part of the segment")
    detail = {
        "by": "owner",
        "owner_id": session.owner,
        "via": "page",
        "segment": index,
        **({"word": word} if word != WHOLE else {}),
    }
    try:
        shown = await correct_segment(
            db,
            session.owner,
            rid,
            t["segments"],
            index,
            None if form.get("restore") else str(form.get("text", "")),
            detail,
            word=word,
            part_text=None if word == WHOLE else machine_text,
        )
    except BadCorrection as e:
        return JSONResponse(
            {"error": correction_refused(lang_of(request), form, e)}, status_code=422
        )
    return JSONResponse(shown)
