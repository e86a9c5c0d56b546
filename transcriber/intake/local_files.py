"""Accepting a local file as a recording (the command line's `submit`, the one-shot
`transcribe`, and next the watched folders): through the same intake as an upload, by
the operator of this host, so without the owner's bounds and without folding the same
file sent twice into one record (sending it again is asking for a second
transcription)."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake.accepting import accept
from transcriber.intake.sink import Described, Sink
from transcriber.options import RecognitionOptions
from transcriber.storage.blobs import CHUNK
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
) -> uuid.UUID:
    """Store a local file and create its record at `received`; returns the id.

    Cancellation: a cancel while copying removes the partial copy; once the record
    committed, the recording is accepted (see `accept`).
    """

    async def copy(sink: Sink) -> Described:
        async with await trio.open_file(path, "rb") as f:
            while chunk := await f.read(CHUNK):
                await sink.write(chunk)
        return Described(path.name, title, language, options or RecognitionOptions())

    accepted = await accept(db, blobs_of(config), owner_id, copy, via="cli", dedupe=False)
    return accepted.id
