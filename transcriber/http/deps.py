"""What every router shares, as FastAPI dependencies: the database and the
configuration `create_app` was given (kept on `app.state`)."""

from typing import Annotated

from fastapi import Depends, Request

from transcriber.config import Config
from transcriber.db import Database


def database(request: Request) -> Database:
    return request.app.state.db


def settings(request: Request) -> Config:
    return request.app.state.config


Db = Annotated[Database, Depends(database)]
Settings = Annotated[Config, Depends(settings)]
