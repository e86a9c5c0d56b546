"""The link the record page's share form just made, carried from the form's POST to
the record page's GET it redirects to, and shown there once (`page.shares` makes it,
`page.record` shows it)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import Response

from transcriber.db.database import Database
from transcriber.http.page.html import record_path
from transcriber.http.page.session import is_https
from transcriber.http.share_links import link_of
from transcriber.records.shares import open_share

NEW_SHARE_COOKIE = "transcriber_new_share"
"""Carries a link just made from the form's POST to the record page's GET it redirects
to (Post/Redirect/Get: a reload then reads the page again instead of making another
link). Scoped to that record's page, HttpOnly, SameSite=Strict, short-lived, and read
once; the page shows it only while it is a live link of that very record of the
signed-in owner, so a forged one shows nothing it would not anyway."""


NEW_SHARE_MAX_AGE_S = 300


def carry_new_share(response: Response, request: Request, recording_id: Any, secret: str) -> None:
    response.set_cookie(
        NEW_SHARE_COOKIE,
        secret,
        max_age=NEW_SHARE_MAX_AGE_S,
        path=record_path(recording_id),
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )


async def new_share_of(request: Request, db: Database, owner: int, recording_id: Any) -> str | None:
    """The link the form just made for this record, carried by NEW_SHARE_COOKIE, if it
    is still a live link of the owner's record. Cancellation: a plain read."""
    secret = request.cookies.get(NEW_SHARE_COOKIE)
    if not secret or len(secret) > 200:
        return None
    shared = await open_share(db, secret, count=False)
    if shared is None or (shared.owner, str(shared.recording_id)) != (owner, str(recording_id)):
        return None
    return link_of(request, secret)
