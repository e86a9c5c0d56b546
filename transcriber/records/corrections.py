"""The owner's corrections of a transcript: their text for a segment, or for the part of
one that one speaker says (where the speakers change inside a segment, every rendering
splits it: transcriber.audio.speakers `parts`), shown and exported instead of the
machine's, which stays stored as it was recognized.

A correction is an owner field: only the owner writes it (`correct_segment`, from the
page's script and the API's `PUT …/segments/{index}`); the pipeline never does. This
module holds what the text may be, how it applies, and the queries that read and write
it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from transcriber.db.database import Database
from transcriber.records.owner_text import refused_in, what_is_held
from transcriber.records.speaker_names import WHOLE

CORRECTION_MAX = 2000
"""Characters of one corrected segment: a segment is a sentence or two of speech."""


class BadCorrection(ValueError):
    """The text cannot be a segment's text; the message says why, for the owner, and
    `chars` which characters it may not hold (none: it is too long)."""

    def __init__(self, message: str, chars: list[str] | None = None) -> None:
        super().__init__(message)
        self.chars = chars or []


def check_correction(text: str) -> str:
    """The correction as stored (surrounding spaces trimmed), or BadCorrection naming
    the refused characters (`chars`).

    What an owner's text may not hold is refused (transcriber.records.owner_text), line
    breaks included: a segment is one cue of a subtitle file, where a blank line would
    end the cue and a stray control character breaks players.
    """
    if len(text) > CORRECTION_MAX:
        raise BadCorrection(
            f"the text is {len(text)} characters long; a segment may have at most {CORRECTION_MAX}"
        )
    if bad := refused_in(text):
        raise BadCorrection(
            f"the text contains {what_is_held(bad)}; a segment is a single line of plain text",
            bad,
        )
    return text.strip()


def corrected(
    text: str, segments: Sequence[Mapping[str, Any]], corrections: Mapping[int, str]
) -> tuple[str, list[dict[str, Any]]]:
    """The transcript's text and segments with the owner's corrections applied. A
    corrected segment keeps its times and words and carries `machine_text` (the
    recognizer's) and `corrected: true`. Without corrections, both come back unchanged,
    so the exports of an uncorrected transcript are what they always were."""
    if not corrections:
        return text, [dict(s) for s in segments]
    out = []
    for i, s in enumerate(segments):
        if i in corrections:
            out.append({**s, "text": corrections[i], "machine_text": s["text"], "corrected": True})
        else:
            out.append(dict(s))
    return " ".join(s["text"].strip() for s in out if s["text"].strip()), out


@attrs.frozen
class Corrections:
    """The owner's text of their record: whole segments' by index (`corrected` applies
    them), parts' by (segment, first word) (`parts` applies them)."""

    whole: dict[int, str] = attrs.field(factory=dict)
    parts: dict[tuple[int, int], str] = attrs.field(factory=dict)


async def corrections_of(db: Database, owner: int, recording_id: Any) -> Corrections:
    """The owner's text of their record. Cancellation: a plain read."""
    rows = await db.fetch("owner_corrections", owner, recording_id)
    return Corrections(
        {r["segment"]: r["text"] for r in rows if r["word"] == WHOLE},
        {(r["segment"], r["word"]): r["text"] for r in rows if r["word"] != WHOLE},
    )


async def set_correction(
    db: Database,
    owner: int,
    recording_id: Any,
    segment: int,
    text: str,
    detail: dict[str, Any],
    word: int = WHOLE,
) -> None:
    """The owner's `text` (checked by `check_correction`) for `segment` of their record,
    or for its part from `word`, journaled as `corrected` with origin `human` and
    `detail`. Nothing happens if the record is not theirs. Cancellation: one statement."""
    await db.fetchval("correction_set", owner, recording_id, segment, text, detail, word)


async def clear_correction(
    db: Database,
    owner: int,
    recording_id: Any,
    segment: int,
    detail: dict[str, Any],
    word: int = WHOLE,
) -> None:
    """Back to the machine's text for `segment` of the owner's record (or its part from
    `word`), journaled like `set_correction`. Cancellation: one statement."""
    await db.fetchval("correction_clear", owner, recording_id, segment, detail, word)


class NoSegment(LookupError):
    """The transcript has no segment of that index."""


async def correct_segment(
    db: Database,
    owner: int,
    recording_id: Any,
    segments: Sequence[Mapping[str, Any]],
    index: int,
    text: str | None,
    detail: dict[str, Any],
    *,
    word: int = WHOLE,
    part_text: str | None = None,
) -> dict[str, Any]:
    """The owner's `text` for segment `index` of their record's stored (machine)
    `segments` — or for its part from word `word`, whose machine text `part_text` the
    caller found where the speakers change (`transcriber.audio.speakers.part_text`) —
    the one rule for every face: checked by `check_correction` (BadCorrection), and a
    text that is empty, None or the machine's own restores the machine's (journaled
    with `restored`). NoSegment for an index the transcript does not have. The answer:
    the text now shown, the machine's, and whether it is corrected. Cancellation: one
    statement."""
    if not 0 <= index < len(segments):
        raise NoSegment(f"no segment {index}; the transcript has {len(segments)}")
    machine_text = str(segments[index]["text"]) if part_text is None else part_text
    checked = "" if text is None else check_correction(text)
    if checked in ("", machine_text.strip()):
        restored = {**detail, "restored": True}
        await clear_correction(db, owner, recording_id, index, restored, word)
        return {"text": machine_text, "machine_text": machine_text, "corrected": False}
    await set_correction(db, owner, recording_id, index, checked, detail, word)
    return {"text": checked, "machine_text": machine_text, "corrected": True}
