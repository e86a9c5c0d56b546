"""The HTTP API: owners upload recordings, read their cards, edit their own fields and
fetch transcripts. FastAPI, one router per area (see `app.ROUTERS`), served by
Hypercorn's trio worker in the service's own trio process.

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
