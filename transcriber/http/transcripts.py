"""A finished record's transcript, as plain text, SRT, VTT, JSON, or a document
(Markdown, DOCX: title, date, duration, paragraphs with timecodes and speakers): the
owner's corrections applied (the recognizer's text with `?machine=true`), and on a
diarized record the speakers with the owner's names and choices (always: who spoke is
not the recognizer's text)."""

import datetime as dt
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from transcriber.audio.speakers import Turn, assign
from transcriber.db.database import Database
from transcriber.formats import DocumentHead, render, to_docx, to_markdown
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.errors import documented_errors
from transcriber.http.owned_cards import TRANSCRIPT_PATHS, owned_card
from transcriber.http.shapes import Card, Transcript
from transcriber.records.archive import transcript
from transcriber.records.corrections import corrected, corrections_of
from transcriber.records.speaker_names import default_label, owner_speakers

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

router = APIRouter()

MACHINE = Query(description="true: the recognizer's text, without the owner's corrections")


async def transcript_response(
    db: Database, owner: int, recording_id: str | uuid.UUID, kind: str, *, machine: bool = False
) -> Response:
    """The owner's record's transcript as `kind` (a key of TRANSCRIPT_PATHS), corrected
    unless `machine`; 409 with the card until it is transcribed; 404 if the record is
    not the owner's. Cancellation: plain reads."""
    c = await owned_card(db, owner, recording_id)
    if not c["readable"]:
        return JSONResponse(c, status_code=409)
    t = await transcript(db, owner, c["id"])
    text, segments, labels = await owner_transcript(db, owner, c["id"], t, machine=machine)
    if kind in ("markdown", "docx"):
        head = document_head(c, t)
        body = to_markdown(head, segments) if kind == "markdown" else to_docx(head, segments)
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


def transcript_route(kind: str) -> None:
    path = f"/v1/recordings/{{recording_id}}/{TRANSCRIPT_PATHS[kind]}"
    response_class = RESPONSE_CLASSES[kind]
    ok: dict[str, Any] = {"description": f"the transcript as {FORMAT_OF[kind]}"}
    if kind == "json":
        ok["model"] = Transcript

    async def get_transcript(
        owner: Owner, db: Db, recording_id: str, machine: Annotated[bool, MACHINE] = False
    ) -> Response:
        return await transcript_response(db, owner, recording_id, kind, machine=machine)

    router.get(
        path,
        summary=f"The transcript ({FORMAT_OF[kind]})",
        response_model=None,
        name=f"transcript_{kind}",
        # For the schema: JSON is documented by its model, the rest as text.
        response_class=JSONResponse if kind == "json" else response_class,
        responses={
            200: ok,
            409: {"model": Card, "description": "not transcribed (yet): the card"},
            **documented_errors(404),
        },
    )(get_transcript)


for _kind in TRANSCRIPT_PATHS:
    transcript_route(_kind)
