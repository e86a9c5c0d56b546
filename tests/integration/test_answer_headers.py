"""What an owner's answers tell caches and browsers (capability `archive`), over real
HTTP on a real PostgreSQL: the API's JSON, whatever layer answers it, and every
download, the API's and the page's, say `Cache-Control: private, no-store`; downloads
carry the closed, sandboxed CSP; the page's HTML says `no-store` with its own CSP.
The shared view's are in test_shares.py."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.helpers.api_clients import client, uploaded
from tests.helpers.pages import signed_in, transcribed_with_audio
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.owned_cards import TRANSCRIPT_PATHS
from transcriber.owners import NewOwner

NOT_STORED = "private, no-store"
DOWNLOAD_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox"


@pytest.mark.scenario("archive", "An owner's answers and downloads are kept by no cache")
async def test_owner_answers_are_not_stored(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    early = (await uploaded(as_ann, title="Board meeting"))["id"]
    # Not transcribed yet: the download's 409 (the card) says the same.
    too_early = await as_ann.get(f"/v1/recordings/{early}/transcript.srt")
    assert too_early.status_code == 409 and too_early.headers["cache-control"] == NOT_STORED
    await transcribed_with_audio(db, config)
    rid = early
    json_answers = {
        "card": await as_ann.get(f"/v1/recordings/{rid}"),
        "list": await as_ann.get("/v1/recordings"),
        "events": await as_ann.get(f"/v1/recordings/{rid}/events"),
        "shares": await as_ann.get(f"/v1/recordings/{rid}/shares"),
        "made": await as_ann.post(f"/v1/recordings/{rid}/shares", json={}),
        "edited": await as_ann.patch(f"/v1/recordings/{rid}", json={"title": "New"}),
        "unknown": await as_ann.get(f"/v1/recordings/{uuid.uuid4()}"),
        "refused": await as_ann.post(f"/v1/recordings/{rid}/shares", json={"expires_in_days": 0}),
    }
    async with client(base_url) as stranger:
        json_answers["no token"] = await stranger.get(f"/v1/recordings/{rid}")
    statuses = {k: r.status_code for k, r in json_answers.items()}
    assert statuses == {
        "card": 200,
        "list": 200,
        "events": 200,
        "shares": 200,
        "made": 201,
        "edited": 200,
        "unknown": 404,
        "refused": 422,
        "no token": 401,
    }
    for name, r in json_answers.items():
        assert r.headers["cache-control"] == NOT_STORED, name
    # The OpenAI endpoint's answers are an owner's transcripts too.
    assert (await as_ann.get("/v1/models")).headers["cache-control"] == NOT_STORED

    for kind, path in TRANSCRIPT_PATHS.items():
        r = await as_ann.get(f"/v1/recordings/{rid}/{path}")
        assert r.status_code == 200, kind
        assert r.headers["cache-control"] == NOT_STORED, kind
        assert r.headers["content-security-policy"] == DOWNLOAD_CSP, kind
    async with signed_in(base_url, ann) as page:
        for ext in ("txt", "srt", "vtt", "json", "md", "docx"):
            for query in ("", "?machine=true"):
                r = await page.get(f"/recordings/{rid}/transcript.{ext}{query}")
                assert r.status_code == 200, ext
                assert r.headers["cache-control"] == NOT_STORED, ext
                assert r.headers["content-security-policy"] == DOWNLOAD_CSP, ext
        # The page's own HTML: never stored, with the page's policy.
        for path in ("/", f"/recordings/{rid}"):
            r = await page.get(path)
            assert r.status_code == 200 and r.headers["cache-control"] == "no-store", path
            assert "default-src 'self'" in r.headers["content-security-policy"]
