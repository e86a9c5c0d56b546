"""What the owner's page says about a record, in words: its state, a stop's reason (in
the words of `transcriber.stops`) and what the owner can do about it, in the reader's
language (`transcriber.http.i18n`). A stop's own error text (a decoder's message, a
path) is the operator's and is not shown here."""

from __future__ import annotations

from typing import Any

from transcriber.http.i18n import N_, Lang
from transcriber.stops import stop_message

# reason → what the owner can do about it. What happened is said by `transcriber.stops`,
# in the same words the API's card and `/events` use.
WHAT_TO_DO: dict[str, str] = {
    "empty_file": N_("Upload the file again: nothing of it arrived."),
    "undecodable_audio": N_(
        "Check that it is a recording (MP3, M4A, OGG, FLAC, WAV, or a video with sound) "
        "and upload it again; trying this file again cannot help."
    ),
    "no_audio_stream": N_(
        "Upload the file that has the sound in it (a video with its sound track, or the "
        "recording itself)."
    ),
    "empty_audio": N_("Upload the recording that has the speech in it."),
    "too_long": N_(
        "Split it into shorter parts and upload those; the service's operator sets how long "
        "a recording may be."
    ),
    "implausible_rate": N_(
        "Export the recording again at an ordinary sample rate (8, 16, 44.1 or 48 kHz) "
        "and upload that."
    ),
    "implausible_duration": N_(
        "Upload the original recording; this file cannot be what it claims to be."
    ),
    "audio_quota": N_(
        "Delete recordings you no longer need, or ask the service's operator for a larger "
        "quota; the operator can then resume this one. Nothing is lost meanwhile."
    ),
    "recognizer_refused_audio": N_(
        "Transcribe it again with another language (below), upload the recording in "
        "another format, or ask the service's operator to look at the speech recognizer."
    ),
    "speaker_model_missing": N_(
        "Nothing: the transcript is complete and yours to read and download; only who spoke "
        "is not marked."
    ),
    "attempts_exhausted": N_(
        "Wait for the service's operator, who has been told and can resume it once the "
        "cause is fixed; nothing is lost meanwhile. If the language or the speakers were "
        "wrong, transcribe it again with others (below); if the recording itself may be "
        "at fault, upload it again in another format."
    ),
    "milestone_time_limit": N_(
        "Wait for the service's operator, who can resume it; nothing is lost meanwhile. "
        "Or transcribe it again with other options (below)."
    ),
}
OTHER_TO_DO = N_(
    "Wait for the service's operator, who can see why and resume it; nothing is lost meanwhile."
)
AGAIN_HELPS_NOT = frozenset(
    {
        "empty_file",
        "undecodable_audio",
        "no_audio_stream",
        "empty_audio",
        "too_long",
        "implausible_rate",
        "implausible_duration",
        "audio_quota",
    }
)
"""Stops that another language, speakers or task cannot help: the file itself (or the
owner's quota) is the cause, so the record page offers no "transcribe again"."""


def again_helps(card: dict[str, Any]) -> bool:
    """Whether the record page offers to transcribe the record again with other
    options: it is transcribed, or stopped for a reason other options may cure."""
    if card["stopped"] is not None:
        return card["stopped"]["reason"] not in AGAIN_HELPS_NOT
    return bool(card["done"])


# What was under way when a record stopped, by the milestone it had reached.
STOPPED_WHILE = {
    "received": N_("Stopped while preparing the audio"),
    "normalized": N_("Stopped while transcribing"),
    "recognized": N_("Stopped while finding the speakers; the transcript is complete"),
}

