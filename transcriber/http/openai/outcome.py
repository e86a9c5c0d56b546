"""Waiting for the record an OpenAI request made: until it is transcribed or stopped,
the service stops, the wait runs out, or the client goes away."""

from __future__ import annotations

import uuid
from typing import Any

import trio
from fastapi import Request

from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.http.openai.errors import waiting_of
from transcriber.http.owned_cards import owned_card
from transcriber.http.waiting import Waiting

STOPPING = "stopping"


TIMED_OUT = "timed_out"


GONE = "gone"
"""The record was deleted while the request waited for it."""


async def outcome(
    db: Database, owner: int, rid: uuid.UUID, wait_s: float, waiting: Waiting
) -> dict[str, Any] | str:
    """The owner's record's card (as the owner reads it) once it is transcribed or
    stopped; STOPPING when the service stops first, TIMED_OUT after `wait_s`, GONE when
    it is deleted meanwhile.

    Reads the card whenever the journal has news, and at growing intervals besides
    (see Waiting). Cancellation: nothing to undo; the record goes on.
    """
    poll = waiting.poll_first_s
    with trio.move_on_after(wait_s):
        while True:
            news = waiting.next_news()
            try:
                c = await owned_card(db, owner, rid)
            except ApiError as e:
                # Returned, not raised: raised, it would leave the waiting nursery of
                # `outcome_unless_gone` as an ExceptionGroup, a 500.
                if e.status == 404:
                    return GONE
                raise
            if c["done"] or c["stopped"]:
                return c
            await waiting.pause(news, poll)
            if waiting.stopping.is_set():
                return STOPPING
            poll = min(poll * 1.5, waiting.poll_max_s)
    return TIMED_OUT


async def outcome_unless_gone(
    request: Request, db: Database, owner: int, rid: uuid.UUID, wait_s: float
) -> dict[str, Any] | str | None:
    """`outcome`, or None as soon as the client disconnects (nobody would read the
    answer; the record goes on).

    Cancellation: the watch on the connection ends with the wait.
    """
    found: dict[str, Any] | str | None = None
    async with trio.open_nursery() as nursery:

        async def wait() -> None:
            nonlocal found
            found = await outcome(db, owner, rid, wait_s, waiting_of(request.app))
            nursery.cancel_scope.cancel()

        async def watch() -> None:
            # The body was read whole: what the connection says next is its end.
            while (await request.receive())["type"] != "http.disconnect":
                pass
            nursery.cancel_scope.cancel()

        nursery.start_soon(wait)
        nursery.start_soon(watch)
    return found
