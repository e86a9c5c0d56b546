"""A finished record's transcript as every face hands it out (the API's routes, the
page's downloads, the share view's): plain text, SRT, VTT, JSON, or a document
(Markdown, DOCX: title, date, duration, paragraphs with timecodes and speakers); the
owner's corrections applied (the recognizer's text with `machine`), and on a diarized
record the speakers with the owner's names and choices (always: who spoke is not the
recognizer's text). SRT and VTT follow a subtitle profile (`transcriber.subtitles`;
`segments`: one cue per segment), and with `report` the checker's report of the file
comes instead of it."""

import datetime as dt
import uuid
from typing import Any

from fastapi.responses import JSONResponse, Response

from transcriber.audio.speakers import Turn, assign
from transcriber.db.database import Database
from transcriber.formats import DocumentHead, render, to_docx, to_markdown
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import owned_card
from transcriber.records.archive import transcript
from transcriber.records.corrections import corrected, corrections_of
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


async def transcript_response(
    db: Database,
    owner: int,
    recording_id: str | uuid.UUID,
    kind: str,
    *,
    machine: bool = False,
    profile: str | None = None,
    report: bool = False,
) -> Response:
    """The owner's record's transcript as `kind` (a key of TRANSCRIPT_PATHS), corrected
    unless `machine`, SRT and VTT by the subtitle `profile` (the default's when None),
    or with `report` the checker's report of that file as JSON; 409 with the card until
    it is transcribed; 404 if the record is not the owner's; 422 for an unknown
    profile (before any read). Cancellation: plain reads."""
    rules = subtitle_profile(kind, profile, report)
    c = await owned_card(db, owner, recording_id)
    if not c["readable"]:
        return JSONResponse(c, status_code=409)
    t = await transcript(db, owner, c["id"])
    text, segments, labels = await owner_transcript(db, owner, c["id"], t, machine=machine)
    if kind in ("markdown", "docx"):
        head = document_head(c, t)
        body = to_markdown(head, segments) if kind == "markdown" else to_docx(head, segments)
        return RESPONSE_CLASSES[kind](body)
    if rules is not None:
        body = cues.render(FORMAT_OF[kind], segments, rules)
        if report:
            return JSONResponse(check.report(check.parse(body), rules))
        return RESPONSE_CLASSES[kind](body)
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
    return RESPONSE_CLASSES[kind](render(FORMAT_OF[kind], text, segments, **extra))


def document_head(card: dict[str, Any], t: dict[str, Any] | None) -> DocumentHead:
    return DocumentHead(
        title=card["title"] or card["filename"] or "Untitled recording",
        created_at=dt.datetime.fromisoformat(card["created_at"]),
        duration_s=card["duration_s"],
        language=(t or {}).get("language") or card["language"],
    )


async def owner_transcript(
    db: Database,
    owner: int,
    rid: uuid.UUID,
    t: dict[str, Any] | None,
    *,
    machine: bool = False,
    split: bool = True,
) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    """The text and segments of the owner's record's transcript `t` as every rendering
    shows them (the page, the downloads, the API's routes): corrected unless `machine`,
    and on a diarized record with speakers, named and chosen by the owner (split where
    they change unless not `split`); and each shown speaker's found label by its name.
    Cancellation: plain reads."""
    text, segments = ("", []) if t is None else (t["text"], t["segments"])
    if not machine:
        text, segments = corrected(text, segments, await corrections_of(db, owner, rid))
    if t is None or t.get("turns") is None:
        return text, segments, {}
    said = await owner_speakers(db, owner, rid)
    turns = [Turn(*turn) for turn in t["turns"]]
    segments = assign(segments, turns, said.names, said.choices, split=split)
    found = {turn.speaker for turn in turns} | set(said.choices.values())
    labels = {said.names.get(n) or default_label(n): default_label(n) for n in sorted(found)}
    return text, segments, labels
