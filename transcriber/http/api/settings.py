"""The owner's defaults through the API: `GET`/`PATCH /v1/settings`
(transcriber.records.settings). The page's settings screen changes the same."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from transcriber.http.api.shapes import OwnerSettings, SettingsChange
from transcriber.http.auth import Owner
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError, documented_errors
from transcriber.records.settings import BadSettings, change_settings, owner_settings
from transcriber.subtitles import profiles

router = APIRouter()


@router.get(
    "/v1/settings",
    summary="Your defaults",
    response_model=None,
    responses={200: {"model": OwnerSettings}, **documented_errors(408)},
)
async def get_settings(owner: Owner, db: Db) -> JSONResponse:
    return JSONResponse((await owner_settings(db, owner)).to_json())


@router.patch(
    "/v1/settings",
    summary="Change your defaults",
    response_model=None,
    responses={200: {"model": OwnerSettings}, **documented_errors(400, 408, 413)},
)
async def patch_settings(owner: Owner, db: Db, body: SettingsChange) -> JSONResponse:
    given = {name: getattr(body, name) for name in body.model_fields_set}
    try:
        return JSONResponse((await change_settings(db, owner, given, profiles.NAMES)).to_json())
    except BadSettings as e:
        raise ApiError(422, str(e)) from None
