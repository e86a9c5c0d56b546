"""The owner's page: sign in with the API token, upload, watch recordings move, listen
to one against its transcript, correct it, name its speakers, share it, print it,
download it; and the share view a link opens (`/s/{secret}`), without signing in.

Server-rendered (Jinja2 templates in `templates/`) with a little plain JavaScript and
CSS (`static/`); nothing is fetched from elsewhere. The page signs in with a session
cookie (`session`); every record it shows is the signed-in owner's, and any other
answers 404 alike — pages, audio and downloads.

A module per screen, each with its `router`: `sign_in`, `recordings` (the list),
`upload`, `microphone` (the Record button: captions while one speaks, kept as a
record), `record` (the record page, its audio, waveform and downloads), `edits` (the
owner's fields and corrections), `deletion`, `printing`, `speakers` (its forms),
`shares` (its forms), `settings` (the owner's defaults, their voices, "remember this
voice"), `shared_view` (the stranger's view of a link); `html` has the
templates, `text` the words of states and stops, `audio` the audio and its waveform.
`FACE` is what the application takes of it (`transcriber.http.faces`).
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from transcriber.db.database import Database
from transcriber.http.faces import Face
from transcriber.http.page import (
    again,
    deletion,
    edits,
    microphone,
    printing,
    record,
    recordings,
    settings,
    shared_view,
    shares,
    sign_in,
    speakers,
    upload,
)
from transcriber.http.page.html import not_found_page
from transcriber.http.page.session import SIGNIN_PATH, session_of
from transcriber.http.sessions import SIGNIN_FORM_MAX

_PAGE_PATH = re.compile(
    r"/(?:|signin|signout|upload|delete|microphone|settings|voices(?:/[^/]+/delete)?"
    r"|recordings/[^/]+(?:/.*)?)"
)

STREAMED = frozenset({("POST", "/upload")})
"""(method, path) of the page's routes that stream their body under their own cap."""

BODY_CAPS = {("POST", SIGNIN_PATH): SIGNIN_FORM_MAX}
"""(method, path) → bytes of a body read whole that is capped below the API's own."""


def is_page_path(path: str) -> bool:
    """A path of the page: it authenticates by its session cookie itself (and answers
    sign-in pages to nobody in particular), so a guard asking for the API's bearer token
    must let it through."""
    return _PAGE_PATH.fullmatch(path) is not None


def authenticates(path: str) -> bool:
    """The page's paths and the share view's (a link is its own capability)."""
    return is_page_path(path) or shared_view.is_share_path(path)


async def unknown_address(request: Request) -> Response:
    """The page's not-found page for an address no route answers, with the language
    switch (and signing out, to an owner signed in)."""
    session = await session_of(request.app.state.db, request)
    return not_found_page(request, session, address=True)


async def session_owner(db: Database, scope: dict[str, Any]) -> int | None:
    """The owner whose page session vouches for a request with a body on the page's
    paths."""
    if not is_page_path(scope["path"]):
        return None
    session = await session_of(db, Request(scope))
    return None if session is None else session.owner


FACE = Face(
    "page",
    (
        sign_in.router,
        recordings.router,
        upload.router,
        microphone.router,
        record.router,
        edits.router,
        deletion.router,
        printing.router,
        speakers.router,
        settings.router,
        shares.router,
        shared_view.router,
        again.router,
    ),
    authenticates=authenticates,
    streamed=STREAMED,
    body_caps=BODY_CAPS,
    session_owner=session_owner,
    not_found_page=unknown_address,
)
