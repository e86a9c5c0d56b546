"""The page's list of my recordings at `/`: newest first, filtered by state, searched
by words; a fragment of its rows for the page's script to refresh."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from transcriber.http.deps import Db
from transcriber.http.owned_cards import (
    decode_cursor,
    encode_cursor,
)
from transcriber.http.page import text
from transcriber.http.page.html import (
    html,
)
from transcriber.http.page.session import (
    Session,
)
from transcriber.records.archive import (
    RecordsPage,
    SearchTooBroad,
    found_records_page,
)

router = APIRouter(include_in_schema=False)

PAGE_SIZE = 25
"""Records a page of the list shows."""


def search_query(text: str) -> str | None:
    """A tsquery (the 'simple' configuration) for what the owner typed: every word, each
    as a prefix, so a word being typed is found. Only word characters reach it, so no
    input can be a malformed tsquery."""
    words = re.findall(r"\w+", text.lower())[:20]
    return " & ".join(f"{w}:*" for w in words) or None


@router.get("/")
async def recordings_page(
    request: Request,
    db: Db,
    session: Session,
    state: Annotated[str | None, Query(max_length=20)] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
    fragment: Annotated[str | None, Query(max_length=20)] = None,
    deleted: Annotated[str | None, Query(max_length=4)] = None,
) -> HTMLResponse:
    state = state if state in text.STATES else None
    try:
        found = await found_records_page(
            db,
            session.owner,
            decode_cursor(cursor) if cursor else None,
            PAGE_SIZE,
            state=state,
            search=search_query(q or ""),
        )
    except SearchTooBroad:  # said plainly in the list, not an error page
        found = RecordsPage([], None)
        too_broad = True
    else:
        too_broad = False
    cards = found.cards
    context = {
        "too_broad": too_broad,
        # After a deletion (deletion.py): how many went; a hand-made value is passed over.
        "deleted": int(deleted) if deleted and deleted.isdigit() else None,
        "cards": cards,
        "csrf": session.csrf,
        "state": state or "",
        "q": q or "",
        "cursor": cursor,
        "states": text.STATES,
        "older": None if found.more_after is None else encode_cursor(*found.more_after),
        "live": any(text.state_of(c) == "working" for c in cards),
        "max_upload_bytes": request.app.state.max_upload_bytes,
    }
    return html(request, "_rows.html" if fragment == "rows" else "recordings.html", **context)
