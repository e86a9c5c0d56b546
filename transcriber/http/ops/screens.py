"""The operator's screens under /ops: the pipeline at a glance (updated live), the
daemons and what their workers hold, the stopped records filtered, searched and
resumed, one record's metadata, stop flag and whole journal. No route here serves
audio or transcript text. Resuming goes through the same domain action as
`transcriber resume`, journaled `human` with the operator's name."""

from __future__ import annotations

import logging
import urllib.parse
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from actors.log import event
from transcriber.http.deps import Db
from transcriber.http.errors import ApiError
from transcriber.http.ops.html import html
from transcriber.http.ops.session import PREFIX, OperatorSession
from transcriber.http.rendering import lang_of
from transcriber.http.sessions import CSRF_FIELD, check_csrf
from transcriber.milestones import MILESTONES
from transcriber.pipeline import ops_screen
from transcriber.pipeline.ops_screen import StoppedFilter

router = APIRouter(include_in_schema=False)

LIVE_EVERY_S = 5
"""How often the screen's script refreshes the glance."""


def parse_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


# --- at a glance -----------------------------------------------------------------------


def day_charts(request: Request) -> ops_screen.DayCharts:
    """The application's kept day charts, made at its first glance (one per
    application, so one per database)."""
    state = request.app.state
    if getattr(state, "ops_day_charts", None) is None:
        state.ops_day_charts = ops_screen.DayCharts()
    charts: ops_screen.DayCharts = state.ops_day_charts
    return charts


@router.get(PREFIX)
async def glance_page(
    request: Request,
    db: Db,
    session: OperatorSession,
    fragment: Annotated[str | None, Query(max_length=20)] = None,
) -> HTMLResponse:
    glance = await ops_screen.glance(db, day_charts(request))
    daemons = await ops_screen.daemons(db)
    context: dict[str, Any] = {
        "glance": glance,
        "daemons": daemons,
        "csrf": session.csrf,
        "operator": session.name,
        "live_every_s": LIVE_EVERY_S,
    }
    name = "ops_live.html" if fragment == "live" else "ops_glance.html"
    return html(request, name, **context)


# --- stopped records -------------------------------------------------------------------


OLDER_MAX_MIN = ops_screen.OLDER_MAX_S // 60
"""The most minutes `older` may say: ten years (ops_screen.OLDER_MAX_S)."""


class BadOlder(ValueError):
    """`older` is not a number of minutes from 0 to OLDER_MAX_MIN."""


def stopped_filter(
    reason: str | None, milestone: str | None, owner: str | None, older: str | None, q: str | None
) -> StoppedFilter:
    """The filter the form's fields say; BadOlder when `older` is not 0 to OLDER_MAX_MIN
    minutes (NaN, infinity, `1e308` and negative numbers included): a filter typed wrong
    is refused, not dropped, so "resume all" never resumes more than the operator asked."""
    older_s = None
    if older and older.strip():
        try:
            minutes = float(older)
        except ValueError:
            raise BadOlder(older) from None
        if not 0 <= minutes <= OLDER_MAX_MIN:  # NaN fails both
            raise BadOlder(older)
        older_s = minutes * 60
    return StoppedFilter(
        reason=reason or None,
        milestone=milestone or None,
        owner=owner or None,
        older_than_s=older_s,
        search=(q or "").strip() or None,
    )


Text = Annotated[str | None, Query(max_length=200)]


@router.get(PREFIX + "/stopped")
async def stopped_page(
    request: Request,
    db: Db,
    session: OperatorSession,
    reason: Text = None,
    milestone: Text = None,
    owner: Text = None,
    older: Annotated[str | None, Query(max_length=20)] = None,
    q: Text = None,
) -> HTMLResponse:
    older_error = None
    try:
        wanted = stopped_filter(reason, milestone, owner, older, q)
    except BadOlder:
        wanted = stopped_filter(reason, milestone, owner, None, q)
        older_error = older_refused(request)
    records = [] if older_error else await ops_screen.stopped_records(db, wanted)
    return html(
        request,
        "ops_stopped.html",
        422 if older_error else 200,
        records=records,
        wanted=wanted,
        older=older or "",
        older_error=older_error,
        milestones=MILESTONES,
        list_max=ops_screen.LIST_MAX,
        csrf=session.csrf,
        operator=session.name,
    )


def older_refused(request: Request) -> str:
    lang = lang_of(request)
    return lang.gettext("Give the minutes as a number from 0 to %(max)s (ten years).") % {
        "max": lang.number(OLDER_MAX_MIN)
    }


REFUSED_SHOWN = 100
"""The refused records a batch's answer names (in its address); the others are counted."""


