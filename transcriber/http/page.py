"""The owner's web page at `/`: sign in with the API token, upload, watch recordings
move, listen to one against its transcript, correct it, download it.

Server-rendered (Jinja2 templates in `templates/`) with a little plain JavaScript and
CSS (`static/`); nothing is fetched from elsewhere. The page signs in with a session
cookie (`page_session`); every record it shows is the signed-in owner's, and any other
answers 404 alike — pages, audio and downloads.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from actors.log import event
from transcriber.db.database import Database
from transcriber.formats import paragraphs, timecode
from transcriber.http import i18n, page_text
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import owned_card, parse_id
from transcriber.http.page_audio import audio_response, open_audio, peaks
from transcriber.http.page_sign_in import (
    CSRF_FIELD,
    OWNER,
    SIGNIN_PATH,
    ChangingSession,
    PageOwner,
    Session,
    check_csrf,
    is_https,
)
from transcriber.http.recordings import decode_cursor, encode_cursor, store_upload
from transcriber.http.sessions import sign_in_form
from transcriber.http.shapes import SUMMARY_MAX, TOPIC_MAX, TOPICS_MAX
from transcriber.http.speakers import reassign, rename
from transcriber.http.transcripts import owner_transcript, transcript_response
from transcriber.http.uploads import TITLE_MAX, check_text
from transcriber.records.archive import (
    RecordsPage,
    SearchTooBroad,
    edit_owner_fields,
    found_records_page,
    journal_page,
    transcript,
)
from transcriber.records.corrections import (
    CORRECTION_MAX,
    BadCorrection,
    check_correction,
    clear_correction,
    set_correction,
)
from transcriber.records.deletion import delete_own
from transcriber.records.shares import NOTE_MAX, open_share, shares_of
from transcriber.records.speaker_names import NAME_MAX, BadSpeaker
from transcriber.stops import owner_detail
from transcriber.storage.configured import blobs_of

PAGE_SIZE = 25
JOURNAL_SHOWN = 500
HERE = Path(__file__).resolve().parent

# Downloads by extension, and the transcript route's kind for each.
DOWNLOADS = {
    "txt": "text",
    "srt": "srt",
    "vtt": "vtt",
    "json": "json",
    "md": "markdown",
    "docx": "docx",
}

SECURITY_HEADERS = {
    # Only this site's own files: no inline script or style, no framing.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; media-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}

router = APIRouter(include_in_schema=False)

_PAGE_PATH = re.compile(
    r"/(?:|signin|signout|upload|delete|lang/[^/]+|static/[^/]+|recordings/[^/]+(?:/.*)?)"
)
STREAMED = frozenset({("POST", "/upload")})
"""(method, path) of the page's routes that stream their body under their own cap."""

SIGNIN_FORM_MAX = 4096
"""Bytes of the sign-in form: a token (about 50 characters), where to go next (at most
2000) and the form's own encoding. Read before anything vouches for its sender, so it
is kept small (`middleware.Guard` refuses more with 413)."""
BODY_CAPS = {("POST", SIGNIN_PATH): SIGNIN_FORM_MAX}
"""(method, path) → bytes of a body read whole that is capped below the API's own."""


def is_page_path(path: str) -> bool:
    """A path of the page: it authenticates by its session cookie itself (and answers
    sign-in pages to nobody in particular), so a guard asking for the API's bearer token
    must let it through."""
    return _PAGE_PATH.fullmatch(path) is not None


# --- static files and templates --------------------------------------------------------


def _load_static() -> dict[str, tuple[bytes, str, str]]:
    types = {
        ".css": "text/css; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".svg": "image/svg+xml",
    }
    found = {}
    for path in sorted((HERE / "static").iterdir()):
        if path.suffix in types:
            body = path.read_bytes()
            found[path.name] = (body, types[path.suffix], hashlib.sha256(body).hexdigest()[:12])
    return found


STATIC = _load_static()


def static_url(name: str) -> str:
    # The content's hash in the address: a new version is a new address, so a file can
    # be cached for good.
    return f"/static/{name}?v={STATIC[name][2]}"


