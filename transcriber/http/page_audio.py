"""A record's normalized audio for the page's player, with HTTP Range support (players
seek by asking for a range)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.records.archive import audio_ref
from transcriber.storage.configured import blobs_of

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@attrs.frozen
class Audio:
    """Audio that can be read in byte ranges."""

    size: int
    media_type: str
    read: Callable[[int, int], AsyncIterator[bytes]]
    """`read(start, end)`: bytes start..end (inclusive), in chunks."""


async def open_audio(db: Database, config: Config, owner: int, recording_id: Any) -> Audio | None:
    """The owner's record's normalized audio (16 kHz mono WAV), or None while there is
    none (or the record is not theirs).

    The page reads audio only through this function, so where audio lives (the local
    folder or an object store, transcriber.storage.blobs) is decided here alone.
    Cancellation: a read in progress finishes in its thread; nothing to undo.
    """
    where = await audio_ref(db, owner, recording_id)
    if where is None:
        return None
    store = blobs_of(config)
    size = await store.size(where)
    if size is None:
        return None

    def read(start: int, end: int) -> AsyncIterator[bytes]:
        return store.read_range(where, start, end)

    return Audio(size, "audio/wav", read)


UNSATISFIABLE = "unsatisfiable"


def byte_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """(start, end) of a single `Range: bytes=…` request; None for the whole file (no
    header, or one this does not serve, which HTTP lets a server ignore); "unsatisfiable"
    for a range outside the file."""
    if not header:
        return None
    m = _RANGE.fullmatch(header.strip())
    if m is None or (not m.group(1) and not m.group(2)):
        return None
    if not m.group(1):  # the last N bytes
        n = _position(m.group(2))
        return (max(0, size - n), size - 1) if n > 0 and size > 0 else "unsatisfiable"
    start = _position(m.group(1))
    end = min(_position(m.group(2)), size - 1) if m.group(2) else size - 1
    if start >= size or start > end:
        return "unsatisfiable"
    return start, end


POSITION_DIGITS = 18
"""Digits of a byte position read as they are: more name a position past any file."""


def _position(digits: str) -> int:
    # int() of thousands of digits is refused (ValueError), and slow before that.
    return int(digits) if len(digits) <= POSITION_DIGITS else 10**POSITION_DIGITS


AUDIO_HEADERS = {
    "Accept-Ranges": "bytes",
    "Cache-Control": "private, max-age=3600",
    "X-Content-Type-Options": "nosniff",
    # Opened by itself, the audio is a document of its own: the browser's player only.
    "Content-Security-Policy": "default-src 'none'; media-src 'self'; sandbox",
}


def audio_response(request: Request, audio: Audio) -> Response:
    """The whole audio (200) or the range asked for (206); 416 for a range outside it."""
    headers = dict(AUDIO_HEADERS)
    wanted = byte_range(request.headers.get("range"), audio.size)
    if isinstance(wanted, str):  # UNSATISFIABLE
        return Response(
            status_code=416, headers={**headers, "Content-Range": f"bytes */{audio.size}"}
        )
    start, end = (0, audio.size - 1) if wanted is None else wanted
    headers["Content-Length"] = str(end - start + 1)
    if wanted is not None:
        headers["Content-Range"] = f"bytes {start}-{end}/{audio.size}"
    body = audio.read(start, end) if request.method != "HEAD" else _nothing()
    return StreamingResponse(
        body,
        status_code=200 if wanted is None else 206,
        media_type=audio.media_type,
        headers=headers,
    )


async def _nothing() -> AsyncIterator[bytes]:
    empty: list[bytes] = []
    for chunk in empty:
        yield chunk
