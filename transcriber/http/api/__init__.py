"""The JSON API under `/v1/recordings`: owners upload recordings (`recordings`), read
their cards and journals (`events`), edit their own fields, correct a segment's text
(`corrections`), name who spoke (`speakers`), fetch transcripts (`transcripts`) and
share read-only links (`shares`), keep their defaults (`settings`) and their library of
voices (`voices`);
and the service's health and metrics for whoever runs it (`health`). Authenticated by
the owner's bearer token (`transcriber.http.auth`), answered in JSON, documented in
the OpenAPI document by `shapes`.

An owner sees only their own records: another owner's id, an unknown id and a
malformed id all answer the same 404, so ids cannot be probed. `FACE` is what the
application takes of it (`transcriber.http.faces`).
"""

from transcriber.http.api import (
    again,
    corrections,
    events,
    health,
    recordings,
    settings,
    shares,
    speakers,
    transcripts,
    voices,
)
from transcriber.http.faces import Face

FACE = Face(
    "api",
    (
        recordings.router,
        transcripts.router,
        speakers.router,
        corrections.router,
        events.router,
        health.router,
        shares.router,
        settings.router,
        voices.router,
        again.router,
    ),
    public=frozenset({"/healthz", "/metrics"}),
    streamed=frozenset({("POST", "/v1/recordings")}),
    # An owner's cards, journals, transcripts and links: never kept by a cache.
    not_stored=("/v1/recordings", "/v1/settings", "/v1/voices"),
)
