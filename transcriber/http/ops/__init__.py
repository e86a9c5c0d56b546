"""The operator's screen at /ops: the pipeline at a glance (updated live), the daemons
and what their workers hold, the stopped records filtered, searched and resumed, one
record's metadata, stop flag and whole journal, every owner's share links (ids, owners,
times, states; never a note) and revoking them.

Operators are not owners: they sign in with an operator's token (`transcriber operator
add`) to a session of their own kind (`session`), and nothing here serves audio or
transcript text. Server-rendered like the owner's page, with the base stylesheet every
screen shares, its own (`static/`) and one small script that refreshes the glance;
the charts are inline SVG (`html`). In the reader's language as the owner's page is
(`transcriber.http.i18n`); the names the operator also meets in the CLI, the metrics
and the filters (milestones, stop reasons, journal kinds and origins) are shown as they
are, a stop reason with its plain words beside it.

`sign_in` signs in and out, `shares` lists and revokes share links, `screens` has the
rest; `FACE` is what the application takes of it (`transcriber.http.faces`).
"""

from transcriber.http.faces import Face
from transcriber.http.ops import screens, shares, sign_in
from transcriber.http.ops.session import PREFIX, SIGNIN_PATH
from transcriber.http.sessions import SIGNIN_FORM_MAX


def is_ops_path(path: str) -> bool:
    """A path of the screen: it authenticates by its own session cookie, so the API's
    bearer-token guard lets it through (as the owner's page's)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


BODY_CAPS = {("POST", SIGNIN_PATH): SIGNIN_FORM_MAX}
"""(method, path) → bytes of a body read whole that is capped below the API's own: the
sign-in form, which a stranger sends, as the page's (the screen's other forms are sent
with an operator's session)."""

FACE = Face(
    "ops",
    (sign_in.router, screens.router, shares.router),
    authenticates=is_ops_path,
    body_caps=BODY_CAPS,
)
