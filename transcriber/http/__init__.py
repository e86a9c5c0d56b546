"""The service over HTTP: FastAPI, served by Hypercorn's trio worker in the service's
own trio process. One package per face — `api` (the JSON API), `openai` (the
OpenAI-compatible endpoint), `page` (the owner's page and the share view), `ops` (the
operator's screen) — over the core beside them, which the faces share: the application
that assembles them (`app`, `faces`), serving, middleware, errors, deps and auth,
sessions, i18n and rendering, uploads turned into calls of the domain intake
(`uploads`, `quotas`, `accepting`; transcriber.intake bounds, stores and commits them),
waiting, and what every face shows of an owner's records (`owned_cards`, `downloads`,
`share_links`, `speaker_changes`). Faces import the core, never each other, and the
core imports no face but in `app` (pyproject.toml's import contracts).

An owner sees only their own records: another owner's id, an unknown id and a
malformed id all answer the same 404, so ids cannot be probed.
"""

from transcriber.http.app import create_app
from transcriber.http.serving import install_hypercorn_error_hook, serve_app, server_config, serving

__all__ = [
    "create_app",
    "install_hypercorn_error_hook",
    "serve_app",
    "server_config",
    "serving",
]
