"""What the owner's page says about a record, in words: its state, a stop's reason and
what the owner can do about it. A stop's own error text (a decoder's message, a path)
is the operator's and is not shown here."""

from __future__ import annotations

import datetime as dt
from typing import Any

# reason → (what happened, what the owner can do)
STOP_REASONS: dict[str, tuple[str, str]] = {
    "undecodable_audio": (
        "The file could not be read as audio.",
        "Check that it is a recording (MP3, M4A, OGG, FLAC, WAV, or a video with sound) "
        "and upload it again; trying this file again cannot help."),
    "empty_audio": (
        "The file holds no sound: its audio decodes to nothing.",
        "Upload the recording that has the speech in it."),
    "too_long": (
        "The recording is longer than this service accepts.",
        "Split it into shorter parts and upload those, or ask the operator to raise "
        "TRANSCRIBER_MAX_DURATION_S."),
    "attempts_exhausted": (
        "Processing failed every time it was tried.",
        "Ask the operator to look at it (`transcriber stopped` shows the error), fix the "
        "cause and run `transcriber resume {id}`; nothing is lost meanwhile."),
    "milestone_time_limit": (
        "Processing took longer than its time limit.",
        "Ask the operator to look at the service and run `transcriber resume {id}`; "
        "nothing is lost meanwhile."),
}
UNKNOWN_STOP = ("Processing stopped.",
                "Ask the operator to look at it and run `transcriber resume {id}` when the "
                "cause is fixed; nothing is lost meanwhile.")

STATES = ("working", "transcribed", "stopped")


def state_of(card: dict[str, Any]) -> str:
    if card["stopped"] is not None:
        return "stopped"
    return "transcribed" if card["done"] else "working"


def stop_words(card: dict[str, Any]) -> tuple[str, str] | None:
    """(what happened, what to do) for a stopped record, else None."""
    stopped = card["stopped"]
    if stopped is None:
        return None
    what, todo = STOP_REASONS.get(stopped["reason"], UNKNOWN_STOP)
    return what, todo.format(id=card["id"])


def progress_words(card: dict[str, Any]) -> str:
    """Where a record stands, for its row and its page."""
    state = state_of(card)
    if state == "stopped":
        return f"Stopped at {card['milestone']}"
    if state == "transcribed":
        return "Transcribed"
    if card["milestone"] == "received":
        return "Reading the audio"
    if card["progress"] is not None:
        return f"Transcribing, {round(card['progress'] * 100)}%"
    return "Waiting to be transcribed"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = round(seconds)
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def clock(seconds: float) -> str:
    """A segment's start: m:ss.s (h:mm:ss past an hour)."""
    if seconds >= 3600:
        return duration(seconds)
    m, s = divmod(seconds, 60)
    return f"{int(m)}:{s:04.1f}"


def when(iso: str | dt.datetime) -> str:
    at = dt.datetime.fromisoformat(iso) if isinstance(iso, str) else iso
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def size(n: int | None) -> str:
    if n is None:
        return "—"
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)
