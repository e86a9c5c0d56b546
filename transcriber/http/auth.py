"""Who is calling: the `Owner` dependency, the owner behind `Authorization: Bearer`."""

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from transcriber.http.deps import Db
from transcriber.http.errors import UNAUTHORIZED, ApiError
from transcriber.http.middleware import OWNER
from transcriber.owners import owner_of_token

bearer = HTTPBearer(auto_error=False, description="the token of `transcriber owner add`")


async def current_owner(
    request: Request,
    db: Db,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> int:
    """The calling owner's id, as `middleware.Guard` found it before the body was read
    (looked up here only for an application without it); 401 without a valid token."""
    owner: int | None = request.scope.get(OWNER)
    if owner is None and credentials is not None:
        owner = await owner_of_token(db, credentials.credentials)
    if owner is None:
        raise ApiError(401, UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
    return owner


Owner = Annotated[int, Depends(current_owner)]
