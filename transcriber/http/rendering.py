"""The server-rendered pages every face with a screen shares: each face's Jinja2
templates in the reader's language (`templates`, `html`), the static files of every
face at `/static/{name}` with their content's hash in the address, and the language
switch at `/lang/{code}` (`SITE`, the core's own routes, which `app` includes beside
the faces').

A face with a screen (the owner's page, the operator's screen) keeps its templates and
static files in its own package (`templates/`, `static/`) and points `templates` and
`add_static` at them; `static/` beside this module holds what every screen reads
(`page.css`, the base stylesheet, named for the page it first served). Nothing is
fetched from elsewhere.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from transcriber.formats import timecode
from transcriber.http import i18n
from transcriber.http.errors import ApiError
from transcriber.http.faces import Face
from transcriber.http.sessions import safe_next

HERE = Path(__file__).resolve().parent

SECURITY_HEADERS = {
    # Only this site's own files: no inline script or style, no framing.
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; media-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}

STATIC_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}

STATIC: dict[str, tuple[bytes, str, str]] = {}
"""Every face's static files by name: (body, media type, the body's hash)."""


def add_static(folder: Path) -> None:
    """The files of `folder` served at `/static/{name}`; one name is one file, whichever
    face has it."""
    for path in sorted(folder.iterdir()):
        if path.suffix in STATIC_TYPES:
            body = path.read_bytes()
            found = (body, STATIC_TYPES[path.suffix], hashlib.sha256(body).hexdigest()[:12])
            if STATIC.setdefault(path.name, found) != found:
                raise ValueError(f"two static files are named {path.name}")


add_static(HERE / "static")


def static_url(name: str) -> str:
    # The content's hash in the address: a new version is a new address, so a file can
    # be cached for good.
    return f"/static/{name}?v={STATIC[name][2]}"


def make_templates(folder: Path, lang: i18n.Lang) -> jinja2.Environment:
    """The templates of `folder` in language `lang`: its messages (`_()`,
    `{% trans %}`), its dates, durations and sizes. A face adds its own globals."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_translations(lang.translations, newstyle=True)  # type: ignore[attr-defined]
    env.globals.update(
        static_url=static_url,
        lang=lang.code,
        languages=i18n.NAMES,
        script_words=lang.script_words(),
    )
    env.filters.update(
        number=lang.number,
        duration=lang.duration,
        clock=lang.clock,
        when=lang.when,
        size=lang.size,
        timecode=timecode,
        fixed=lang.fixed,
    )
    return env


Templates = dict[str, jinja2.Environment]
"""A face's templates, one environment per language code."""


def templates(folder: Path) -> Templates:
    return {code: make_templates(folder, lang) for code, lang in i18n.LANGS.items()}


def lang_of(request: Request) -> i18n.Lang:
    return i18n.pick(request.cookies, request.headers.get("accept-language", ""))


def html(
    envs: Templates, request: Request, name: str, status: int = 200, **context: Any
) -> HTMLResponse:
    """Template `name` of `envs` in the request's language; `here` (this page's address)
    lets the language switch come back to it."""
    lang = lang_of(request)
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return HTMLResponse(
        envs[lang.code].get_template(name).render(here=here, **context),
        status_code=status,
        headers={
            **SECURITY_HEADERS,
            "Content-Language": lang.code,
            "Vary": "Accept-Language, Cookie",
        },
    )


# --- the routes every screen shares ----------------------------------------------------

router = APIRouter(include_in_schema=False)


@router.get("/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC:
        raise ApiError(404, "no such file")
    body, media_type, _ = STATIC[name]
    return Response(
        body,
        media_type=media_type,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.get("/lang/{code}")
async def switch_language(
    request: Request, code: str, next: Annotated[str | None, Query(max_length=2000)] = None
) -> Response:
    """The language switch: remembered in a cookie for a year, then back to the page it
    was chosen on (a path of this site). A plain link, so it works signed out too;
    choosing a language changes nothing but how the pages read, so it needs no
    anti-forgery token."""
    if code not in i18n.LANGS:
        raise ApiError(404, "no such language")
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        i18n.COOKIE,
        code,
        max_age=i18n.COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )
    return response


_SITE_PATH = re.compile(r"/(?:static|lang)/[^/]+")


def is_site_path(path: str) -> bool:
    """A path of these shared routes: open to anyone (the files are the same for
    everybody; the switch changes only how pages read)."""
    return _SITE_PATH.fullmatch(path) is not None


SITE = Face("site", (router,), authenticates=is_site_path)
"""The core's own routes, assembled beside the faces."""
