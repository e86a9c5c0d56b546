"""What the owner's page says about a record, in words: its state, a stop's reason (the
card's `message`, from `transcriber.stops`) and what the owner can do about it. A stop's
own error text (a decoder's message, a path) is the operator's and is not shown here."""

from __future__ import annotations

import datetime as dt
from typing import Any

# reason → what the owner can do about it. What happened is said by `transcriber.stops`,
# in the same words the API's card and `/events` use.
WHAT_TO_DO: dict[str, str] = {
    "empty_file": "Upload the file again: nothing of it arrived.",
    "undecodable_audio": "Check that it is a recording (MP3, M4A, OGG, FLAC, WAV, or a "
    "video with sound) and upload it again; trying this file again cannot help.",
    "no_audio_stream": "Upload the file that has the sound in it (a video with its sound "
    "track, or the recording itself).",
    "empty_audio": "Upload the recording that has the speech in it.",
    "too_long": "Split it into shorter parts and upload those, or ask the operator to "
    "raise TRANSCRIBER_MAX_DURATION_S.",
    "implausible_rate": "Export the recording again at an ordinary sample rate (8, 16, "
    "44.1 or 48 kHz) and upload that.",
    "implausible_duration": "Upload the original recording; this file cannot be what it "
    "claims to be.",
    "audio_quota": "Delete recordings you no longer need, or ask the operator for a "
    "larger quota (TRANSCRIBER_OWNER_MAX_AUDIO_HOURS); then ask them to run "
    "`transcriber resume {id}`.",
    "recognizer_refused_audio": "Ask the operator to look at the speech recognizer, or "
    "upload the recording in another format.",
    "attempts_exhausted": "Ask the operator to look at it (`transcriber stopped` shows "
    "the error), fix the cause and run `transcriber resume {id}`; nothing is lost "
    "meanwhile.",
    "milestone_time_limit": "Ask the operator to look at the service and run "
    "`transcriber resume {id}`; nothing is lost meanwhile.",
}
OTHER_TO_DO = (
    "Ask the operator to look at it and run `transcriber resume {id}` when the "
    "cause is fixed; nothing is lost meanwhile."
)

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
    todo = WHAT_TO_DO.get(stopped["reason"], OTHER_TO_DO)
    return stopped["message"], todo.format(id=card["id"])


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
