"""Signing in to the operator's screen with an operator's token (a session of the
screen's kind, `ops.session`), and signing out."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from actors.log import event
from transcriber.http.deps import Db, Settings
from transcriber.http.ops.html import html
from transcriber.http.ops.session import OPERATOR, PREFIX, SIGNIN_PATH, OperatorSession
from transcriber.http.rendering import lang_of
from transcriber.http.sessions import CSRF_FIELD, check_csrf, sign_in_form

router = APIRouter(include_in_schema=False)


safe_next = OPERATOR.safe_next
"""Where to go after signing in: a path of the screen only."""


@router.get(SIGNIN_PATH)
async def signin_page(
    request: Request, next: Annotated[str | None, Query(max_length=2000)] = None
) -> HTMLResponse:
    return html(request, "ops_signin.html", next=safe_next(next), error=None)


@router.post(SIGNIN_PATH)
async def signin(request: Request, db: Db, config: Settings) -> Response:
    token, target = await sign_in_form(request)
    target = safe_next(target)
    lifetime_s = config.page_session_days * 86400
    made = await OPERATOR.sign_in(db, token, lifetime_s)
    if made is None:
        event(logging.INFO, "ops_signin_refused")
        message = lang_of(request).gettext(
            "That is not an operator's token. Use the token `transcriber operator add` printed."
        )
        return html(request, "ops_signin.html", 401, next=target, error=message)
    event(logging.INFO, "ops_signed_in", operator=made.who)
    response = RedirectResponse(target, status_code=303)
    OPERATOR.set_cookie(response, request, made.secret, lifetime_s)
    return response


@router.post(PREFIX + "/signout")
async def signout(request: Request, db: Db, session: OperatorSession) -> Response:
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    await OPERATOR.sign_out(db, session)
    response = RedirectResponse(SIGNIN_PATH, status_code=303)
    OPERATOR.clear_cookie(response, request)
    return response
