"""The API's routes of a finished record's transcript (`/v1/recordings/{id}/text`,
`transcript.srt`, …), one per rendering of `transcriber.http.downloads`."""

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from transcriber.http.api.shapes import Card, Transcript
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.downloads import RESPONSE_CLASSES, transcript_response
from transcriber.http.errors import documented_errors
from transcriber.http.owned_cards import TRANSCRIPT_PATHS
from transcriber.subtitles import profiles
from transcriber.transcripts import FORMAT_OF, SUBTITLES

router = APIRouter()

REPORT_SCHEMA: dict[str, Any] = {
    "title": "SubtitleReport",
    "type": "object",
    "required": ["profile", "cues", "ok", "counts", "broken"],
    "properties": {
        "profile": {"type": "string"},
        "cues": {"type": "integer"},
        "ok": {"type": "boolean", "description": "no rule broken"},
        "counts": {
            "type": "object",
            "description": "by rule, how many cues break it",
            "additionalProperties": {"type": "integer"},
        },
        "broken": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["cue", "rule", "detail"],
                "properties": {
                    "cue": {"type": "integer", "description": "the cue's number, from 1"},
                    "rule": {"type": "string"},
                    "detail": {"type": "string"},
                },
            },
        },
    },
}
"""The checker's report (`transcriber.subtitles.check.report`) as the schema says it."""

MACHINE = Query(description="true: the recognizer's text, without the owner's corrections")
PROFILE = Query(
    description=(
        "the subtitle profile the cues follow: "
        + ", ".join(profiles.NAMES)
        + f" (default {profiles.DEFAULT}; segments: one cue per recognized segment)"
    )
)
REPORT = Query(
    description="true: instead of the file, the checker's report of it by the profile (JSON)"
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

    async def get_subtitles(
        owner: Owner,
        db: Db,
        recording_id: str,
        machine: Annotated[bool, MACHINE] = False,
        profile: Annotated[str | None, PROFILE] = None,
        report: Annotated[bool, REPORT] = False,
    ) -> Response:
        return await transcript_response(
            db, owner, recording_id, kind, machine=machine, profile=profile, report=report
        )

    subtitles = kind in SUBTITLES
    if subtitles:
        ok["description"] += " by the profile's rules, or with report=true the checker's report"
        ok["content"] = {
            response_class.media_type: {"schema": {"type": "string"}},
            "application/json": {"schema": REPORT_SCHEMA},
        }

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
            **documented_errors(404, *((422,) if subtitles else ())),
        },
    )(get_subtitles if subtitles else get_transcript)


for _kind in TRANSCRIPT_PATHS:
    transcript_route(_kind)