STATES = ("working", "transcribed", "stopped")
STATE_WORDS = {
    "working": N_("Working"),
    "transcribed": N_("Transcribed"),
    "stopped": N_("Stopped"),
}
# A journal event as the owner reads it: what happened to their recording, not the
# pipeline's own terms (the operator's screen and the CLI keep those). Keyed by kind,
# or by (kind, what it reached) where one kind says several things.
EVENT_WORDS = {
    "accepted": N_("Uploaded"),
    ("accepted", "live"): N_("Live session started"),
    "live_ended": N_("Live session ended; queued for the transcript"),
    # Why it ended (transcriber.live.endings): a reason without words here reads as the
    # line above.
    ("live_ended", "closed"): N_("Live session closed by its client; queued for the transcript"),
    ("live_ended", "dropped"): N_(
        "Live session's connection was lost; what arrived is queued for the transcript"
    ),
    ("live_ended", "idle"): N_(
        "Live session ended: its client sent nothing for too long; queued for the transcript"
    ),
    ("live_ended", "too_long"): N_(
        "Live session reached the longest recording allowed; queued for the transcript"
    ),
    ("live_ended", "quota"): N_("Live session filled your quota; queued for the transcript"),
    ("live_ended", "revoked"): N_(
        "Live session ended: its token or page session stopped working; queued for the transcript"
    ),
    ("live_ended", "storage_failed"): N_(
        "Live session ended: the server could not store more of its audio; what it kept "
        "is queued for the transcript"
    ),
    ("live_ended", "shutdown"): N_(
        "Live session ended as the server stopped; queued for the transcript"
    ),
    ("live_ended", "taken_over"): N_(
        "Live session's server was lost; another server queued it for the transcript"
    ),
    ("milestone_reached", "normalized"): N_("Audio prepared"),
    ("milestone_reached", "recognized"): N_("Transcribed; finding the speakers next"),
    ("milestone_reached", "transcribed"): N_("Transcribed"),
    ("milestone_reached", "diarized"): N_("Speakers found"),
    "attempt_failed": N_("A try failed; it will be tried again"),
    "lease_lost": N_("Interrupted; it will be taken up again"),
    "released": N_("Interrupted; it will be taken up again"),
    "stopped": N_("Stopped"),
    "resumed": N_("Resumed by the service's operator"),
    "corrected": N_("Text corrected"),
    ("edited", "fields"): N_("Title, summary or topics edited"),
    ("edited", "named"): N_("Speaker renamed"),
    ("edited", "speaker"): N_("Speaker of a segment changed"),
    "edited": N_("Edited"),
    "share_revoked": N_("Share link revoked"),
    "transcribed_again": N_("Transcribed again as a new recording"),
    "deleted": N_("Deleted"),
}


def event_key(event: dict[str, Any]) -> Any:
    """Which of EVENT_WORDS says `event` (its kind where nothing finer is known)."""
    kind, detail = event["kind"], event.get("detail") or {}
    if kind == "milestone_reached":
        reached = event.get("milestone")
        if reached == "transcribed" and detail.get("step") == "diarize":
            reached = "diarized"
        return (kind, reached)
    if kind == "accepted" and detail.get("via") == "live":
        return (kind, "live")
    if kind == "live_ended" and isinstance(detail.get("reason"), str):
        return (kind, detail["reason"])
    if kind == "edited":
        for key in ("fields", "named", "speaker"):
            if key in detail:
                return (kind, key)
    return kind


def event_words(lang: Lang, event: dict[str, Any]) -> str:
    """The owner's words for a journal event."""
    key = event_key(event)
    if key not in EVENT_WORDS and isinstance(key, tuple):
        key = key[0]
    if key in EVENT_WORDS:
        return lang.gettext(EVENT_WORDS[key])
    return str(key).replace("_", " ").capitalize()


def words_of(lang: Lang, table: dict[Any, str], key: str) -> str:
    return lang.gettext(table[key]) if key in table else key.replace("_", " ")


def state_of(card: dict[str, Any]) -> str:
    if card["stopped"] is not None:
        return "stopped"
    return "transcribed" if card["done"] else "working"


def stop_words(lang: Lang, card: dict[str, Any]) -> tuple[str, str] | None:
    """(what happened, what to do) for a stopped record, else None."""
    stopped = card["stopped"]
    if stopped is None:
        return None
    todo = lang.gettext(WHAT_TO_DO.get(stopped["reason"], OTHER_TO_DO))
    return lang.gettext(stop_message(stopped["reason"])), todo


def stopped_while(lang: Lang, card: dict[str, Any]) -> str:
    """What was under way when the record stopped."""
    return lang.gettext(STOPPED_WHILE.get(card["milestone"], STATE_WORDS["stopped"]))


def progress_words(lang: Lang, card: dict[str, Any]) -> str:
    """Where a record is, for its row and its page: queued (with how many are ahead),
    the step at work (transcribing with its percentage once the recognizer reported
    one), done, or stopped."""
    _ = lang.gettext
    state = card["state"]
    if state == "stopped":
        return _("Stopped")
    if state == "done":
        return _("Transcribed")
    if state == "live":
        return _("Live: recording")
    if state == "queued":
        ahead = card.get("queue_ahead")
        if ahead is None:
            return _("Queued")
        if ahead == 0:
            return _("Queued, next in line")
        return lang.ngettext(
            "Queued, %(count)d recording ahead", "Queued, %(count)d recordings ahead", ahead
        ) % {"count": ahead}
    percent = None if card["progress"] is None else round(card["progress"] * 100)
    if state == "normalizing":
        return _("Preparing the audio")
    if state == "finding_speakers":
        if percent is None:
            return _("Finding the speakers")
        return _("Finding the speakers, %(percent)d%%") % {"percent": percent}
    if percent is None:
        return _("Transcribing")
    return _("Transcribing, %(percent)d%%") % {"percent": percent}
