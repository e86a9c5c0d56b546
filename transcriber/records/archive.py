"""The owner's archive: pages of their records (newest first), the journal of one, its
transcript and its audio, their edits of the owner fields, and the bytes they keep."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import attrs

from transcriber.db.database import Database, StatementCut
from transcriber.records.cards import add_queue_places, card_from_row

Cursor = tuple[dt.datetime, uuid.UUID]
"""Where a page of records ends: the last card's creation time and id."""


@attrs.frozen
class RecordsPage:
    cards: list[dict[str, Any]]
    more_after: Cursor | None
    """Where the next page starts; None when this page is the last."""


def _page(rows: list[Any], limit: int) -> RecordsPage:
    """The first `limit` of `rows` (asked for one more, to know whether more follow)."""
    last = rows[limit - 1] if len(rows) > limit else None
    return RecordsPage(
        [card_from_row(r) for r in rows[:limit]],
        None if last is None else (last["created_at"], last["id"]),
    )


async def records_page(db: Database, owner: int, after: Cursor | None, limit: int) -> RecordsPage:
    """Up to `limit` of the owner's cards, newest first, after `after` (None: from the
    newest). Cancellation: a plain read."""
    after_at, after_id = after or (None, None)
    page = _page(await db.fetch("recordings_of_owner", owner, after_at, after_id, limit + 1), limit)
    await add_queue_places(db, owner, page.cards)
    return page


SEARCH_TIMEOUT_S = 1.0
"""How long one owner's search may read before it is cut off as too broad (a word
prefix of one letter can match every record of a long archive)."""


class SearchTooBroad(Exception):
    """The owner's search read longer than its bound."""


async def found_records_page(
    db: Database,
    owner: int,
    after: Cursor | None,
    limit: int,
    *,
    state: str | None,
    search: str | None,
) -> RecordsPage:
    """`records_page` narrowed to a state (working, transcribed, stopped; None: any)
    and to the records whose title, file name, transcript or corrections match `search`
    (a tsquery of the 'simple' configuration; None: all). A search is bounded: past
    SEARCH_TIMEOUT_S it raises SearchTooBroad. Cancellation: a plain read."""
    after_at, after_id = after or (None, None)
    if search is None:
        rows = await db.fetch("page_recordings", owner, after_at, after_id, limit + 1, state, None)
        page = _page(rows, limit)
        await add_queue_places(db, owner, page.cards)
        return page
    try:
        rows = await db.fetch_within(
            "page_recordings",
            owner,
            after_at,
            after_id,
            limit + 1,
            state,
            search,
            timeout_s=SEARCH_TIMEOUT_S,
        )
    except StatementCut as e:
        raise SearchTooBroad(search) from e
    page = _page(rows, limit)
    await add_queue_places(db, owner, page.cards)
    return page


async def journal_page(
    db: Database, owner: int, recording_id: Any, after: int, limit: int
) -> list[dict[str, Any]]:
    """Up to `limit` events of the owner's record after number `after`, numbered 1, 2, …
    within the record (`seq`), with `at`, `origin`, `kind`, `milestone` and the full
    `detail` (the caller leaves out the operator's part). Cancellation: a plain read."""
    return [dict(r) for r in await db.fetch("owner_journal", owner, recording_id, after, limit)]


async def transcript(db: Database, owner: int, recording_id: Any) -> dict[str, Any] | None:
    """The machine's transcript of the owner's record (`text`, `segments`, `language`,
    `model`), or None while there is none. Cancellation: a plain read."""
    row = await db.fetchrow("owner_transcript", owner, recording_id)
    return None if row is None else dict(row)


async def edit_owner_fields(
    db: Database,
    owner: int,
    recording_id: Any,
    *,
    title: str | None,
    summary: str | None,
    topics: list[str] | None,
    detail: dict[str, Any],
) -> bool:
    """The owner's edit of their record's owner fields (None: unchanged), journaled as
    `edited` with origin `human` and `detail`; False if the record is not theirs.
    Cancellation: one statement; it committed or did not."""
    done = await db.fetchval(
        "edit_owner_fields", owner, recording_id, title, summary, topics, detail
    )
    return done is not None


async def audio_ref(db: Database, owner: int, recording_id: Any) -> str | None:
    """Where the owner's record keeps its normalized audio in the store, or None (not
    normalized yet, or not theirs). Cancellation: a plain read."""
    ref: str | None = await db.fetchval("owner_audio", owner, recording_id)
    return ref


async def stored_bytes(db: Database, owner: int) -> int:
    """What the owner's uploads take in the store, against their quota. Cancellation: a
    plain read."""
    return int(await db.fetchval("owner_stored_bytes", owner))


async def audio_seconds(db: Database, owner: int) -> float:
    """Seconds of normalized audio the owner's records hold, against their audio quota.
    Cancellation: a plain query."""
    return float(await db.fetchval("owner_audio_seconds", owner))
