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
        "Split it into shorter parts and upload those, or ask the operator to raise "
        "TRANSCRIBER_MAX_DURATION_S."
    ),
    "implausible_rate": N_(
        "Export the recording again at an ordinary sample rate (8, 16, 44.1 or 48 kHz) "
        "and upload that."
    ),
    "implausible_duration": N_(
        "Upload the original recording; this file cannot be what it claims to be."
    ),
    "audio_quota": N_(
        "Delete recordings you no longer need, or ask the operator for a larger quota "
        "(TRANSCRIBER_OWNER_MAX_AUDIO_HOURS); then ask them to run "
        "`transcriber resume %(id)s`."
    ),
    "recognizer_refused_audio": N_(
        "Ask the operator to look at the speech recognizer, or upload the recording in "
        "another format."
    ),
    "attempts_exhausted": N_(
        "Ask the operator to look at it (`transcriber stopped` shows the error), fix the "
        "cause and run `transcriber resume %(id)s`; nothing is lost meanwhile."
    ),
    "milestone_time_limit": N_(
        "Ask the operator to look at the service and run `transcriber resume %(id)s`; "
        "nothing is lost meanwhile."
    ),
}
OTHER_TO_DO = N_(
    "Ask the operator to look at it and run `transcriber resume %(id)s` when the cause is "
    "fixed; nothing is lost meanwhile."
)

STATES = ("working", "transcribed", "stopped")
STATE_WORDS = {
    "working": N_("Working"),
    "transcribed": N_("Transcribed"),
    "stopped": N_("Stopped"),
}
MILESTONE_WORDS = {
    "received": N_("received"),
    "normalized": N_("normalized"),
    "transcribed": N_("transcribed"),
}
# A journal event's kind, as the owner reads it; a kind not named here is shown as it is.
EVENT_WORDS = {
    "accepted": N_("accepted"),
    "milestone_reached": N_("milestone reached"),
    "attempt_failed": N_("attempt failed"),
    "lease_lost": N_("lease lost"),
    "released": N_("released"),
    "stopped": N_("stopped"),
    "resumed": N_("resumed"),
    "corrected": N_("corrected"),
    "edited": N_("edited"),
    "share_revoked": N_("share link revoked"),
}
ORIGIN_WORDS = {"pipeline": N_("pipeline"), "human": N_("human")}


def words_of(lang: Lang, table: dict[str, str], key: str) -> str:
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
    return lang.gettext(stop_message(stopped["reason"])), todo % {"id": card["id"]}


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
