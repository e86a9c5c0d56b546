"""Accepting a recording: the file goes into the store under a generated name, on
disk and fsynced, before the record that points at it commits."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any, BinaryIO

import asyncpg
import trio

from transcriber.db import Database
from transcriber.options import RecognitionOptions

CHUNK = 1 << 20


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def copy_into_store(src: BinaryIO, uploads: Path) -> tuple[Path, int]:
    """Stream `src` into a new file under `uploads`; return its path and size. The
    client's name is never used as a path, so nothing can escape the store."""
    uploads.mkdir(parents=True, exist_ok=True)
    dest = uploads / uuid.uuid4().hex
    size = 0
    try:
        with open(dest, "xb") as out:
            while chunk := src.read(CHUNK):
                out.write(chunk)
                size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        fsync_dir(uploads)
    except BaseException:
        dest.unlink(missing_ok=True)
        raise
    return dest, size


async def accept_file(db: Database, uploads: Path, path: Path, owner_id: int, *,
                      language: str | None = None, title: str | None = None,
                      options: RecognitionOptions | None = None) -> Any:
    """Store a local file and create its record at `received`; returns the id.

    Cancellation: a cancel while copying removes the partial file; once the record
    committed, the recording is accepted.
    """
    def copy() -> tuple[Path, int]:
        with open(path, "rb") as src:
            return copy_into_store(src, uploads)

    stored, size = await trio.to_thread.run_sync(copy)
    try:
        return await db.fetchval("accept", owner_id, path.name, size, str(stored), language,
                                 title, options.to_json() if options else None)
    except asyncpg.PostgresError:
        # The insert surely failed: no record points at the file. (After a cancel it
        # may have committed, so the file stays.)
        stored.unlink(missing_ok=True)
        raise
