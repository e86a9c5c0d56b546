"""A finished record's transcript, as plain text, SRT, VTT, JSON, or a document
(Markdown, DOCX: title, date, duration, paragraphs with timecodes and speakers): the
owner's corrections applied (the recognizer's text with `?machine=true`)."""

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
    text, segments = ("", []) if t is None else (t["text"], t["segments"])
    if not machine:
        text, segments = corrected(text, segments, await corrections_of(db, owner, c["id"]))
    if t is not None and t.get("turns") is not None:
        segments = assign(segments, [Turn(*turn) for turn in t["turns"]])
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