def make_templates(lang: i18n.Lang) -> jinja2.Environment:
    """The page's templates in language `lang`: its messages (`_()`, `{% trans %}`), its
    dates, durations and sizes."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_translations(lang.translations, newstyle=True)  # type: ignore[attr-defined]
    env.globals.update(
        static_url=static_url,
        state_of=page_text.state_of,
        stop_words=functools.partial(page_text.stop_words, lang),
        progress_words=functools.partial(page_text.progress_words, lang),
        state_words=functools.partial(page_text.words_of, lang, page_text.STATE_WORDS),
        milestone_words=functools.partial(page_text.words_of, lang, page_text.MILESTONE_WORDS),
        event_words=functools.partial(page_text.words_of, lang, page_text.EVENT_WORDS),
        origin_words=functools.partial(page_text.words_of, lang, page_text.ORIGIN_WORDS),
        lang=lang.code,
        languages=i18n.NAMES,
        script_words=lang.script_words(),
        CORRECTION_MAX=CORRECTION_MAX,
        TITLE_MAX=TITLE_MAX,
        SUMMARY_MAX=SUMMARY_MAX,
        NOTE_MAX=NOTE_MAX,
    )
    env.filters.update(
        number=lang.number,
        duration=lang.duration,
        clock=lang.clock,
        when=lang.when,
        size=lang.size,
        timecode=timecode,
    )
    return env


TEMPLATES = {code: make_templates(lang) for code, lang in i18n.LANGS.items()}


def lang_of(request: Request) -> i18n.Lang:
    return i18n.pick(request.cookies, request.headers.get("accept-language", ""))


def html(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Template `name` in the request's language; `here` (this page's address) lets the
    language switch come back to it."""
    lang = lang_of(request)
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return HTMLResponse(
        TEMPLATES[lang.code].get_template(name).render(here=here, **context),
        status_code=status,
        headers={
            **SECURITY_HEADERS,
            "Content-Language": lang.code,
            "Vary": "Accept-Language, Cookie",
        },
    )


SHARE_PREFIX = "/s/"
NEW_SHARE_COOKIE = "transcriber_new_share"
"""Carries a link just made from the form's POST to the record page's GET it redirects
to (Post/Redirect/Get: a reload then reads the page again instead of making another
link). Scoped to that record's page, HttpOnly, SameSite=Strict, short-lived, and read
once; the page shows it only while it is a live link of that very record of the
signed-in owner, so a forged one shows nothing it would not anyway."""
NEW_SHARE_MAX_AGE_S = 300


def link_of(request: Request, secret: str) -> str:
    return str(request.base_url).rstrip("/") + SHARE_PREFIX + secret


def record_path(recording_id: Any) -> str:
    return f"/recordings/{recording_id}"


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


def not_found_page(request: Request, session: Any) -> HTMLResponse:
    return html(request, "not_found.html", 404, csrf=session.csrf)


async def mine(db: Database, owner: int, recording_id: str) -> dict[str, Any] | None:
    """The card of the owner's record `recording_id`, else None (unknown, malformed or
    someone else's: the page answers all three alike). Cancellation: a plain read."""
    try:
        return await owned_card(db, owner, recording_id)
    except ApiError:
        return None


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC:
        raise ApiError(404, "no such file")
    body, media_type, _ = STATIC[name]
    return Response(
        body,
        media_type=media_type,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "X-Content-Type-Options": "nosniff",
        },
    )


# --- signing in and out ----------------------------------------------------------------


safe_next = OWNER.safe_next
"""Where to go after signing in: a path of this site only, never another site."""


@router.get(SIGNIN_PATH)
async def signin_page(
    request: Request, next: Annotated[str | None, Query(max_length=2000)] = None
) -> HTMLResponse:
    return html(request, "signin.html", next=safe_next(next), error=None)


@router.post(SIGNIN_PATH)
async def signin(request: Request, db: Db, config: Settings) -> Response:
    """Sign in with the API token. A form gets a redirect (or the form again, with the
    reason); the page's script (`Accept: application/json`) gets the new anti-forgery
    token, so it can carry on where it was."""
    token, target = await sign_in_form(request)
    target = safe_next(target)
    lifetime_s = config.page_session_days * 86400
    made = await OWNER.sign_in(db, token, lifetime_s)
    script = "application/json" in request.headers.get("accept", "")
    if made is None:
        event(logging.INFO, "page_signin_refused")
        message = lang_of(request).gettext(
            "That is not an owner's API token. Use the token `transcriber owner add` printed."
        )
        if script:
            return JSONResponse({"error": message}, status_code=401)
        return html(request, "signin.html", 401, next=target, error=message)
    response: Response = (
        JSONResponse({"csrf": made.csrf}) if script else RedirectResponse(target, status_code=303)
    )
    OWNER.set_cookie(response, request, made.secret, lifetime_s)
    return response


@router.post("/signout")
async def signout(request: Request, db: Db, session: Session) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    await OWNER.sign_out(db, session)
    response = RedirectResponse(SIGNIN_PATH, status_code=303)
    OWNER.clear_cookie(response, request)
    return response


