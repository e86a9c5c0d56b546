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

import datetime as dt
import re
import unicodedata
import urllib.parse
import uuid
from typing import Any

import attrs
from fastapi.responses import JSONResponse, Response

from transcriber.audio.speakers import Part, Turn, parts
from transcriber.db.database import Database
from transcriber.formats import DocumentHead, render, to_docx, to_markdown
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import owned_card
from transcriber.records.archive import transcript
from transcriber.records.corrections import Corrections, corrected, corrections_of
from transcriber.records.settings import owner_settings
from transcriber.records.speaker_names import default_label, owner_speakers
from transcriber.subtitles import check, cues, profiles

FORMAT_OF = {
    "text": "txt",
    "srt": "srt",
    "vtt": "vtt",
    "json": "json",
    "markdown": "md",
    "docx": "docx",
}


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


SUBTITLES = ("srt", "vtt")


def subtitle_profile(kind: str, profile: str | None, report: bool) -> profiles.Profile | None:
    """The profile the download of `kind` follows (None: one cue per segment); 422 for
    a name no profile has, or a profile or report asked of a kind that is not subtitles."""
    if kind not in SUBTITLES:
        if profile is not None or report:
            raise ApiError(422, "profile and report apply to the srt and vtt transcripts only")
        return None
    try:
        chosen = profiles.profile(profile)
    except profiles.UnknownProfile as e:
        raise ApiError(422, str(e)) from None
    if report and chosen is None:
        raise ApiError(422, "a report needs a profile of rules, not segments")
    return chosen


@attrs.frozen
class HeadWords:
    """How a document's head says what it holds, in its reader's language (the page's
    downloads and a link's give the reader's; the API's are English)."""

    untitled: str = "Untitled recording"
    duration: str = "duration"
    language: str = "language"


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
    if profile is None and kind in ("srt", "vtt") and not shared:
        # The owner's default profile (their settings), for them only: a link holder
        # gets the service's, knowing nothing of the owner's settings.
        profile = (await owner_settings(db, owner)).subtitle_profile
    rules = subtitle_profile(kind, profile, report)
    c = await owned_card(db, owner, recording_id)
    if not c["readable"]:
        return JSONResponse(c, status_code=409, headers=DOWNLOAD_HEADERS)
    t = await transcript(db, owner, c["id"])
    text, segments, labels = await owner_transcript(
        db, owner, c["id"], t, machine=machine and not shared, voices=not shared
    )
    if shared:
        segments = shown_to_others(segments)
    if kind in ("markdown", "docx"):
        head = document_head(c, t, head_words)
        body = to_markdown(head, segments) if kind == "markdown" else to_docx(head, segments)
        return RESPONSE_CLASSES[kind](body, headers=DOWNLOAD_HEADERS)
    if rules is not None:
        body = cues.render(FORMAT_OF[kind], segments, rules)
        if report:
            return JSONResponse(check.report(check.parse(body), rules), headers=DOWNLOAD_HEADERS)
        return RESPONSE_CLASSES[kind](body, headers=DOWNLOAD_HEADERS)
    extra = (
        {}
        if kind != "json"
        else {
            "id": c["id"],
            "language": t["language"] if t else c["language"],
            "model": t["model"] if t else None,
            "duration_s": c["duration_s"],
            "labels": labels,
        }
    )
    return RESPONSE_CLASSES[kind](
        render(FORMAT_OF[kind], text, segments, **extra), headers=DOWNLOAD_HEADERS
    )


HIDDEN_BEHIND_A_CORRECTION = ("machine_text", "words")


def shown_to_others(segments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The segments as a link shows them: the owner's text only. A corrected segment
    loses what the recognizer heard there — its `machine_text` and its `words` (the
    recognizer's words, with their times) — so a name the owner corrected away before
    sharing is not shared; it keeps `corrected: true`, its times and speaker."""
    return [
        {k: v for k, v in s.items() if k not in HIDDEN_BEHIND_A_CORRECTION}
        if s.get("corrected")
        else s
        for s in segments
    ]


def document_head(
    card: dict[str, Any], t: dict[str, Any] | None, words: HeadWords | None = None
) -> DocumentHead:
    words = words or HeadWords()
    return DocumentHead(
        title=card["title"] or card["filename"] or words.untitled,
        created_at=dt.datetime.fromisoformat(card["created_at"]),
        duration_s=card["duration_s"],
        language=(t or {}).get("language") or card["language"],
        words=(words.duration, words.language),
    )


async def owner_transcript(
    db: Database,
    owner: int,
    rid: uuid.UUID,
    t: dict[str, Any] | None,
    *,
    machine: bool = False,
    voices: bool = True,
) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    """The text and segments of the owner's record's transcript `t` as every rendering
    shows them (the page, the downloads, the API's routes): `owner_parts`, without their
    addresses. Cancellation: plain reads."""
    text, shown, labels = await owner_parts(db, owner, rid, t, machine=machine, voices=voices)
    return text, [p.shown for p in shown], labels


async def owner_parts(
    db: Database,
    owner: int,
    rid: uuid.UUID,
    t: dict[str, Any] | None,
    *,
    machine: bool = False,
    voices: bool = True,
) -> tuple[str, list[Part], dict[str, str]]:
    """The text and parts of the owner's record's transcript `t`: corrected unless
    `machine`, and on a diarized record with speakers, named and chosen by the owner and
    split where they change (`transcriber.audio.speakers.parts`, each part addressed by
    its segment and first word, as the owner's moves and corrections of a part are); and
    each shown speaker's found label by its name. `voices`: with the names the owner's
    library of voices gave (False for a link holder: nothing of a voice is shown to
    others). Cancellation: plain reads."""
    text, segments = ("", []) if t is None else (t["text"], t["segments"])
    fixes = Corrections() if machine else await corrections_of(db, owner, rid)
    text, segments = corrected(text, segments, fixes.whole)
    if t is None or t.get("turns") is None:
        return text, [Part(i, 0, True, s) for i, s in enumerate(segments)], {}
    said = await owner_speakers(db, owner, rid, voices=voices)
    turns = [Turn(*turn) for turn in t["turns"]]
    shown = parts(segments, turns, said.names, said.choices, fixes.parts)
    if fixes.parts:
        # A part's text is the owner's: the whole text is the parts' as shown.
        text = " ".join(p.shown["text"].strip() for p in shown if p.shown["text"].strip())
    found = {turn.speaker for turn in turns} | set(said.choices.values())
    labels = {said.names.get(n) or default_label(n): default_label(n) for n in sorted(found)}
    return text, shown, labels


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
