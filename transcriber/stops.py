"""What a stop means in plain words, for the owner. The stop's own error text (a
decoder's message, a path in the store, a remote recognizer's answer) is for the
operator only: it stays in the record and its journal (`transcriber stopped`,
`transcriber journal`) and never reaches an owner."""

from __future__ import annotations

from typing import Any


def N_(message: str) -> str:
    """Marks `message` for the page's catalogues (transcriber/http/locales); the page
    shows it translated, the API as it is."""
    return message


MESSAGES = {
    "empty_file": N_("The upload was empty."),
    "undecodable_audio": N_("The file could not be read as audio."),
    "no_audio_stream": N_("The file has no audio in it."),
    "empty_audio": N_("The audio in the file is empty."),
    "too_long": N_("The recording is longer than this service accepts."),
    "implausible_rate": N_(
        "The audio claims a sample rate no real recording has (4 kHz to 384 kHz are accepted)."
    ),
    "implausible_duration": N_(
        "The file decodes to far more audio than a file of its size can hold; it looks "
        "built to fill the disk."
    ),
    "audio_quota": N_(
        "Your recordings already hold as many hours of audio as your quota allows; once "
        "you have deleted some, the operator can resume this one."
    ),
    "recognizer_refused_audio": N_("The speech recognizer could not take this audio."),
    "speaker_model_missing": N_(
        "Telling the speakers apart is not installed on this service; the transcript is "
        "complete without speakers."
    ),
    "attempts_exhausted": N_(
        "Processing failed several times; the operator has been told and can resume it."
    ),
    "milestone_time_limit": N_(
        "Processing took longer than its time limit; the operator can resume it."
    ),
}
OTHER = N_("Processing stopped; the operator can see why and resume it.")

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
