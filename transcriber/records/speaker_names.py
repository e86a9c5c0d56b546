"""Who spoke, as the owner says: a name for each speaker diarization found ("Speaker 2" →
"Anna") and segments, or parts of one (where the speakers change inside it), moved to
another speaker.

Both are owner fields, as corrections are: only the owner writes them (the page, the API);
the pipeline never does, so a re-run of diarization keeps them. A speaker is its number
(0-based, the turns' `speaker`; "Speaker 1" is 0), a segment its index in the stored
segments (the index corrections use), a part its segment and the index of its first word
(WHOLE: the whole segment). This module holds what a name may be, how the
owner names a speaker, and the queries; transcriber.audio.speakers.assign applies them.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from transcriber.db.database import Database
from transcriber.records.owner_text import refused_in, what_is_held

NAME_MAX = 80
"""Characters of a speaker's name: a person's name, or a role ("Interviewer")."""
SPEAKERS_MAX = 20
"""The most speakers a record may have (the `speakers` option's largest count)."""

_LABEL = re.compile(r"^\s*(?:speaker\s*)?(\d{1,2})\s*$", re.IGNORECASE)


class BadSpeaker(ValueError):
    """The name or speaker cannot be used; the message says why, for the owner, `taken`
    whether it is because another speaker is called so, and `chars` the characters a
    name may not hold that it does (the page's words)."""

    def __init__(self, message: str, *, taken: bool = False, chars: list[str] | None = None):
        super().__init__(message)
        self.taken = taken
        self.chars = chars or []


@attrs.frozen
class OwnerSpeakers:
    """The owner's say on a record's speakers: names by speaker, speakers by (segment,
    first word of the part; WHOLE: the whole segment)."""

    names: dict[int, str] = attrs.field(factory=dict)
    choices: dict[tuple[int, int], int] = attrs.field(factory=dict)


WHOLE = -1
"""The `word` of a whole segment's choice (transcriber.audio.speakers.WHOLE)."""


def default_label(speaker: int) -> str:
    return f"Speaker {speaker + 1}"


def speaker_number(text: str, names: dict[int, str] | None = None) -> int:
    """The speaker `text` names: its label ("Speaker 2", or just "2") or the owner's name
    for it; BadSpeaker otherwise."""
    m = _LABEL.match(text)
    if m and 1 <= int(m.group(1)) <= SPEAKERS_MAX:
        return int(m.group(1)) - 1
    for n, name in (names or {}).items():
        if name == text.strip():
            return n
    raise BadSpeaker(f"no speaker {text!r}: give its label (Speaker 1, Speaker 2, …) or its name")


def check_name(text: str, speaker: int, names: dict[int, str]) -> str | None:
    """The name as stored (spaces trimmed; None: back to the found label), or BadSpeaker.
    One line of plain text, and no other speaker's name or label: two speakers called
    alike could not be told apart in the exports."""
    name = " ".join(text.split())
    if len(name) > NAME_MAX:
        raise BadSpeaker(f"the name is {len(name)} characters long; at most {NAME_MAX}")
    if bad := refused_in(text):
        raise BadSpeaker(
            f"the name contains {what_is_held(bad)}; it is one line of plain text", chars=bad
        )
    if name in ("", default_label(speaker)):
        return None
    m = _LABEL.match(name)
    if m or any(n != speaker and other == name for n, other in names.items()):
        raise BadSpeaker(f"another speaker is called {name!r}", taken=True)
    return name


async def owner_speakers(
    db: Database, owner: int, recording_id: Any, *, voices: bool = True
) -> OwnerSpeakers:
    """The owner's names and choices for their record; with `voices`, a speaker the
    owner did not name is called by the library voice it matched
    (transcriber.records.voices), unless the owner gave that name to another speaker:
    the owner's own names win. Cancellation: plain reads."""
    rows = await db.fetch("owner_speaker_names", owner, recording_id)
    choices = await db.fetch("owner_speaker_choices", owner, recording_id)
    names = {r["speaker"]: r["name"] for r in rows}
    if voices:
        for r in await db.fetch("voice_names", owner, recording_id):
            if r["speaker"] not in names and r["name"] not in names.values():
                names[r["speaker"]] = r["name"]
    return OwnerSpeakers(
        names,
        {(r["segment"], r["word"]): r["speaker"] for r in choices},
    )


async def name_speaker(
    db: Database,
    owner: int,
    recording_id: Any,
    speaker: int,
    name: str | None,
    detail: dict[str, Any],
) -> bool:
    """The owner's `name` (checked by `check_name`; None: the found label again) for
    `speaker` of their record, journaled as `edited` with `detail`; False if the record
    is not theirs. Cancellation: one statement; it committed or did not."""
    return (
        await db.fetchval("speaker_name_set", owner, recording_id, speaker, name, detail)
        is not None
    )


async def choose_speaker(
    db: Database,
    owner: int,
    recording_id: Any,
    segment: int,
    speaker: int | None,
    detail: dict[str, Any],
    word: int = WHOLE,
) -> bool:
    """The owner's `speaker` for `segment` of their record, or for its part from `word`
    (None: the one diarization found; a whole segment's choice drops its parts'),
    journaled like `name_speaker`; False if the record is not theirs. Cancellation: one
    statement."""
    done = await db.fetchval(
        "speaker_choice_set", owner, recording_id, segment, speaker, detail, word
    )
    return done is not None
