"""What a stop means in plain words, for the owner. The stop's own error text (a
decoder's message, a path in the store, a remote recognizer's answer) is for the
operator only: it stays in the record and its journal (`transcriber stopped`,
`transcriber journal`) and never reaches an owner."""

from __future__ import annotations

from typing import Any

MESSAGES = {
    "empty_file": "The upload was empty.",
    "undecodable_audio": "The file could not be read as audio.",
    "no_audio_stream": "The file has no audio in it.",
    "empty_audio": "The audio in the file is empty.",
    "too_long": "The recording is longer than this service accepts.",
    "recognizer_refused_audio": "The speech recognizer could not take this audio.",
    "speaker_model_missing": "Telling the speakers apart is not installed on this service; "
    "the transcript is complete without speakers.",
    "attempts_exhausted": "Processing failed several times; the operator has been told "
    "and can resume it.",
    "milestone_time_limit": "Processing took longer than its time limit; the operator "
    "can resume it.",
}
OTHER = "Processing stopped; the operator can see why and resume it."

# Detail keys of a journal event that are the operator's: internal text (an error, a
# path in the store) and internal ids.
INTERNAL_DETAIL = frozenset({"error", "owner_id"})


def stop_message(reason: str | None) -> str:
    """The owner's words for a stop `reason`."""
    return MESSAGES.get(reason or "", OTHER)


def owner_detail(detail: dict[str, Any]) -> dict[str, Any]:
    """An event's detail as the owner reads it: without internal text, and a stop's
    reason explained."""
    shown = {k: v for k, v in detail.items() if k not in INTERNAL_DETAIL}
    if "reason" in shown:
        shown["message"] = stop_message(shown["reason"])
    return shown
