"""What every router shares, as FastAPI dependencies: the database and the
configuration `create_app` was given (kept on `app.state`).

Both are `async def` though they await nothing: FastAPI runs a plain `def` dependency in
a worker thread, two thread trips on every request for an attribute lookup."""

from typing import Annotated

from fastapi import Depends, Request

from transcriber.config import Config
from transcriber.db.database import Database


async def database(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


async def settings(request: Request) -> Config:
    config: Config = request.app.state.config
    return config


Db = Annotated[Database, Depends(database)]
Settings = Annotated[Config, Depends(settings)]
