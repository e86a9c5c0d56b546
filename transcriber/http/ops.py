"""The operator's screen at /ops: the pipeline at a glance (updated live), the daemons
and what their workers hold, the stopped records filtered, searched and resumed, one
record's metadata, stop flag and whole journal.

Operators are not owners: they sign in with an operator's token (`transcriber operator
add`) to a session of their own kind (ops_sign_in), and nothing here serves audio or
transcript text — no route of this module reads either. Resuming goes through the same
domain action as `transcriber resume`, journaled `human` with the operator's name.
Server-rendered like the owner's page, with its stylesheet and one small script that
refreshes the glance; the charts are inline SVG drawn here. In the reader's language
as the owner's page is (`transcriber.http.i18n`); the names the operator also meets in
the CLI, the metrics and the filters (milestones, stop reasons, journal kinds and
origins) are shown as they are, a stop reason with its plain words beside it.
"""

from __future__ import annotations

import functools
import logging
import urllib.parse
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from markupsafe import Markup, escape

from actors.log import event
from transcriber.http import i18n
from transcriber.http.deps import Db, Settings
from transcriber.http.i18n import N_, NP_
from transcriber.http.ops_sign_in import OPERATOR, PREFIX, SIGNIN_PATH, OperatorSession
from transcriber.http.page import TEMPLATES, html, lang_of
from transcriber.http.sessions import CSRF_FIELD, check_csrf, sign_in_form
from transcriber.milestones import MILESTONES
from transcriber.pipeline import ops_screen
from transcriber.pipeline.ops_screen import Series, StoppedFilter

router = APIRouter(include_in_schema=False)

LIVE_EVERY_S = 5
"""How often the screen's script refreshes the glance."""


def is_ops_path(path: str) -> bool:
    """A path of the screen: it authenticates by its own session cookie, so the API's
    bearer-token guard lets it through (as the owner's page's)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


safe_next = OPERATOR.safe_next
"""Where to go after signing in: a path of the screen only."""


def parse_id(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


# --- charts ----------------------------------------------------------------------------


def bars(lang: i18n.Lang, series: Series, title: str) -> Markup:
    """The series' totals per bucket as a small bar chart, inline SVG (presentation
    attributes only: the page's CSP allows no inline style)."""
    totals = [sum(c[i] for c in series.counts.values()) for i in range(len(_bucket_range(series)))]
    width, height, n = 300, 60, max(len(totals), 1)
    top = max(totals, default=0) or 1
    w = width / n
    rects = "".join(
        f'<rect class="bar" x="{i * w:.1f}" y="{height - t / top * height:.1f}" '
        f'width="{max(w - 1, 1):.1f}" height="{t / top * height:.1f}"><title>{t}</title></rect>'
        for i, t in enumerate(totals)
        if t
    )
    label = escape(
        lang.gettext("{title}: {total} in all, at most {most} a bucket").format(
            title=title, total=lang.number(sum(totals)), most=lang.number(max(totals, default=0))
        )
    )
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" preserveAspectRatio="none" '
        f'role="img" aria-label="{label}"><line class="axis" x1="0" y1="{height}" '
        f'x2="{width}" y2="{height}"/>{rects}</svg>'
    )


def _bucket_range(series: Series) -> range:
    return range(int(series.window / series.bucket))


def minutes(lang: i18n.Lang, seconds: float | None) -> str:
    """An age or a lease's time left in the reader's words (1 h 2 min 5 s); seconds are
    dropped past an hour, where they are noise."""
    if seconds is None:
        return "-"
    s = int(seconds)
    return lang.duration(s - s % 60 if s >= 3600 else s)


# A daemon's state as the screen says it (its class stays the code); "stopped" of a
# daemon is not a record's.
DAEMON_STATE_WORDS = {
    "running": NP_("daemon", "running"),
    "silent": NP_("daemon", "silent"),
    "stopped": NP_("daemon", "stopped"),
}
# A stop reason in the operator's plain words, beside its code (the owner's words, in
# `transcriber.stops`, speak to the owner); a reason not named here is its code spaced.
REASON_WORDS = {
    "empty_file": N_("the upload was empty"),
    "undecodable_audio": N_("the file could not be decoded as audio"),
    "no_audio_stream": N_("the file has no audio stream"),
    "empty_audio": N_("the audio is empty"),
    "too_long": N_("longer than TRANSCRIBER_MAX_DURATION_S"),
    "implausible_rate": N_("a sample rate no real recording has"),
    "implausible_duration": N_("decodes to more audio than its size can hold"),
    "audio_quota": N_("the owner's audio quota is full"),
    "recognizer_refused_audio": N_("the recognizer refused the audio"),
    "attempts_exhausted": N_("every attempt failed"),
    "milestone_time_limit": N_("a milestone took longer than its time limit"),
}


def words_of(lang: i18n.Lang, table: dict[str, str], key: str | None) -> str:
    if key is None:
        return "-"
    return lang.gettext(table[key]) if key in table else key.replace("_", " ")


def state_words(lang: i18n.Lang, state: str) -> str:
    found = DAEMON_STATE_WORDS.get(state)
    return state if found is None else lang.pgettext(*found)


for _code, _env in TEMPLATES.items():
    _lang = i18n.LANGS[_code]
    _env.globals.update(
        ops_bars=functools.partial(bars, _lang),
        ops_minutes=functools.partial(minutes, _lang),
        ops_state_words=functools.partial(state_words, _lang),
        ops_reason_words=functools.partial(words_of, _lang, REASON_WORDS),
    )
    _env.filters.update(fixed=_lang.fixed)


def ops_html(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return html(request, name, status, **context)


# --- signing in and out ----------------------------------------------------------------


@router.get(SIGNIN_PATH)
async def signin_page(
    request: Request, next: Annotated[str | None, Query(max_length=2000)] = None
) -> HTMLResponse:
    return ops_html(request, "ops_signin.html", next=safe_next(next), error=None)


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
        return ops_html(request, "ops_signin.html", 401, next=target, error=message)
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
    return ops_html(request, name, **context)


# --- stopped records -------------------------------------------------------------------


def stopped_filter(
    reason: str | None, milestone: str | None, owner: str | None, older: str | None, q: str | None
) -> StoppedFilter:
    older_s = None
    if older:
        try:
            older_s = max(float(older) * 60, 0.0)
        except ValueError:
            older_s = None
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
    wanted = stopped_filter(reason, milestone, owner, older, q)
    records = await ops_screen.stopped_records(db, wanted)
    return ops_html(
        request,
        "ops_stopped.html",
        records=records,
        wanted=wanted,
        older=older or "",
        milestones=MILESTONES,
        list_max=ops_screen.LIST_MAX,
        csrf=session.csrf,
        operator=session.name,
    )


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
        wanted = stopped_filter(
            *(str(form.get(k, "")) or None for k in ("reason", "milestone", "owner", "older", "q"))
        )
        ids = [r["id"] for r in await ops_screen.stopped_records(db, wanted)]
    else:
        found = (parse_id(str(v)) for v in form.getlist("id")[: ops_screen.LIST_MAX])
        ids = list(dict.fromkeys(i for i in found if i is not None))
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
    return ops_html(
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
        return ops_html(
            request, "ops_not_found.html", 404, csrf=session.csrf, operator=session.name
        )
    return ops_html(
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
    return ops_html(
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
