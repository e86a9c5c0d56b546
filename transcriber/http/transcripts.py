"""A finished record's transcript, as plain text, SRT, VTT or JSON."""

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from transcriber.formats import render
from transcriber.http.auth import Owner
from transcriber.http.cards import TRANSCRIPT_PATHS, owned_card
from transcriber.http.deps import Db
from transcriber.http.errors import documented_errors
from transcriber.http.models import Card, Transcript

FORMAT_OF = {"text": "txt", "srt": "srt", "vtt": "vtt", "json": "json"}


class SrtResponse(Response):
    media_type = "application/x-subrip"


class VttResponse(Response):
    media_type = "text/vtt"


class TextResponse(Response):
    media_type = "text/plain"


class RenderedJsonResponse(Response):
    """JSON already rendered by transcriber.formats (JSONResponse would encode it again)."""

    media_type = "application/json"


RESPONSE_CLASSES: dict[str, type[Response]] = {
    "text": TextResponse, "srt": SrtResponse, "vtt": VttResponse, "json": RenderedJsonResponse}

router = APIRouter()


def transcript_route(kind: str) -> None:
    path = f"/v1/recordings/{{recording_id}}/{TRANSCRIPT_PATHS[kind]}"
    response_class = RESPONSE_CLASSES[kind]
    ok: dict[str, Any] = {"description": f"the transcript as {FORMAT_OF[kind]}"}
    if kind == "json":
        ok["model"] = Transcript

    async def get_transcript(owner: Owner, db: Db, recording_id: str) -> Response:
        c = await owned_card(db, owner, recording_id)
        if not c["done"]:
            return JSONResponse(c, status_code=409)
        t = await db.fetchrow("owner_transcript", owner, c["id"])
        text, segments = ("", []) if t is None else (t["text"], t["segments"])
        extra = {} if kind != "json" else {
            "id": c["id"], "language": t["language"] if t else c["language"],
            "model": t["model"] if t else None, "duration_s": c["duration_s"]}
        return response_class(render(FORMAT_OF[kind], text, segments, **extra))

    router.get(path, summary=f"The transcript ({FORMAT_OF[kind]})", response_model=None,
               name=f"transcript_{kind}",
               # For the schema: JSON is documented by its model, the rest as text.
               response_class=JSONResponse if kind == "json" else response_class,
               responses={200: ok,
                          409: {"model": Card, "description": "not transcribed (yet): the card"},
                          **documented_errors(404)})(get_transcript)


for _kind in TRANSCRIPT_PATHS:
    transcript_route(_kind)
