"""Voices named once: an owner's library of voices, each a name and a CAM++ vector (the
unit-length mean of the windows it was taken from). "Remember this voice" takes a found
speaker's voice from one of the owner's diarized records; several recordings may add to
one voice (the same name: the mean weighted by seconds of speech). Every later
diarization of that owner's records names a found speaker after the voice it matches
(sql/0026_voices.sql `name_found_voices`, in the diarize step's commit: one voice to one
speaker, by the rule MATCH), read as a name the owner gave; the owner's own name
for that speaker wins (transcriber.records.speaker_names.owner_speakers).

A voice is biometric data: only while the owner remembers voices (opt-in,
transcriber.records.settings), never journaled, never read by an operator's or a link
holder's query, gone with the owner; deleting a voice deletes its vector and the names
it gave.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg
import attrs

from transcriber.db.database import Database
from transcriber.records.owner_text import refused_in, what_is_held
from transcriber.records.speaker_names import NAME_MAX
from transcriber.records.voices_match import Rule

MATCH = Rule(threshold=0.87, cohort_margin=0.09, top=3)
"""When a found speaker is a library voice (transcriber.records.voices_match says how;
the diarize step's commit does it in SQL, sql/0031): the cosine of the two unit vectors
at least `threshold` (0.87, as before), and more than each side's likeness to a cohort
of outsiders (the mean cosine of its `top` most alike, transcriber.audio.voice_cohort)
by `cohort_margin`. CAM++'s window means are all alike to some degree, and some voices
are alike to many (the real English speaker of samples/ is 0.91-0.94 from espeak-ng's
en-us+m3; the real Russian speaker 0.88 from herself in another recording), so the
cosine alone named strangers. The margin was chosen on bench-speakers' espeak-ng voices
(the largest that names as much of them as the cosine alone did) and judged on the real
people of samples/ and other espeak-ng voices: docs/pipeline.md#voices-named-once."""
MATCH_COSINE = MATCH.threshold
_LABEL = re.compile(r"^\s*(?:speaker\s*)?\d{1,2}\s*$", re.IGNORECASE)
VOICES_MAX = 200
"""Voices one owner keeps."""


class NotRemembering(ValueError):
    """The owner has not turned on remembering voices (their settings)."""


class BadVoice(ValueError):
    """A voice's name cannot be used (`taken`: another voice of the owner has it)."""

    def __init__(self, message: str, *, taken: bool = False) -> None:
        super().__init__(message)
        self.taken = taken


@attrs.frozen
class KeptVoice:
    """A found speaker's voice: its unit vector and the seconds of speech it stands for."""

    vector: tuple[float, ...]
    seconds: float


def check_voice_name(text: Any) -> str:
    """The name as kept (spaces trimmed), or BadVoice: one line, 1 to NAME_MAX."""
    if not isinstance(text, str):
        raise BadVoice("a voice's name is text")
    name = " ".join(text.split())
    if bad := refused_in(text):
        raise BadVoice(f"the name contains {what_is_held(bad)}; it is one line of plain text")
    if not 1 <= len(name) <= NAME_MAX:
        raise BadVoice(f"a voice's name is 1 to {NAME_MAX} characters")
    if _LABEL.match(name):
        # It would name speakers of other records like one of their found labels.
        raise BadVoice(f"{name!r} is a speaker's label; give the voice a person's name")
    return name


def unit(vector: Sequence[float]) -> tuple[float, ...]:
    norm = sum(x * x for x in vector) ** 0.5
    return tuple(x / max(norm, 1e-12) for x in vector)


def merged(old: KeptVoice, new: KeptVoice) -> KeptVoice:
    """The mean of two voices, weighted by their seconds of speech, at unit length."""
    w_old, w_new = max(old.seconds, 1e-3), max(new.seconds, 1e-3)
    return KeptVoice(
        unit([a * w_old + b * w_new for a, b in zip(old.vector, new.vector, strict=True)]),
        old.seconds + new.seconds,
    )


def _shown(row: Mapping[str, Any]) -> dict[str, Any]:
    created: dt.datetime = row["created_at"]
    updated: dt.datetime = row["updated_at"]
    return {
        "id": str(row["id"]),
        "name": row["name"],
        "seconds": round(float(row["seconds"]), 1),
        "recordings": row["recordings"],
        "created_at": created.isoformat(),
        "updated_at": updated.isoformat(),
    }


async def list_voices(db: Database, owner: int) -> list[dict[str, Any]]:
    """The owner's voices, by name, each with how many speakers it names now (never its
    vector). Cancellation: a plain read."""
    return [{**_shown(r), "named": r["named"]} for r in await db.fetch("voices_of_owner", owner)]


async def voice_of(db: Database, owner: int, voice_id: Any) -> dict[str, Any] | None:
    row = await db.fetchrow("voice_of_owner", owner, voice_id)
    return None if row is None else _shown(row)


async def kept_voice(db: Database, owner: int, rid: Any, speaker: int) -> KeptVoice | None:
    """The voice of `speaker` kept of the owner's record when it was diarized (None: not
    kept: diarized while voices were not remembered). Cancellation: a plain read."""
    row = await db.fetchrow("record_voice", owner, rid, speaker)
    return None if row is None else KeptVoice(tuple(row["vector"]), float(row["seconds"]))


async def remember(
    db: Database,
    owner: int,
    name: str,
    heard: KeptVoice,
    voice_id: uuid.UUID | None = None,
    source: tuple[Any, int] | None = None,
) -> tuple[dict[str, Any], bool] | None:
    """`heard` kept as the owner's voice `name` (checked by `check_voice_name`): added
    to the voice of that name, or to `voice_id` when given (None when it is not theirs),
    else a new one; `source`, the (record, speaker) it was heard in, is named after it
    at once. The voice as shown, and whether it is new. BadVoice when the owner has
    VOICES_MAX already. Cancellation: reads, then one statement each; a voice changed by
    another request meanwhile is read again (the last write adds to the first's)."""
    done = await _remember(db, owner, name, heard, voice_id)
    if done is not None and source is not None:
        await name_after(db, owner, source[0], source[1], uuid.UUID(done[0]["id"]))
    return done


async def name_after(db: Database, owner: int, rid: Any, speaker: int, voice_id: Any) -> None:
    """Speaker `speaker` of the owner's record named by their voice `voice_id` (the
    speaker's earlier match, and the voice's of another speaker there, go). Cancellation:
    one transaction."""

    async def work(con: asyncpg.Connection) -> None:
        async with con.transaction():
            await con.execute(db.sql("voice_match_clear"), owner, rid, speaker, voice_id)
            await con.execute(db.sql("voice_match_set"), owner, rid, speaker, voice_id)

    await db.run(work)


async def forget_match(db: Database, owner: int, rid: Any, speaker: int) -> None:
    """The name a voice gave `speaker` of the owner's record, gone: the owner gave the
    speaker its found label back. Cancellation: one statement."""
    await db.execute("voice_match_forget", owner, rid, speaker)


async def _remember(
    db: Database,
    owner: int,
    name: str,
    heard: KeptVoice,
    voice_id: uuid.UUID | None,
) -> tuple[dict[str, Any], bool] | None:
    for _ in range(5):
        row = (
            await db.fetchrow("voice_of_owner", owner, voice_id)
            if voice_id is not None
            else await db.fetchrow("voice_named", owner, name)
        )
        if row is None and voice_id is not None:
            return None
        if row is None:
            made = await db.fetchval(
                "voice_add", owner, name, list(unit(heard.vector)), heard.seconds, VOICES_MAX
            )
            if made is not None:
                return await _read(db, owner, made), True
            if await db.fetchrow("voice_named", owner, name) is None:
                raise BadVoice(f"at most {VOICES_MAX} voices; delete one first")
            continue  # the name was taken meanwhile: add to that voice
        old = KeptVoice(tuple(row["vector"]), float(row["seconds"]))
        new = merged(old, heard)
        done = await db.fetchval(
            "voice_update", owner, row["id"], list(new.vector), new.seconds, row["vector"]
        )
        if done is not None:
            return await _read(db, owner, done), False
    raise BadVoice("the voice kept changing meanwhile; send it again")


async def _read(db: Database, owner: int, voice_id: Any) -> dict[str, Any]:
    shown = await voice_of(db, owner, voice_id)
    assert shown is not None
    return shown


async def rename_voice(db: Database, owner: int, voice_id: Any, name: str) -> dict[str, Any] | None:
    """The owner's voice called `name` (every speaker it named is called so now); None
    when not theirs; BadVoice(taken) when another of theirs has it. Cancellation: one
    statement."""
    try:
        done = await db.fetchval("voice_rename", owner, voice_id, name)
    except asyncpg.UniqueViolationError:
        raise BadVoice(f"another voice is called {name!r}", taken=True) from None
    return None if done is None else await _read(db, owner, done)


async def delete_voice(db: Database, owner: int, voice_id: Any) -> bool:
    """The owner's voice gone, its vector and the names it gave with it; False when not
    theirs. Cancellation: one statement."""
    return await db.fetchval("voice_delete", owner, voice_id) is not None


def found_voices(voices: Mapping[int, Sequence[float]], turns: Sequence[Any]) -> list[Any]:
    """A diarization's found voices as the diarize step's save takes them:
    [speaker, vector, seconds of their turns] each (`turns`: [start, end, speaker])."""
    seconds: dict[int, float] = {}
    for start, end, speaker in turns:
        seconds[speaker] = seconds.get(speaker, 0.0) + end - start
    return [[s, list(v), round(seconds.get(s, 0.0), 3)] for s, v in sorted(voices.items())]


def saved_voices(
    turns: Sequence[Any],
    speakers: int,
    voices: Mapping[int, Sequence[float]],
    cohort: Sequence[Sequence[float]] = (),
) -> tuple[Any, ...]:
    """The arguments of the diarize step's save (`save_speakers_voices`), as the step
    gives them (transcriber.pipeline.audio_steps): the turns ([start, end, speaker]
    each), the count, the found voices, and the match's rule with its cohort
    (transcriber.audio.voice_cohort; none: the cosine alone decides)."""
    assert MATCH.cohort_margin is not None
    return (
        turns,
        speakers,
        found_voices(voices, turns),
        MATCH.threshold,
        MATCH.cohort_margin,
        [list(v) for v in cohort],
        MATCH.top,
    )
