"""A streamed answer (`stream=true`): OpenAI's server-sent events for a transcription,
`transcript.text.delta` as recognition hears the record's pieces (its drafts,
`transcriber.records.drafts`), then `transcript.text.done` with the whole text once the
record is transcribed, or one error event (`{"error": {...}}`, which the `openai` SDK
raises as an APIError) when it stops, is deleted, the wait runs out or the service stops.

The record is as durable as any upload's: a client that goes away ends the events, not
the record. A delta is only ever text that continues what was sent: when a later attempt
or the final transcript says otherwise, nothing more is sent as deltas and the `done`
event's text, the record's own, is the one to keep."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import trio

from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.http.owned_cards import owned_card
from transcriber.http.waiting import Waiting
from transcriber.records.archive import transcript
from transcriber.records.drafts import owner_draft

DRAFT_POLL_S = 0.5
"""How often a streamed answer reads the drafts while the record is recognized: drafts
are not journaled (one write a second per recognition would flood the journal)."""


def sse(data: dict[str, Any]) -> bytes:
    """One server-sent event: its data line and the blank line that ends it."""
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def error_event(code: str, message: str) -> bytes:
    return sse({"error": {"message": message, "type": "invalid_request_error", "code": code}})


class Said:
    """The text sent in deltas so far, and what continues it."""

    def __init__(self) -> None:
        self.text = ""

    def delta(self, text: str) -> str:
        """What of `text` continues the text sent (taken as sent), or "" when `text`
        does not continue it."""
        if len(text) <= len(self.text) or not text.startswith(self.text):
            return ""
        new, self.text = text[len(self.text) :], text
        return new


async def text_events(
    db: Database, waiting: Waiting, owner: int, rid: uuid.UUID, wait_s: float
) -> AsyncIterator[bytes]:
    """The events of the owner's record `rid`, until it is transcribed or stopped.

    Cancellation (the client went away): the events end; the record goes on."""
    said = Said()
    draft = Pieces()
    # No cancel scope around the yields (an async generator must not yield inside one):
    # the wait's end is a deadline checked each round.
    deadline = trio.current_time() + wait_s
    while trio.current_time() < deadline:
        news = waiting.next_news()
        try:
            card = await owned_card(db, owner, rid)
        except ApiError as e:
            if e.status != 404:
                raise
            yield error_event("not_found", f"recording {rid} was deleted meanwhile")
            return
        if card["stopped"]:
            stop = card["stopped"]
            yield error_event(stop["reason"], f"recording {rid} stopped: {stop['message']}")
            return
        if card["done"]:
            t = await transcript(db, owner, rid)
            if t is None:
                yield error_event("not_found", f"recording {rid} was deleted meanwhile")
                return
            if delta := said.delta(t["text"]):
                yield sse({"type": "transcript.text.delta", "delta": delta})
            yield sse({"type": "transcript.text.done", "text": t["text"]})
            return
        if delta := said.delta(await draft.read(db, owner, rid)):
            yield sse({"type": "transcript.text.delta", "delta": delta})
        await waiting.pause(news, max(0.0, min(DRAFT_POLL_S, deadline - trio.current_time())))
        if waiting.stopping.is_set():
            yield error_event(
                "service_stopping",
                f"the service is stopping; recording {rid} is kept and will be "
                "transcribed when it is back",
            )
            return
    yield error_event(
        "still_working", f"recording {rid} is not transcribed after {wait_s:g} s; it goes on"
    )


class Pieces:
    """The draft's pieces read so far, of one attempt."""

    def __init__(self) -> None:
        self.attempt: uuid.UUID | None = None
        self.pieces: list[str] = []

    async def read(self, db: Database, owner: int, rid: uuid.UUID) -> str:
        """The draft's text, with the pieces added since the last read; read whole
        again when a later attempt replaced them."""
        new = await owner_draft(db, owner, rid, len(self.pieces))
        if new.attempt is not None and new.attempt != self.attempt:
            if self.pieces:
                new = await owner_draft(db, owner, rid, 0)
            self.attempt, self.pieces = new.attempt, []
        self.pieces += new.pieces
        return " ".join(self.pieces)
