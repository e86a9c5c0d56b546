"""Accepting a local file as a recording (the command line's `submit`, the one-shot
`transcribe`): the file goes into the store (transcriber.storage.blobs) under a generated name,
durable, before the record that points at it commits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.options import RecognitionOptions
from transcriber.storage.configured import blobs_of


async def accept_file(
    db: Database,
    config: Config,
    path: Path,
    owner_id: int,
    *,
    language: str | None = None,
    title: str | None = None,
    options: RecognitionOptions | None = None,
) -> Any:
    """Store a local file and create its record at `received`; returns the id.

    Cancellation: a cancel while copying removes the partial copy; once the record
    committed, the recording is accepted.
    """
    store = blobs_of(config)
    ref, size = await store.store_file(path)
    try:
        return await db.fetchval(
            "accept",
            owner_id,
            path.name,
            size,
            ref,
            language,
            title,
            options.to_json() if options else None,
        )
    except asyncpg.PostgresError:
        # The insert surely failed: no record points at the copy. (After a cancel it
        # may have committed, so the copy stays.)
        await store.remove(ref)
        raise
