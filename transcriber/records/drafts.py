"""Recognition drafts: the pieces of text recognition has heard so far of a record it
is working on, kept while the step runs so that a streamed OpenAI answer
(`stream=true`) can send them as they come (sql/0028_recognition_drafts.sql).

Written by the recognize step's holder only, fenced by its claim token; a draft is never
the record's transcript, which the step's commit saves whole."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import attrs

from transcriber.db.database import Database


class Drafts:
    """The recognize step's writer of drafts."""

    def __init__(self, db: Database):
        self.db = db

    async def add(
        self, record: uuid.UUID, token: uuid.UUID, first: int, texts: Sequence[str]
    ) -> None:
        """Pieces `first`, `first` + 1, … of the attempt holding `token` (nothing when
        the claim was lost: the step's own fenced writes tell it so). The first pieces
        of an attempt replace an earlier attempt's.

        Cancellation: a statement cut short writes nothing or its pieces whole."""
        if not texts:
            return
        if first == 0:
            await self.db.execute("drafts_begin", record, token)
        await self.db.execute("drafts_add", record, token, first, list(texts))


@attrs.frozen
class Draft:
    """Pieces of one attempt's draft."""

    attempt: uuid.UUID | None
    """The attempt's claim token; None when there is no draft."""
    pieces: list[str]


async def owner_draft(db: Database, owner: int, record: uuid.UUID, since: int) -> Draft:
    """The owner's record's draft pieces from piece `since` on, of its latest attempt,
    in order; none for a record not theirs."""
    rows = await db.fetch("owner_draft", owner, record, since)
    return Draft(rows[0]["claim_token"] if rows else None, [r["text"] for r in rows])
