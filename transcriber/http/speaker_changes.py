"""The owner's say on who spoke, whichever face it comes through (the API's routes, the
page's forms): a name for a speaker diarization found (`rename`) and a segment, or the
part of one that one speaker says, given to another speaker (`reassign`). Every
rendering of the transcript shows them (`transcriber.http.downloads`)."""

import uuid
from typing import Any

from transcriber.audio.speakers import Turn, part_text
from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.records.archive import transcript
from transcriber.records.speaker_names import (
    WHOLE,
    BadSpeaker,
    check_name,
    choose_speaker,
    default_label,
    name_speaker,
    owner_speakers,
    speaker_number,
)
from transcriber.records.voices import forget_match

NOT_DIARIZED = "the record's speakers were not told apart (speakers off, or not yet)"


async def _diarized(db: Database, owner: int, rid: uuid.UUID) -> dict[str, Any]:
    t = await transcript(db, owner, rid)
    if t is None or t.get("turns") is None:
        raise ApiError(409, NOT_DIARIZED)
    return t


def _found(t: dict[str, Any]) -> set[int]:
    return {turn[2] for turn in t["turns"]}


async def rename(
    db: Database, owner: int, rid: uuid.UUID, label: str, name: str | None, via: str
) -> dict[str, Any]:
    """The owner's `name` for the speaker `label` ("Speaker 2", 2, or its current name)
    of their diarized record: the speaker's label and name now. 404: no such speaker;
    409: not diarized; BadSpeaker: the name refused. Cancellation: reads, then one write."""
    t = await _diarized(db, owner, rid)
    said = await owner_speakers(db, owner, rid)
    try:
        n = speaker_number(label, said.names)
    except BadSpeaker:
        raise ApiError(404, "no such speaker") from None
    if n not in _found(t) | set(said.choices.values()):
        raise ApiError(404, "no such speaker")
    stored = check_name(name or "", n, said.names)
    # The label and whether it has a name now, never the name: the journal is read by
    # operators and outlives the record (as corrections journal only the segment's index).
    detail = {
        "by": "owner",
        "owner_id": owner,
        "via": via,
        "speaker": default_label(n),
        "named": stored is not None,
    }
    await name_speaker(db, owner, rid, n, stored, detail)
    if stored is None:
        # Back to the found label means that, not to a name a voice gave it.
        await forget_match(db, owner, rid, n)
    return {"label": default_label(n), "name": stored or default_label(n)}


async def reassign(
    db: Database,
    owner: int,
    rid: uuid.UUID,
    index: int,
    speaker: str | None,
    via: str,
    word: int = WHOLE,
) -> dict[str, Any]:
    """Segment `index` (of the stored segments) of the owner's diarized record, or its
    part from word `word` (where the speakers change inside it: `part_text`), given to
    `speaker` (a label or a name; None: back to the one found). 404: no such segment or
    part; 409: not diarized; BadSpeaker: no such speaker. Cancellation: reads, then one
    write."""
    t = await _diarized(db, owner, rid)
    if not 0 <= index < len(t["segments"]):
        raise ApiError(404, "no such segment")
    turns = [Turn(*turn) for turn in t["turns"]]
    if word != WHOLE and part_text(t["segments"][index], turns, word) is None:
        raise ApiError(404, "no such part of the segment")
    said = await owner_speakers(db, owner, rid)
    n = None if not speaker else speaker_number(speaker, said.names)
    if n is not None and n not in _found(t) | set(said.choices.values()):
        raise BadSpeaker(f"no speaker {speaker!r} in this recording")
    detail = {
        "by": "owner",
        "owner_id": owner,
        "via": via,
        "segment": index,
        **({"word": word} if word != WHOLE else {}),
    }
    await choose_speaker(
        db,
        owner,
        rid,
        index,
        n,
        {**detail, "speaker": None if n is None else default_label(n)},
        word,
    )
    who = None if n is None else said.names.get(n) or default_label(n)
    return {"segment": index, "speaker": who}
