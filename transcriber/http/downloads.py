"""A finished record's transcript as every face hands it out (the API's routes, the
page's downloads, the share view's): plain text, SRT, VTT, JSON, or a document
(Markdown, DOCX: title, date, duration, paragraphs with timecodes and speakers); the
owner's corrections applied (the recognizer's text with `machine`), and on a diarized
record the speakers with the owner's names and choices (always: who spoke is not the
recognizer's text). SRT and VTT follow a subtitle profile (`transcriber.subtitles`;
`segments`: one cue per segment), and with `report` the checker's report of the file
comes instead of it.

Every download says its own headers (`DOWNLOAD_HEADERS`), whoever's face hands it out:
a transcript is one owner's data, opened by itself it is a document with no powers, and
no cache keeps it (a shared one must stop with its link)."""

import re
import unicodedata
import urllib.parse
import uuid

from fastapi.responses import JSONResponse, Response

from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import owned_card
from transcriber.transcripts import (
    BadRendering,
    HeadWords,
    owner_profile,
    render_card,
    subtitle_profile,
)


class SrtResponse(Response):
    media_type = "application/x-subrip"


class VttResponse(Response):
    media_type = "text/vtt"


class TextResponse(Response):
    media_type = "text/plain"


class MarkdownResponse(Response):
    media_type = "text/markdown"


class DocxResponse(Response):
    media_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


class RenderedJsonResponse(Response):
    """JSON already rendered by transcriber.formats (JSONResponse would encode it again)."""

    media_type = "application/json"


DOWNLOAD_HEADERS = {
    # Opened by itself (a transcript.txt in a tab), data, never a page with powers: no
    # script, no style, no frame, in a sandbox.
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
    # One owner's text: no shared cache keeps it, nor the browser (a revoked link or a
    # deleted record leaves nothing behind to read).
    "Cache-Control": "private, no-store",
    "X-Content-Type-Options": "nosniff",
}
"""What every transcript download and its not-yet answer (409) carry."""


RESPONSE_CLASSES: dict[str, type[Response]] = {
    "text": TextResponse,
    "srt": SrtResponse,
    "vtt": VttResponse,
    "json": RenderedJsonResponse,
    "markdown": MarkdownResponse,
    "docx": DocxResponse,
}


async def transcript_response(
    db: Database,
    owner: int,
    recording_id: str | uuid.UUID,
    kind: str,
    *,
    machine: bool = False,
    shared: bool = False,
    profile: str | None = None,
    report: bool = False,
    head_words: HeadWords | None = None,
) -> Response:
    """The owner's record's transcript as `kind` (a key of TRANSCRIPT_PATHS), corrected
    unless `machine`; `shared`: as a link shows it to others (`shown_to_others`); SRT
    and VTT by the subtitle `profile` (the default's when None), or with `report` the
    checker's report of that file as JSON; 409 with the card until it is transcribed;
    404 if the record is not the owner's; 422 for an unknown profile (before any read).
    Cancellation: plain reads."""
    if profile is None:
        profile = await owner_profile(db, owner, kind, shared)
    try:
        rules = subtitle_profile(kind, profile, report)
    except BadRendering as e:
        raise ApiError(422, str(e)) from None
    c = await owned_card(db, owner, recording_id)
    if not c["readable"]:
        return JSONResponse(c, status_code=409, headers=DOWNLOAD_HEADERS)
    got = await render_card(
        db,
        owner,
        c,
        kind,
        rules,
        machine=machine,
        shared=shared,
        report=report,
        head_words=head_words,
    )
    if got.report is not None:
        return JSONResponse(got.report, headers=DOWNLOAD_HEADERS)
    return RESPONSE_CLASSES[kind](got.body, headers=DOWNLOAD_HEADERS)


def attachment(title: str, fallback: str, suffix: str) -> str:
    """A Content-Disposition naming the download after the record's `title` + `suffix`
    (".txt", ".machine.srt"): `filename` an ASCII approximation for old clients (letters
    without their accents, anything else `_`; `fallback`, the record's id, when nothing
    of the title is left), `filename*` the title itself in UTF-8 (RFC 6266, RFC 8187).
    Path separators and control characters never reach either."""
    name = "".join(
        "_" if c in '/\\:*?"<>|' or unicodedata.category(c)[0] == "C" else c for c in title
    )
    name = " ".join(name.split())[:TITLE_CHARS].strip(" .") or fallback
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    ascii_name = re.sub(r"[^A-Za-z0-9._ -]+", "_", ascii_name).strip(" ._")
    if not re.search(r"[A-Za-z0-9]", ascii_name):
        ascii_name = fallback
    encoded = urllib.parse.quote(name + suffix, safe="")
    return f"attachment; filename=\"{ascii_name}{suffix}\"; filename*=UTF-8''{encoded}"


TITLE_CHARS = 120
"""The most of a title a download's name keeps."""