@router.post(PREFIX + "/resume")
async def resume(request: Request, db: Db, session: OperatorSession) -> Response:
    """Resume the records checked in the list (`id` fields), or, with `all`, every record
    the filter in the form's fields names now (at most LIST_MAX). Each goes through
    `operator.resume` on its own, journaled with this batch's id; then a redirect (303)
    to the batch's page, which shows what each resume did (Post/Redirect/Get: a reload
    reads that page again instead of resuming whatever the filter names by then)."""
    form = await request.form()
    check_csrf(request, session, str(form.get(CSRF_FIELD, "")))
    if form.get("all"):
        try:
            wanted = stopped_filter(
                *(
                    str(form.get(k, "")) or None
                    for k in ("reason", "milestone", "owner", "older", "q")
                )
            )
        except BadOlder:
            raise ApiError(422, older_refused(request)) from None
        ids = [r["id"] for r in await ops_screen.stopped_records(db, wanted)]
    else:
        found = (parse_id(str(v)) for v in form.getlist("id")[: ops_screen.LIST_MAX])
        ids = list(dict.fromkeys(i for i in found if i is not None))
        if not ids:  # nothing checked (without the script): back to the list as it was
            kept = [
                (k, str(form.get(k, ""))) for k in ("reason", "milestone", "owner", "older", "q")
            ]
            query = urllib.parse.urlencode([(k, v) for k, v in kept if v])
            return RedirectResponse(f"{PREFIX}/stopped?{query}", status_code=303)
    batch = str(uuid.uuid4())
    outcomes = await ops_screen.resume_each(db, ids, operator_name=session.name, batch=batch)
    event(
        logging.INFO,
        "ops_resumed",
        operator=session.name,
        asked=len(ids),
        resumed=sum(o.resumed for o in outcomes),
    )
    refused = [str(o.id) for o in outcomes if not o.resumed]
    query = urllib.parse.urlencode(
        [("refused", r) for r in refused[:REFUSED_SHOWN]] + [("asked", str(len(ids)))]
    )
    return RedirectResponse(f"{PREFIX}/resumed/{batch}?{query}", status_code=303)


@router.get(PREFIX + "/resumed/{batch}")
async def resumed_page(
    request: Request,
    db: Db,
    session: OperatorSession,
    batch: str,
    refused: Annotated[list[str] | None, Query()] = None,
    asked: Annotated[int, Query(ge=0, le=ops_screen.LIST_MAX)] = 0,
) -> HTMLResponse:
    """What one batch of resumes did: the records it resumed, read back from the
    journal, and those it was refused (named in the address, at most REFUSED_SHOWN)."""
    refused_ids = [i for r in (refused or [])[:REFUSED_SHOWN] if (i := parse_id(r)) is not None]
    outcomes = (
        []
        if parse_id(batch) is None
        else await ops_screen.resumed_in(db, batch, session.name, refused_ids)
    )
    return html(
        request,
        "ops_resumed.html",
        outcomes=outcomes,
        asked=max(asked, len(outcomes)),
        csrf=session.csrf,
        operator=session.name,
    )


# --- one record and search -------------------------------------------------------------


@router.get(PREFIX + "/records/{recording_id}")
async def record_page(
    request: Request, db: Db, session: OperatorSession, recording_id: str
) -> HTMLResponse:
    rid = parse_id(recording_id)
    found = None if rid is None else await ops_screen.record(db, rid)
    if rid is None or found is None:
        return html(request, "ops_not_found.html", 404, csrf=session.csrf, operator=session.name)
    return html(
        request,
        "ops_record.html",
        record=found,
        journal=await ops_screen.journal(db, rid),
        csrf=session.csrf,
        operator=session.name,
    )


@router.get(PREFIX + "/search")
async def search_page(
    request: Request, db: Db, session: OperatorSession, q: Text = None
) -> HTMLResponse:
    """A record by id, an owner's records by name, records by part of their file name;
    a text too short for file names is said so, and a search that reads too long is
    cut off with a plain 'too broad' instead of an error."""
    text = (q or "").strip()
    too_broad = False
    records: list[dict[str, Any]] = []
    if text:
        try:
            records = await ops_screen.search(db, text)
        except ops_screen.SearchTooBroad:
            event(logging.INFO, "ops_search_too_broad", operator=session.name, length=len(text))
            too_broad = True
    return html(
        request,
        "ops_search.html",
        records=records,
        q=text,
        too_short=0 < len(text) < ops_screen.SEARCH_MIN and ops_screen.as_id(text) is None,
        too_broad=too_broad,
        search_min=ops_screen.SEARCH_MIN,
        csrf=session.csrf,
        operator=session.name,
    )


@router.get(PREFIX + "/daemons.json")
async def daemons_json(db: Db, session: OperatorSession) -> JSONResponse:
    """The daemons as the screen lists them, for a script."""
    rows = await ops_screen.daemons(db)
    return JSONResponse(
        [
            {
                "id": str(d.id),
                "host": d.host,
                "pid": d.pid,
                "state": d.state,
                "silent_s": d.silent_s,
                "claims": [
                    {"record": str(c.id), "milestone": c.milestone, "attempt": c.attempt}
                    for c in d.claims
                ],
            }
            for d in rows
        ]
    )