@router.get("/lang/{code}")
async def switch_language(
    request: Request, code: str, next: Annotated[str | None, Query(max_length=2000)] = None
) -> Response:
    """The language switch: remembered in a cookie for a year, then back to the page it
    was chosen on. A plain link, so it works signed out too; choosing a language changes
    nothing but how the pages read, so it needs no anti-forgery token."""
    if code not in i18n.LANGS:
        raise ApiError(404, "no such language")
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        i18n.COOKIE,
        code,
        max_age=i18n.COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


# --- my recordings --------------------------------------------------------------------


def search_query(text: str) -> str | None:
    """A tsquery (the 'simple' configuration) for what the owner typed: every word, each
    as a prefix, so a word being typed is found. Only word characters reach it, so no
    input can be a malformed tsquery."""
    words = re.findall(r"\w+", text.lower())[:20]
    return " & ".join(f"{w}:*" for w in words) or None


@router.get("/")
async def recordings_page(
    request: Request,
    db: Db,
    session: Session,
    state: Annotated[str | None, Query(max_length=20)] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    fragment: Annotated[str | None, Query(max_length=20)] = None,
) -> HTMLResponse:
    state = state if state in page_text.STATES else None
    try:
        found = await found_records_page(
            db,
            session.owner,
            decode_cursor(cursor) if cursor else None,
            PAGE_SIZE,
            state=state,
            search=search_query(q or ""),
        )
    except SearchTooBroad:  # said plainly in the list, not an error page
        found = RecordsPage([], None)
        too_broad = True
    else:
        too_broad = False
    cards = found.cards
    context = {
        "too_broad": too_broad,
        "cards": cards,
        "csrf": session.csrf,
        "state": state or "",
        "q": q or "",
        "cursor": cursor,
        "states": page_text.STATES,
        "older": None if found.more_after is None else encode_cursor(*found.more_after),
        "live": any(page_text.state_of(c) == "working" for c in cards),
        "max_upload_bytes": request.app.state.max_upload_bytes,
    }
    return html(request, "_rows.html" if fragment == "rows" else "recordings.html", **context)


@router.post("/upload")
async def upload(
    request: Request, db: Db, config: Settings, session: ChangingSession
) -> JSONResponse:
    """One file of the upload form, sent by the page's script: `multipart/form-data`
    with `file`, `title`, `language`, like the API's upload. 201 with the card, or the
    reason it was refused in words (`{"error": ...}`)."""
    # The session (cookie, origin and anti-forgery header) was checked by the
    # dependency before anything of the body is read; the API's bounds apply as to any
    # upload (429, 507).
    rid, _ = await store_upload(request, db, config, session.owner, None, via="page")
    card = await owned_card(db, session.owner, rid)
    return JSONResponse({**card, "page": f"/recordings/{rid}"}, status_code=201)


# --- one recording --------------------------------------------------------------------


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
            # The stored segments, one row each (corrections and moves are by their
            # index), each with the speaker it is mostly.
            _, segments, labels = await owner_transcript(db, owner, card["id"], t, split=False)
            speakers = speaker_rows(labels)
            number = {s["name"]: s["n"] for s in speakers}
            segments = [{**s, "speaker_n": number.get(s.get("speaker"))} for s in segments]
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
        "has_audio": card["duration_s"] is not None,
        "errors": {},
        "values": None,
        "shares": await shares_of(db, owner, card["id"]),
        "new_share": None,
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
    """The waveform overview of the record's normalized audio (page_audio.peaks)."""
    rid = parse_id(recording_id)
    audio = None if rid is None else await open_audio(db, config, owner, rid)
    found = None if audio is None else await peaks(audio, (owner, rid, audio.size))
    if found is None:
        raise ApiError(404, "no such audio")
    return JSONResponse(found, headers={"Cache-Control": "private, max-age=86400"})


@router.get("/recordings/{recording_id}/transcript.{ext}")
async def download(
    db: Db, owner: PageOwner, recording_id: str, ext: str, machine: Annotated[bool, Query()] = False
) -> Response:
    if ext not in DOWNLOADS:
        raise ApiError(404, "no such recording")
    response = await transcript_response(db, owner, recording_id, DOWNLOADS[ext], machine=machine)
    if response.status_code == 200:
        rid = parse_id(recording_id)
        name = f"{rid}{'.machine' if machine else ''}.{ext}"
        response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


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
        except ValueError:
            if len(value) > limit:
                return _("%(what)s is longer than %(limit)d characters") % {
                    "what": what,
                    "limit": limit,
                }
            return _("%(what)s contains characters that cannot be stored") % {"what": what}
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


