"""What a face of the service gives the application, and nothing else.

A face is one way in for one kind of client, a package under `transcriber.http`: the
JSON API (`api`), the OpenAI-compatible endpoint (`openai`), the owner's page with the
share view (`page`), the operator's screen (`ops`). Each package's `__init__.py`
exports `FACE`, a `Face`, and `app.FACES` lists them; a new face (a live endpoint) is a
package with its `FACE` and one line there. Faces never import each other, only this
core (the modules beside this one) and the domain below HTTP — `pyproject.toml`'s
import contracts check it.

Every face names its modules by their role, the same in each:

- `__init__.py`: `FACE`, built from the face's own modules;
- `shapes.py`: the pydantic models of its bodies and answers (where it has any);
- `session.py`: its kind of sign-in session and the dependencies that read it (a face
  that authenticates by a cookie of its own);
- `html.py`: its templates (`templates/` beside it) and static files (`static/`),
  rendered by `transcriber.http.rendering`;
- one module per area or screen besides, each with an `APIRouter` named `router`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
from fastapi import APIRouter, Request, Response

from transcriber.db.database import Database
from transcriber.http.errors import ErrorShape


def _nobody(path: str) -> bool:
    return False


@attrs.frozen
class Face:
    """One face's part of the application.

    - `routers`: its routes, included in this order;
    - `public`: exact paths answered to anyone (no owner's token);
    - `authenticates`: the paths it checks itself (a session cookie, a share link's
      secret), which `middleware.Guard` so lets through without a bearer token;
    - `streamed`: (method, path) of the routes that stream their body under their own
      cap; every other body is capped at `middleware.JSON_BODY_MAX` ...
    - `body_caps`: ... or below it, (method, path) → bytes;
    - `error_prefixes` and `error_body`: where its errors take another shape than the
      API's own `{"error": ...}`, and that shape (`errors.ErrorShapes`);
    - `no_retry`: prefixes whose clients retry a 5xx on their own unless told not to;
    - `not_stored`: prefixes whose every answer is one owner's data, which no cache
      may keep: `Cache-Control: private, no-store` on each, whichever layer answers (a
      401 of the guard, an error, a success), unless the answer says its own;
    - `session_owner`: the owner a request to one of its paths with a body is vouched
      for by (its session), or None (`middleware.Guard` serves strangers' bodies out of
      a budget of their own);
    - `not_found_page`: the page a browser navigating to an address no route answers
      gets (404), instead of the API's JSON; one face at most has one.
    """

    name: str
    routers: tuple[APIRouter, ...]
    public: frozenset[str] = frozenset()
    authenticates: Callable[[str], bool] = _nobody
    streamed: frozenset[tuple[str, str]] = frozenset()
    body_caps: Mapping[tuple[str, str], int] = attrs.field(factory=dict)
    error_prefixes: tuple[str, ...] = ()
    error_body: ErrorShape | None = None
    no_retry: tuple[str, ...] = ()
    not_stored: tuple[str, ...] = ()
    session_owner: Callable[[Database, dict[str, Any]], Awaitable[int | None]] | None = None
    not_found_page: Callable[[Request], Awaitable[Response]] | None = None
