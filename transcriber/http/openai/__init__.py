"""The OpenAI-compatible endpoint: `POST /v1/audio/transcriptions`,
`POST /v1/audio/translations` and `GET /v1/models`, as OpenAI's clients call them
(the `openai` SDKs, subtitle tools, voice pipelines), on the durable pipeline.

Each request becomes a record of the caller's owner (journaled `accepted` with
`via: openai`), like an upload to `POST /v1/recordings`; the request then waits until
the record is transcribed or stopped and answers in OpenAI's shape. The record's id is
in the `X-Transcriber-Recording-Id` header of every answer given after it committed.
The record does not depend on the request: a client that goes away, a wait that runs
past `TRANSCRIBER_OPENAI_WAIT_S`, a service that stops — the record goes on, and its
card and transcript are at `/v1/recordings/{id}` as for any other.

Errors of these routes are in OpenAI's shape,
`{"error": {"message", "type", "param", "code"}}`, which OpenAI's clients read, whichever
layer answers them (`errors.error_body`, this face's `ErrorShapes` entry, used by the
middleware and the application's handlers); the rest of the API keeps its own. Uploads
here are bounded as those to `POST /v1/recordings` are: the owner's uploads at once
(429), quota and disk (507), a silent body (408). Every 5xx answer here,
and any answer about a record the client must not send again (stopped, still working,
the service stopping), carries `x-should-retry: false`, which OpenAI's SDKs obey; a
retry that comes anyway (another client, a cut connection) names the first record
(`transcriber.intake.accept`: the same owner, bytes and fields).

`requests` reads and takes in a request, `outcome` waits for its record, `answers`
shapes the answer, `speakers` names the known speakers, `errors` answers in OpenAI's
shape, `routes` has the routes; `FACE` is what the application takes of it
(`transcriber.http.faces`).
"""

from transcriber.http.faces import Face
from transcriber.http.openai import routes
from transcriber.http.openai.errors import PREFIXES, error_body

UPLOADS = routes.UPLOADS

FACE = Face(
    "openai",
    (routes.router,),
    streamed=frozenset(("POST", path) for path in UPLOADS),
    error_prefixes=PREFIXES,
    error_body=error_body,
    no_retry=PREFIXES,
    not_stored=PREFIXES,  # an owner's transcripts, as the API's
)
