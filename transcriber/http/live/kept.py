"""A live session kept: when its socket closes, however it closes, the session's whole
audio becomes a record of its owner through the intake (journaled `accepted` with
`via: live`), at `received` like an upload, and the pipeline transcribes it with the
whole context.

The audio waits for that in a temporary file on disk (appended as it arrives, so a
session's memory stays bounded by its turn), not yet in the store: a daemon that dies
during a session loses it. Writing it into the store as it arrives, under a lease
another daemon can take, is the next step (DESIGN: "Live sessions are records from
their first second")."""

from __future__ import annotations

import struct
import tempfile
import uuid
from typing import Any

import trio

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import Described, Limits, Sink, accept
from transcriber.options import RecognitionOptions
from transcriber.storage.blobs import CHUNK
from transcriber.storage.configured import blobs_of


def wav_header(data_bytes: int, rate: int) -> bytes:
    """A RIFF/WAVE header of 16-bit mono PCM at `rate` with `data_bytes` of samples."""
    return b"".join(
        (
            b"RIFF",
            struct.pack("<I", 36 + data_bytes),
            b"WAVE",
            b"fmt ",
            struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16),
            b"data",
            struct.pack("<I", data_bytes),
        )
    )


class Spool:
    """The session's audio so far, in a temporary file (removed when closed)."""

    def __init__(self) -> None:
        self.file: Any = None
        self.size = 0

    async def write(self, pcm: bytes) -> None:
        if self.file is None:
            self.file = trio.wrap_file(await trio.to_thread.run_sync(tempfile.TemporaryFile))
        await self.file.write(pcm)
        self.size += len(pcm)

    async def aclose(self) -> None:
        if self.file is not None:
            await self.file.aclose()


async def keep(
    db: Database,
    config: Config,
    owner: int,
    spool: Spool,
    rate: int,
    language: str | None,
    prompt: str | None,
) -> uuid.UUID | None:
    """The record of the session's audio, or None for a session that sent none.

    Cancellation: before the intake's commit nothing is kept (the caller shields this
    with a deadline, so a client's going away does not cancel it)."""
    if spool.file is None or spool.size == 0:
        return None

    async def fill(sink: Sink) -> Described:
        await sink.write(wav_header(spool.size, rate))
        await spool.file.seek(0)
        while chunk := await spool.file.read(CHUNK):
            await sink.write(chunk)
        return Described("live.wav", None, language, RecognitionOptions(prompt=prompt))

    # The session's own bound already holds its size; the owner's quota and the disk's
    # room are the intake's to measure.
    limits = Limits.of(config, max_bytes=len(wav_header(0, rate)) + spool.size)
    accepted = await accept(
        db, blobs_of(config), owner, fill, via="live", limits=limits, dedupe=False
    )
    return accepted.id
