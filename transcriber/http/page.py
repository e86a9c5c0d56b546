"""The owner's web page at `/`: sign in with the API token, upload, watch recordings
move, listen to one against its transcript, correct it, download it.

Server-rendered (Jinja2 templates in `templates/`) with a little plain JavaScript and
CSS (`static/`); nothing is fetched from elsewhere. The page signs in with a session
cookie (`page_session`); every record it shows is the signed-in owner's, and any other
answers 404 alike — pages, audio and downloads.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from actors.log import event
from transcriber.db.database import Database
from transcriber.formats import head_line, paragraphs, timecode
from transcriber.http import page_text
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import owned_card, parse_id
from transcriber.http.page_audio import audio_response, open_audio
from transcriber.http.page_sign_in import (
    CSRF_FIELD,
    SIGNIN_PATH,
    ChangingSession,
    PageOwner,
    Session,
    check_csrf,
    check_origin,
    clear_cookie,
    set_cookie,
    sign_in,
    sign_out,
)
from transcriber.http.recordings import decode_cursor, encode_cursor, store_upload
from transcriber.http.shapes import SUMMARY_MAX, TOPIC_MAX, TOPICS_MAX
from transcriber.http.transcripts import document_head, transcript_response
from transcriber.http.uploads import TITLE_MAX, check_text
from transcriber.records.archive import (
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
    corrected,
    corrections_of,
    set_correction,
)
from transcriber.records.deletion import delete_own
from transcriber.records.shares import NOTE_MAX, shares_of
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

_PAGE_PATH = re.compile(r"/(?:|signin|signout|upload|delete|static/[^/]+|recordings/[^/]+(?:/.*)?)")
STREAMED = frozenset({("POST", "/upload")})
"""(method, path) of the page's routes that stream their body under their own cap."""


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


templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.globals.update(
    static_url=static_url,
    state_of=page_text.state_of,
    stop_words=page_text.stop_words,
    progress_words=page_text.progress_words,
    CORRECTION_MAX=CORRECTION_MAX,
    TITLE_MAX=TITLE_MAX,
    SUMMARY_MAX=SUMMARY_MAX,
    NOTE_MAX=NOTE_MAX,
)
templates.filters.update(
    duration=page_text.duration,
    clock=page_text.clock,
    when=page_text.when,
    size=page_text.size,
    timecode=timecode,
)


