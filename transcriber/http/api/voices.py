"""The owner's library of voices through the API: `POST /v1/voices` keeps a found
speaker's voice, `GET /v1/voices` lists them, `PATCH`/`DELETE /v1/voices/{id}` rename or
delete one (its vector and the names it gave). The page's voices screen and its
"remember this voice" do the same (`transcriber.http.owner_voices`)."""

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse

from transcriber.http.api.shapes import NewVoice, Voice, VoiceChange, Voices
from transcriber.http.auth import Owner
from transcriber.http.deps import Db, Settings
from transcriber.http.errors import ApiError, documented_errors, not_found
from transcriber.http.owned_cards import owned, parse_id
from transcriber.http.owner_voices import remember_speaker
from transcriber.records.voices import (
    BadVoice,
    NotRemembering,
    check_voice_name,
    delete_voice,
    list_voices,
    rename_voice,
)

router = APIRouter()


@router.get(
    "/v1/voices",
    summary="Your voices",
    response_model=None,
    responses={200: {"model": Voices}, **documented_errors(408)},
)
async def get_voices(owner: Owner, db: Db) -> JSONResponse:
    return JSONResponse({"voices": await list_voices(db, owner)})


@router.post(
    "/v1/voices",
    summary="Remember a speaker's voice",
    response_model=None,
    responses={
        200: {"model": Voice, "description": "added to a voice of that name (or `voice`)"},
        201: {"model": Voice, "description": "a new voice"},
        **documented_errors(400, 404, 408, 409, 413),
    },
)
async def post_voice(owner: Owner, db: Db, config: Settings, body: NewVoice) -> JSONResponse:
    rid = await owned(db, owner, str(body.recording))
    try:
        voice, new = await remember_speaker(
            db, config, owner, rid, body.speaker, body.name, body.voice
        )
    except NotRemembering as e:
        raise ApiError(409, str(e)) from None
    except BadVoice as e:
        raise ApiError(409 if e.taken else 422, str(e)) from None
    return JSONResponse(voice, status_code=201 if new else 200)


@router.patch(
    "/v1/voices/{voice_id}",
    summary="Rename a voice",
    response_model=None,
    responses={200: {"model": Voice}, **documented_errors(400, 404, 408, 409, 413)},
)
async def patch_voice(owner: Owner, db: Db, voice_id: str, body: VoiceChange) -> JSONResponse:
    vid = parse_id(voice_id)
    try:
        done = (
            None if vid is None else await rename_voice(db, owner, vid, check_voice_name(body.name))
        )
    except BadVoice as e:
        raise ApiError(409 if e.taken else 422, str(e)) from None
    if done is None:
        raise not_found()
    return JSONResponse(done)


@router.delete(
    "/v1/voices/{voice_id}",
    status_code=204,
    summary="Delete a voice",
    response_model=None,
    responses=documented_errors(404, 408),
)
async def remove_voice(owner: Owner, db: Db, voice_id: str) -> Response:
    vid = parse_id(voice_id)
    if vid is None or not await delete_voice(db, owner, vid):
        raise not_found()
    return Response(status_code=204)
