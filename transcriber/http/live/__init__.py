"""The live face: `GET /v1/realtime?intent=transcription`, OpenAI's realtime
transcription protocol over a WebSocket (the `openai` SDK's `client.realtime.connect`),
for captions while people speak — and a kept record when they stop.

`realtime` has the route and a session's loop, `turns` a session's state and bounds,
`events` the server's events, `recognizer` the decoding of a committed turn, `kept`
the session's audio and its record, `errors` OpenAI's error shape; `FACE` is what the
application takes of it (`transcriber.http.faces`)."""

from transcriber.http.faces import Face
from transcriber.http.live import realtime
from transcriber.http.live.errors import PREFIXES, error_body

FACE = Face(
    "live",
    (realtime.router,),
    error_prefixes=PREFIXES,
    error_body=error_body,
    not_stored=PREFIXES,
)
