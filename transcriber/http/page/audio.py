"""A record's normalized audio for the page's player, with HTTP Range support (players
seek by asking for a range), and its waveform's peaks for the editor's overview."""

from __future__ import annotations

import collections
import math
import re
import struct
from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import numpy as np
import trio
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


# --- the waveform's peaks ------------------------------------------------------------

PEAKS = 1000
"""Buckets of a waveform: about one per pixel of a wide screen, a few kilobytes of JSON
however long the recording."""
HEADER_MAX = 4096
PEAK_SCALE = 1000
PEAKS_CACHED = 256
PEAKS_AT_ONCE = 2
"""Waveforms computed at the same time: each reads its whole recording, so a burst of
page views waits here instead of taking every core."""

_peaks_cache: collections.OrderedDict[tuple[Any, ...], dict[str, Any]] = collections.OrderedDict()
_peaks_limit = trio.CapacityLimiter(PEAKS_AT_ONCE)


def wav_data(header: bytes) -> tuple[int, int, int] | None:
    """(sample rate, offset of the samples, their bytes) of a 16-bit mono PCM WAV whose
    first bytes are `header`; None for anything else. The normalized audio is always
    such a file (transcriber.audio.normalize), but its bytes come from a store."""
    if len(header) < 12 or header[:4] != b"RIFF" or header[8:12] != b"WAVE":
        return None
    at, rate, form = 12, None, None
    while at + 8 <= len(header):
        name, size = header[at : at + 4], struct.unpack_from("<I", header, at + 4)[0]
        if name == b"fmt " and at + 24 <= len(header):
            form = struct.unpack_from("<HHIIHH", header, at + 8)
            rate = form[2]
        if name == b"data":
            if form is None or form[0] != 1 or form[1] != 1 or form[5] != 16 or not rate:
                return None
            return rate, at + 8, size
        at += 8 + size + (size & 1)
    return None


async def peaks(audio: Audio, key: tuple[Any, ...], buckets: int = PEAKS) -> dict[str, Any] | None:
    """The waveform of `audio`: `{"duration_s", "peaks"}`, each peak the loudest sample
    of its stretch of time (0..1000 of full scale); None when the audio is not the
    normalized WAV. Read once as a stream (memory stays a chunk and the peaks), kept
    for the next view under `key` (the audio never changes once written).

    Cancellation: a read in progress finishes in its thread; nothing is cached."""
    if (found := _peaks_cache.get(key)) is not None:
        _peaks_cache.move_to_end(key)
        return found
    async with _peaks_limit:
        header = b"".join([c async for c in audio.read(0, min(audio.size, HEADER_MAX) - 1)])
        layout = wav_data(header)
        if layout is None:
            return None
        rate, start, size = layout
        samples = max(0, min(size, audio.size - start)) // 2
        per = max(1, math.ceil(samples / buckets))
        found_peaks: list[int] = []
        pending = bytearray()

        def take(whole: bool) -> None:
            n = len(pending) // (per * 2) * per * 2 if not whole else len(pending) // 2 * 2
            if not n:
                return
            values = np.abs(np.frombuffer(bytes(pending[:n]), "<i2").astype(np.int32))
            full = len(values) // per * per
            if full:
                found_peaks.extend(values[:full].reshape(-1, per).max(axis=1).tolist())
            if len(values) > full:
                found_peaks.append(int(values[full:].max()))
            del pending[:n]

        if samples:
            async for chunk in audio.read(start, start + samples * 2 - 1):
                pending.extend(chunk)
                take(whole=False)
            take(whole=True)
    result = {
        "duration_s": samples / rate,
        "peaks": [min(PEAK_SCALE, round(p * PEAK_SCALE / 32767)) for p in found_peaks],
    }
    _peaks_cache[key] = result
    while len(_peaks_cache) > PEAKS_CACHED:
        _peaks_cache.popitem(last=False)
    return result
