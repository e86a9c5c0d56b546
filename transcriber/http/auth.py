"""Who is calling: the `Owner` dependency, the owner behind `Authorization: Bearer`."""

from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from transcriber.auth import owner_of_token
from transcriber.http.deps import Db
from transcriber.http.errors import UNAUTHORIZED, ApiError

bearer = HTTPBearer(auto_error=False, description="the token of `transcriber owner add`")


async def current_owner(
        db: Db, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> int:
    """The calling owner's id; 401 without a valid token."""
    owner = None if credentials is None else await owner_of_token(db, credentials.credentials)
    if owner is None:
        raise ApiError(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
    return owner


Owner = Annotated[int, Depends(current_owner)]
