"""The page's sign-in screen: signing in with the owner's API token (a session of the
page's kind, `page.session`) and signing out."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from actors.log import event
from transcriber.http.deps import Db, Settings
from transcriber.http.page.html import (
    html,
    lang_of,
)
from transcriber.http.page.session import (
    CSRF_FIELD,
    OWNER,
    SIGNIN_PATH,
    Session,
    check_csrf,
)
from transcriber.http.sessions import sign_in_form

router = APIRouter(include_in_schema=False)


safe_next = OWNER.safe_next
"""Where to go after signing in: a path of this site only, never another site."""


@router.get(SIGNIN_PATH)
async def signin_page(
    request: Request, next: Annotated[str | None, Query(max_length=2000)] = None
) -> HTMLResponse:
    return html(request, "signin.html", next=safe_next(next), error=None)


@router.post(SIGNIN_PATH)
async def signin(request: Request, db: Db, config: Settings) -> Response:
    """Sign in with the API token. A form gets a redirect (or the form again, with the
    reason); the page's script (`Accept: application/json`) gets the new anti-forgery
    token, so it can carry on where it was."""
    token, target = await sign_in_form(request)
    target = safe_next(target)
    lifetime_s = config.page_session_days * 86400
    made = await OWNER.sign_in(db, token, lifetime_s)
    script = "application/json" in request.headers.get("accept", "")
    if made is None:
        event(logging.INFO, "page_signin_refused")
        message = lang_of(request).gettext(
            "That is not an owner's API token. Use the API token the service's operator gave you."
        )
        if script:
            return JSONResponse({"error": message}, status_code=401)
        return html(request, "signin.html", 401, next=target, error=message)
    response: Response = (
        JSONResponse({"csrf": made.csrf}) if script else RedirectResponse(target, status_code=303)
    )
    OWNER.set_cookie(response, request, made.secret, lifetime_s)
    return response


@router.post("/signout")
async def signout(request: Request, db: Db, session: Session) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    await OWNER.sign_out(db, session)
    response = RedirectResponse(SIGNIN_PATH, status_code=303)
    OWNER.clear_cookie(response, request)
    return response
