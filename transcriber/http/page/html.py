"""The owner's page's templates (`templates/` beside this module) and static files
(`static/`), rendered in the reader's language by `transcriber.http.rendering`; and the
little every screen of the page shares: the owner's record or nothing, and the page
that says so."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse

from transcriber import languages
from transcriber.db.database import Database
from transcriber.http import i18n, rendering
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import SUMMARY_MAX, owned_card
from transcriber.http.page import text
from transcriber.http.uploads import TITLE_MAX
from transcriber.records.corrections import CORRECTION_MAX
from transcriber.records.shares import NOTE_MAX
from transcriber.transcripts import HeadWords

HERE = Path(__file__).resolve().parent

rendering.add_static(HERE / "static")


def page_globals(lang: i18n.Lang) -> dict[str, Any]:
    """What the page's templates read besides the words every screen has."""
    return {
        "state_of": text.state_of,
        "again_helps": text.again_helps,
        "stop_words": functools.partial(text.stop_words, lang),
        "progress_words": functools.partial(text.progress_words, lang),
        "state_words": functools.partial(text.words_of, lang, text.STATE_WORDS),
        "stopped_while": functools.partial(text.stopped_while, lang),
        "event_words": functools.partial(text.event_words, lang),
        "CORRECTION_MAX": CORRECTION_MAX,
        "TITLE_MAX": TITLE_MAX,
        "SUMMARY_MAX": SUMMARY_MAX,
        "NOTE_MAX": NOTE_MAX,
        "recognizer_languages": recognizer_languages(lang),
        "recognizer_codes": frozenset(languages.NAMES),
        "language_name": functools.partial(language_name, lang),
    }


def recognizer_languages(lang: i18n.Lang) -> list[tuple[str, str]]:
    """The codes the recognizer takes as a language hint, each named in the page's
    language where the locale data names it (Whisper's English name otherwise): the
    page's own language first (the hint it suggests), then the others by name. The
    language fields offer them (after "detect") and the script refuses any other code
    before sending."""
    named = {
        code: lang.locale.languages.get(code) or english.capitalize()
        for code, english in languages.NAMES.items()
    }
    others = sorted(
        ((c, n) for c, n in named.items() if c != lang.code), key=lambda p: p[1].casefold()
    )
    return [(lang.code, named[lang.code]), *others]


def head_words(lang: i18n.Lang) -> HeadWords:
    """A Markdown or Word download's head in the reader's language."""
    _ = lang.gettext
    return HeadWords(_("Untitled recording"), _("duration"), _("language"))


def language_name(lang: i18n.Lang, code: str | None) -> str | None:
    """A record's language as the page names it: in the page's language where the locale
    data names it; a code or name the table does not know, as it is."""
    if not code:
        return None
    return lang.locale.languages.get(code.lower()) or languages.language_name(code)


def language_code(lang: i18n.Lang, value: str) -> str:
    """What the owner typed into a language field, as a hint: a code as it is, a
    language's name (in the page's language, or Whisper's English one) as its code,
    "detect" as `auto`; anything else unchanged, for the check to refuse by its own
    words."""
    typed = value.strip().casefold()
    if typed in ("", lang.gettext("detect").casefold()):
        return ""
    for code, name in recognizer_languages(lang):
        if typed in (code, name.casefold(), languages.NAMES[code]):
            return code
    return value.strip()


TEMPLATES = rendering.templates(HERE / "templates")
for _code, _env in TEMPLATES.items():
    _env.globals.update(page_globals(i18n.LANGS[_code]))

SECURITY_HEADERS = rendering.SECURITY_HEADERS
lang_of = rendering.lang_of


def html(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Template `name` of the page in the request's language (`rendering.html`)."""
    return rendering.html(TEMPLATES, request, name, status, **context)


def record_path(recording_id: Any) -> str:
    return f"/recordings/{recording_id}"


def not_found_page(request: Request, session: Any, *, address: bool = False) -> HTMLResponse:
    """404 for a record not the owner's, or (`address`) for an address nothing answers;
    `session` None for a reader not signed in."""
    if session is None:
        return html(request, "not_found.html", 404, address=address)
    return html(request, "not_found.html", 404, csrf=session.csrf, address=address)


async def mine(db: Database, owner: int, recording_id: str) -> dict[str, Any] | None:
    """The card of the owner's record `recording_id`, else None (unknown, malformed or
    someone else's: the page answers all three alike). Cancellation: a plain read."""
    try:
        return await owned_card(db, owner, recording_id)
    except ApiError:
        return None