def html(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(
        templates.get_template(name).render(**context), status_code=status, headers=SECURITY_HEADERS
    )


def not_found_page(session: Any) -> HTMLResponse:
    return html("not_found.html", 404, csrf=session.csrf)


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


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of this site only, never another site."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


@router.get(SIGNIN_PATH)
async def signin_page(next: Annotated[str | None, Query(max_length=2000)] = None) -> HTMLResponse:
    return html("signin.html", next=safe_next(next), error=None)


@router.post(SIGNIN_PATH)
async def signin(request: Request, db: Db, config: Settings) -> Response:
    """Sign in with the API token. A form gets a redirect (or the form again, with the
    reason); the page's script (`Accept: application/json`) gets the new anti-forgery
    token, so it can carry on where it was."""
    check_origin(request)
    form = await request.form()
    token, target = str(form.get("token", "")).strip(), safe_next(str(form.get("next", "")))
    lifetime_s = config.page_session_days * 86400
    made = await sign_in(db, token, lifetime_s)
    script = "application/json" in request.headers.get("accept", "")
    if made is None:
        event(logging.INFO, "page_signin_refused")
        message = "That is not an owner's API token. Use the token `transcriber owner add` printed."
        if script:
            return JSONResponse({"error": message}, status_code=401)
        return html("signin.html", 401, next=target, error=message)
    secret, csrf = made
    response: Response = (
        JSONResponse({"csrf": csrf}) if script else RedirectResponse(target, status_code=303)
    )
    set_cookie(response, request, secret, lifetime_s)
    return response


@router.post("/signout")
async def signout(request: Request, db: Db, session: Session) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    await sign_out(db, session)
    response = RedirectResponse(SIGNIN_PATH, status_code=303)
    clear_cookie(response, request)
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
    found = await found_records_page(
        db,
        session.owner,
        decode_cursor(cursor) if cursor else None,
        PAGE_SIZE,
        state=state,
        search=search_query(q or ""),
    )
    cards = found.cards
    context = {
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
    return html("_rows.html" if fragment == "rows" else "recordings.html", **context)


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
    if card["done"]:
        t = await transcript(db, owner, card["id"])
        if t is not None:
            _, segments = corrected(
                t["text"], t["segments"], await corrections_of(db, owner, card["id"])
            )
    # Numbered within the record, as `/events` numbers them; the operator's detail left out.
    journal = [
        {**e, "detail": owner_detail(e["detail"])}
        for e in await journal_page(db, owner, card["id"], 0, JOURNAL_SHOWN)
    ]
    return {
        "card": card,
        "segments": segments,
        "journal": journal,
        "csrf": csrf,
        "downloads": list(DOWNLOADS),
        "has_audio": card["duration_s"] is not None,
        "errors": {},
        "values": None,
        "shares": await shares_of(db, owner, card["id"]),
        "new_share": None,
    }


@router.get("/recordings/{recording_id}")
async def record_page(
    db: Db,
    session: Session,
    recording_id: str,
    fragment: Annotated[str | None, Query(max_length=20)] = None,
) -> HTMLResponse:
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(session)
    context = await record_context(db, session.owner, card, session.csrf)
    return html("_record_live.html" if fragment == "live" else "record.html", **context)


@router.api_route("/recordings/{recording_id}/audio", methods=["GET", "HEAD"])
async def record_audio(
    request: Request, db: Db, config: Settings, owner: PageOwner, recording_id: str
) -> Response:
    rid = parse_id(recording_id)
    audio = None if rid is None else await open_audio(db, config, owner, rid)
    if audio is None:
        raise ApiError(404, "no such audio")
    return audio_response(request, audio)


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


def field_errors(title: str, summary: str, topics_text: str) -> tuple[dict[str, str], list[str]]:
    errors: dict[str, str] = {}
    for name, value, limit in (("title", title, TITLE_MAX), ("summary", summary, SUMMARY_MAX)):
        try:
            check_text(value, name, limit)
        except ValueError as e:
            errors[name] = str(e)
    topics = [t.strip() for t in topics_text.split(",") if t.strip()]
    if len(topics) > TOPICS_MAX:
        errors["topics"] = f"at most {TOPICS_MAX} topics"
    for topic in topics:
        try:
            check_text(topic, "a topic", TOPIC_MAX)
        except ValueError as e:
            errors["topics"] = str(e)
    return errors, topics


@router.post("/recordings/{recording_id}/edit")
async def edit(request: Request, db: Db, session: Session, recording_id: str) -> Response:
    """The owner's fields from the record page's form: title, summary, topics (comma
    separated). Refused values come back in the form, each with its reason."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    card = await mine(db, session.owner, recording_id)
    if card is None:
        return not_found_page(session)
    values = {k: str(form.get(k, "")) for k in ("title", "summary", "topics")}
    errors, topics = field_errors(values["title"], values["summary"], values["topics"])
    if errors:
        context = await record_context(db, session.owner, card, session.csrf)
        return html("record.html", 422, **{**context, "errors": errors, "values": values})
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
    except BadCorrection as e:
        return JSONResponse({"error": str(e)}, status_code=422)
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
        return not_found_page(session)
    return RedirectResponse("/", status_code=303)


# --- the print view --------------------------------------------------------------------


@router.get("/recordings/{recording_id}/print")
async def print_view(db: Db, session: Session, recording_id: str) -> HTMLResponse:
    """The transcript as a clean document for the browser's "Print" / "Save as PDF":
    the title, date and duration, paragraphs with timecodes (and speakers), the owner's
    corrections applied; no controls (print CSS)."""
    card = await mine(db, session.owner, recording_id)
    if card is None or not card["done"]:
        return not_found_page(session)
    t = await transcript(db, session.owner, card["id"])
    segments = [] if t is None else t["segments"]
    if t is not None:
        _, segments = corrected(
            t["text"], t["segments"], await corrections_of(db, session.owner, card["id"])
        )
    head = document_head(card, t)
    return html(
        "print.html",
        head=head,
        line=head_line(head),
        paragraphs=paragraphs(segments),
        card=card,
    )
