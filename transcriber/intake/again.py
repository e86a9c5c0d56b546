"""Transcribing a recording again with other options (a language, who spoke, the task):
the owner's answer to a stop that another language may fix, or to a transcript made
with the wrong one.

It makes a *new* record from the same uploaded file, through the intake like any
upload, rather than sending the old record back through the pipeline: a record reaches
each milestone once (the journal proves it), its transcript, corrections and speaker
names stay what they were, and the owner compares the two and deletes the one not
wanted. The new record has the old one's file name and title; the old one's journal
says which record it became (`transcribed_again`, origin `human`), and its page links
it. The owner's quota counts the copy, as it would a second upload."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from transcriber.db.database import Database
from transcriber.intake.accepting import Accepted, accept
from transcriber.intake.refusals import Refused
from transcriber.intake.room import Limits
from transcriber.intake.sink import Described, Sink
from transcriber.options import RecognitionOptions
from transcriber.storage.blobs import Blobs


class NotFinished(Refused):
    """The record is still being transcribed: it is asked for again once it is done or
    stopped (two attempts at once would only race for the same workers)."""


class Unchanged(Refused):
    """Nothing asked differs from the record's own options: the same attempt again is
    the operator's resume, not a new record."""


class SourceGone(Refused):
    """The uploaded file is no longer in the store (being deleted meanwhile)."""


@attrs.frozen
class Asked:
    """What the new attempt changes: a language hint (None: detect it), and the
    recognition options, whole."""

    language: str | None
    options: RecognitionOptions


async def again_source(db: Database, owner: int, recording_id: uuid.UUID) -> Any:
    """The owner's record as `transcribe_again` starts from it (filename, title,
    source_path, size_bytes, language, options, finished), or None when it is not
    theirs. Cancellation: a plain read."""
    return await db.fetchrow("again_source", owner, recording_id)


async def transcribe_again(
    db: Database,
    blobs: Blobs,
    owner: int,
    recording_id: uuid.UUID,
    asked: Asked,
    *,
    via: str,
    limits: Limits,
    key: str | None = None,
) -> Accepted | None:
    """A new record of `owner`'s finished record `recording_id`'s uploaded file, to be
    recognized as `asked` says; None when the record is not the owner's. Refused as
    NotFinished, Unchanged, SourceGone, or as any upload is (the owner's quota: NoRoom).
    `key`: the owner's Idempotency-Key (the page sends one per form shown), so a second
    press of the same form names the first new record; without one, each call is a new
    attempt. Cancellation: as `accept`; the journal event on the old record is written
    after the new one commits (a cancel in between leaves the new record without it)."""
    source = await again_source(db, owner, recording_id)
    if source is None:
        return None
    if not source["finished"]:
        raise NotFinished(
            "the recording is still being transcribed; ask again once it is done or stopped"
        )
    stored = RecognitionOptions.from_json(source["options"])
    if asked.language == source["language"] and asked.options == stored:
        raise Unchanged(
            "nothing differs from how it was transcribed: change the language, the "
            "speakers or the task"
        )
    ref, size = source["source_path"], source["size_bytes"]

    async def copy(sink: Sink) -> Described:
        if await blobs.size(ref) != size:
            raise SourceGone("the recording's file is no longer there")
        async for chunk in blobs.read_range(ref, 0, size - 1):
            await sink.write(chunk)
        return Described(source["filename"], source["title"], asked.language, asked.options)

    got = await accept(db, blobs, owner, copy, via=via, limits=limits, key=key, dedupe=False)
    if got.created:
        await db.fetchval("journal_again", owner, recording_id, str(got.id), via)
    return got
