"""The operator's share links screen (`/ops/shares`): every owner's read-only links, or
one owner's, with ids, owner, times, openings and state — never a note, a title or any
text of the record — and revoking the checked ones at once, through the same domain
action as `transcriber share revoke` (transcriber.pipeline.operator_shares), journaled
`human` with the operator's name."""

from __future__ import annotations

import logging
import urllib.parse
import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from actors.log import event
from transcriber.http.deps import Db
from transcriber.http.ops.html import html
from transcriber.http.ops.session import PREFIX, OperatorSession
from transcriber.http.sessions import CSRF_FIELD, check_csrf
from transcriber.pipeline import operator_shares
from transcriber.pipeline.ops_screen import by_operator

router = APIRouter(include_in_schema=False)

SHARES = PREFIX + "/shares"

Count = Annotated[int, Query(ge=0, le=operator_shares.LIST_MAX)]


def parse_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


@router.get(SHARES)
async def shares_page(
    request: Request,
    db: Db,
    session: OperatorSession,
    owner: Annotated[str | None, Query(max_length=200)] = None,
    ended: Count = 0,
    already: Count = 0,
    unknown: Count = 0,
) -> HTMLResponse:
    """The links, newest first, of `owner` (a name) or of every owner; `ended`,
    `already`, `unknown`: what the revoke that redirected here did."""
    wanted = (owner or "").strip() or None
    found = await operator_shares.links(db, wanted)
    return html(
        request,
        "ops_shares.html",
        links=found,
        owner=wanted or "",
        list_max=operator_shares.LIST_MAX,
        done={"ended": ended, "already": already, "unknown": unknown},
        csrf=session.csrf,
        operator=session.name,
    )


@router.post(SHARES + "/revoke")
async def revoke_shares(request: Request, db: Db, session: OperatorSession) -> Response:
    """Revoke the links checked in the list (`id` fields), then a redirect (303) back to
    the list (Post/Redirect/Get), which says what the revoke did."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    found = (parse_id(str(v)) for v in form.getlist("id")[: operator_shares.LIST_MAX])
    ids = [i for i in found if i is not None]
    done = await operator_shares.revoke(db, ids, by=by_operator(session.name))
    event(
        logging.INFO,
        "ops_shares_revoked",
        operator=session.name,
        asked=len(ids),
        revoked=len(done.ended),
    )
    query = urllib.parse.urlencode(
        {
            "owner": str(form.get("owner", ""))[:200],
            "ended": len(done.ended),
            "already": len(done.already),
            "unknown": len(done.unknown),
        }
    )
    return RedirectResponse(f"{SHARES}?{query}", status_code=303)