def correction_refused(lang: i18n.Lang, form: Any) -> str:
    """Why `check_correction` refused the form's text, in the reader's language: it
    refuses a text too long or one with control characters."""
    text = str(form.get("text", ""))
    if len(text) > CORRECTION_MAX:
        return lang.gettext(
            "the text is %(n)d characters long; a segment may have at most %(max)d"
        ) % {"n": len(text), "max": CORRECTION_MAX}
    bad = sorted({c for c in text if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")})[:3]
    return lang.gettext(
        "the text contains control characters (%(names)s); a segment is a single line of plain text"
    ) % {"names": ", ".join(f"U+{ord(c):04X}" for c in bad)}


@router.post("/recordings/{recording_id}/segments/{index}")
async def correct(
    request: Request, db: Db, session: ChangingSession, recording_id: str, index: int
) -> JSONResponse:
    """The owner's text for segment `index`, from the record page's script (form field
    `text`, or `restore` to go back to the machine's): JSON with the text now shown, or
    `{"error": ...}` (422) saying why the text was refused."""
    rid = parse_id(recording_id)
    t = None if rid is None else await transcript(db, session.owner, rid)
    if rid is None or t is None or not 0 <= index < len(t["segments"]):
        raise ApiError(404, "no such segment")
    form = await request.form()
    machine_text = t["segments"][index]["text"]
    detail = {"by": "owner", "owner_id": session.owner, "segment": index}
    try:
        text = "" if form.get("restore") else check_correction(str(form.get("text", "")))
    except BadCorrection:
        return JSONResponse({"error": correction_refused(lang_of(request), form)}, status_code=422)
    if text in ("", machine_text.strip()):
        await clear_correction(db, session.owner, rid, index, {**detail, "restored": True})
        return JSONResponse(
            {"text": machine_text, "machine_text": machine_text, "corrected": False}
        )
    await set_correction(db, session.owner, rid, index, text, detail)
    return JSONResponse({"text": text, "machine_text": machine_text, "corrected": True})


# --- deleting --------------------------------------------------------------------------


@router.post("/delete")
async def delete_selected(request: Request, db: Db, config: Settings, session: Session) -> Response:
    """The records selected in the list (form fields `id`), after the page asked the
    owner to confirm; ids not theirs are passed over. Back to the list."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    ids = [rid for v in form.getlist("id") if (rid := parse_id(str(v))) is not None]
    if ids:
        await delete_own(db, blobs_of(config), session.owner, ids[: PAGE_SIZE * 4], via="page")
    return RedirectResponse("/", status_code=303)


@router.post("/recordings/{recording_id}/delete")
async def delete_one(
    request: Request, db: Db, config: Settings, session: Session, recording_id: str
) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    rid = parse_id(recording_id)
    gone = (
        []
        if rid is None
        else await delete_own(db, blobs_of(config), session.owner, [rid], via="page")
    )
    if not gone:
        return not_found_page(request, session)
    return RedirectResponse("/", status_code=303)


# --- the print view --------------------------------------------------------------------


@router.get("/recordings/{recording_id}/print")
async def print_view(request: Request, db: Db, session: Session, recording_id: str) -> HTMLResponse:
    """The transcript as a clean document for the browser's "Print" / "Save as PDF":
    the title, date and duration, paragraphs with timecodes (and speakers), the owner's
    corrections applied; no controls (print CSS)."""
    card = await mine(db, session.owner, recording_id)
    if card is None or not card["done"]:
        return not_found_page(request, session)
    t = await transcript(db, session.owner, card["id"])
    # Corrected, and with the owner's names of the speakers, as every rendering.
    _, segments, _ = await owner_transcript(db, session.owner, card["id"], t)
    # In the reader's language, like the page it is opened from (the date, the duration,
    # the words); the downloaded documents (Markdown, DOCX) keep their English heading.
    return html(
        request,
        "print.html",
        card=card,
        language=(t or {}).get("language") or card["language"],
        paragraphs=paragraphs(segments),
    )


def speaker_refused(lang: i18n.Lang, e: BadSpeaker) -> str:
    """Why a speaker's name or a segment's speaker was refused, in the reader's language."""
    if e.taken:
        return lang.gettext("Another speaker already has that name.")
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
    """The record page's speaker of one segment (field `speaker`: a label)."""

    async def change(rid: Any, form: Any) -> None:
        await reassign(db, session.owner, rid, index, str(form.get("speaker", "")) or None, "page")

    return await speakers_form(request, db, session, recording_id, change)
