"""The operator's screen's templates (`templates/` beside this module) and static files
(`static/`), rendered in the reader's language by `transcriber.http.rendering`, and
what its templates read besides the words every screen has: the charts, drawn here as
inline SVG, ages and leases in words, a daemon's state and a stop reason in the
operator's plain words."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from transcriber.http import i18n, rendering
from transcriber.http.i18n import N_, NP_
from transcriber.pipeline.ops_screen import Series

HERE = Path(__file__).resolve().parent

rendering.add_static(HERE / "static")
TEMPLATES = rendering.templates(HERE / "templates")


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


RESUME_CANNOT_HELP = frozenset(
    {
        "empty_file",
        "undecodable_audio",
        "no_audio_stream",
        "empty_audio",
        "implausible_rate",
        "implausible_duration",
    }
)
"""Stops whose cause is the file itself: resumed, the record stops again at once, so the
screen says so before resuming one."""


def words_of(lang: i18n.Lang, table: dict[str, str], key: str | None) -> str:
    if key is None:
        return "-"
    return lang.gettext(table[key]) if key in table else key.replace("_", " ")


def state_words(lang: i18n.Lang, state: str) -> str:
    found = DAEMON_STATE_WORDS.get(state)
    return state if found is None else lang.pgettext(*found)


def html(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Template `name` of the screen in the request's language (`rendering.html`)."""
    return rendering.html(TEMPLATES, request, name, status, **context)


for _code, _env in TEMPLATES.items():
    _lang = i18n.LANGS[_code]
    _env.globals.update(
        ops_bars=functools.partial(bars, _lang),
        ops_minutes=functools.partial(minutes, _lang),
        ops_state_words=functools.partial(state_words, _lang),
        ops_reason_words=functools.partial(words_of, _lang, REASON_WORDS),
        ops_resume_cannot_help=RESUME_CANNOT_HELP,
    )
