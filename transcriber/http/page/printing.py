"""The print view of a record's transcript, for the browser's "Print" / "Save as
PDF"."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from transcriber.formats import paragraphs
from transcriber.http.deps import Db
from transcriber.http.page.html import (
    html,
    mine,
    not_found_page,
)
from transcriber.http.page.session import (
    Session,
)
from transcriber.records.archive import (
    transcript,
)
from transcriber.transcripts import owner_transcript

router = APIRouter(include_in_schema=False)


@router.get("/recordings/{recording_id}/print")
async def print_view(request: Request, db: Db, session: Session, recording_id: str) -> HTMLResponse:
    """The transcript as a clean document for the browser's "Print" / "Save as PDF":
    the title, date and duration, paragraphs with timecodes (and speakers), the owner's
    corrections applied; no controls (print CSS)."""
    card = await mine(db, session.owner, recording_id)
    if card is None or not card["done"]:
        return not_found_page(request, session)
    t = await transcript(db, session.owner, card["id"])
    # Corrected, and with the owner's names of the speakers, as every rendering.
    _, segments, _ = await owner_transcript(db, session.owner, card["id"], t)
    # In the reader's language, like the page it is opened from (the date, the duration,
    # the words); the downloaded documents (Markdown, DOCX) keep their English heading.
    return html(
        request,
        "print.html",
        card=card,
        language=(t or {}).get("language") or card["language"],
        paragraphs=paragraphs(segments),
    )
