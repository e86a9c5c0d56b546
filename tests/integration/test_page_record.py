"""The owner's record page (capability `page`) over real HTTP on loopback, on a real
PostgreSQL, without a browser: its audio in ranges, corrections and their exports, and
what reaches the page's routes. tests/integration/test_page.py has the sessions, the
list and another owner."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx
import pytest

from tests.helpers.api_clients import (
    SEGMENTS,
    uploaded,
)
from tests.helpers.pages import (
    correct,
    state_of_record,
    transcribed_with_audio,
)
from tests.helpers.pg_pipeline import journal
from tests.helpers.sql_text import code_only
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.db.named_sql import BENCH_AREAS, load_queries
from transcriber.http import app as app_module
from transcriber.http import page, rendering
from transcriber.http.page import shared_view

ROOT = Path(__file__).resolve().parents[2]


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


# --- the record page: audio, corrections ---------------------------------------------------------


@scenario("The audio is served in ranges")
async def test_audio_ranges(
    db: Database, config: Config, as_ann: httpx.AsyncClient, page_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    r = await page_ann.get(f"/recordings/{rid}/audio")
    assert r.status_code == 404  # not normalized yet
    audio = b"RIFF" + bytes(range(256)) * 40
    await transcribed_with_audio(db, config)
    whole = await page_ann.get(f"/recordings/{rid}/audio")
    assert (whole.status_code, whole.content, whole.headers["accept-ranges"]) == (
        200,
        audio,
        "bytes",
    )
    assert whole.headers["content-type"] == "audio/wav"
    part = await page_ann.get(f"/recordings/{rid}/audio", headers={"Range": "bytes=10-19"})
    assert (part.status_code, part.content) == (206, audio[10:20])
    assert part.headers["content-range"] == f"bytes 10-19/{len(audio)}"
    tail = await page_ann.get(f"/recordings/{rid}/audio", headers={"Range": "bytes=-5"})
    assert (tail.status_code, tail.content) == (206, audio[-5:])
    rest = await page_ann.get(f"/recordings/{rid}/audio", headers={"Range": "bytes=100-"})
    assert (rest.status_code, rest.content) == (206, audio[100:])
    past = await page_ann.get(f"/recordings/{rid}/audio", headers={"Range": f"bytes={len(audio)}-"})
    assert (past.status_code, past.headers["content-range"]) == (416, f"bytes */{len(audio)}")
    # Positions of thousands of digits: past any file (they were a 500).
    huge = "9" * 5000
    far = await page_ann.get(f"/recordings/{rid}/audio", headers={"Range": f"bytes={huge}-"})
    assert far.status_code == 416
    to_end = await page_ann.get(f"/recordings/{rid}/audio", headers={"Range": f"bytes=0-{huge}"})
    assert (to_end.status_code, to_end.content) == (206, audio)
    last = await page_ann.get(f"/recordings/{rid}/audio", headers={"Range": f"bytes=-{huge}"})
    assert (last.status_code, last.content) == (206, audio)
    for r in (whole, part, far):
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "sandbox" in r.headers["content-security-policy"]


@scenario("A corrected word is in the downloaded SRT and the machine text stays available")
async def test_correction_is_exported_everywhere(
    db: Database, config: Config, as_ann: httpx.AsyncClient, page_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribed_with_audio(db, config)
    machine_srt = (await as_ann.get(f"/v1/recordings/{rid}/transcript.srt")).text
    r = await correct(page_ann, rid, 0, "  Hello, wide world.  ")
    assert r.json() == {
        "text": "Hello, wide world.",
        "machine_text": "Hello world.",
        "corrected": True,
    }
    page = (await page_ann.get(f"/recordings/{rid}")).text
    assert "Hello, wide world." in page and "Machine text: <span>Hello world.</span>" in page
    for c, base in ((page_ann, f"/recordings/{rid}"), (as_ann, f"/v1/recordings/{rid}")):
        download = await c.get(f"{base}/transcript.srt")
        srt = download.text
        assert "Hello, wide world." in srt and "Hello world." not in srt
        # A download opened by itself is data: never sniffed, never a page with powers.
        assert download.headers["x-content-type-options"] == "nosniff"
        assert download.headers["content-security-policy"].startswith("default-src 'none'")
        assert "sandbox" in download.headers["content-security-policy"]
        assert (await c.get(f"{base}/transcript.srt?machine=true")).text == machine_srt
        assert "Hello, wide world." in (await c.get(f"{base}/transcript.vtt")).text
        j = (await c.get(f"{base}/transcript.json")).json()
        assert j["text"] == "Hello, wide world. Goodbye."
        assert j["segments"][0] | {} == {
            **SEGMENTS[0],
            "text": "Hello, wide world.",
            "machine_text": "Hello world.",
            "corrected": True,
        }
    assert (await as_ann.get(f"/v1/recordings/{rid}/text")).text == "Hello, wide world. Goodbye.\n"
    download = await page_ann.get(f"/recordings/{rid}/transcript.srt")
    # Named after the file uploaded (no title given), without its extension.
    assert download.headers["content-disposition"] == (
        "attachment; filename=\"talk.srt\"; filename*=UTF-8''talk.srt"
    )
    # The machine's transcript is stored as it was recognized; the change is journaled.
    assert (await db.fetchrow("transcript", uuid.UUID(rid)))["text"] == "Hello world. Goodbye."
    assert (await journal(db, uuid.UUID(rid)))[-1]["kind"] == "corrected"
    # The page's journal numbers events within the record, as `/events` does.
    events = (await as_ann.get(f"/v1/recordings/{rid}/events")).json()["events"]
    shown = re.findall(
        r'<li value="(\d+)"><time[^>]*>[^<]*</time> — <strong>([^<]+)</strong>',
        (await page_ann.get(f"/recordings/{rid}")).text,
    )
    assert [n for n, _ in shown] == [str(e["id"]) for e in events]
    # In the owner's words (test_page_progress.py says them all).
    assert shown[0][1] == "Uploaded" and shown[-1][1] == "Text corrected"
    assert events[0]["id"] == 1
    # Restoring goes back to the machine text.
    r = await page_ann.post(
        f"/recordings/{rid}/segments/0",
        data={"restore": "1"},
        headers={"X-CSRF-Token": page_ann.csrf},
    )  # type: ignore[attr-defined]
    assert r.json()["corrected"] is False
    assert (await as_ann.get(f"/v1/recordings/{rid}/transcript.srt")).text == machine_srt


@scenario("A correction too long or with control characters is refused next to the field")
async def test_bad_corrections_are_refused(
    db: Database, config: Config, as_ann: httpx.AsyncClient, page_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribed_with_audio(db, config)
    before = await state_of_record(db, rid)
    cases = {
        "x" * 2001: "at most 2000",
        "two\nlines": "U+000A",
        "bell\x07": "U+0007",
        "nul\x00": "U+0000",
    }
    for text, words in cases.items():
        r = await correct(page_ann, rid, 1, text)
        assert r.status_code == 422 and words in r.json()["error"], (text, r.text)
    assert (await correct(page_ann, rid, 2, "no such segment")).status_code == 404
    assert (await correct(page_ann, rid, -1, "no such segment")).status_code == 404
    assert await state_of_record(db, rid) == before
    # The limit itself is fine.
    assert (await correct(page_ann, rid, 1, "y" * 2000)).status_code == 200


@scenario("The pipeline never writes corrections")
def test_only_the_page_writes_corrections() -> None:
    writes = re.compile(r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+corrections\b", re.I)
    writers = {
        name for name, sql in load_queries(BENCH_AREAS).items() if writes.search(code_only(sql))
    }
    assert writers == {"correction_set", "correction_clear"}
    callers = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "transcriber").rglob("*.py")
        for name in writers
        if f'"{name}"' in p.read_text()
    }
    assert callers == {"transcriber/records/corrections.py"}
    # ... whose writers only `correct_segment` calls, which only the owner's faces call:
    # the page's correction and the API's PUT of a segment's text.
    writing = ("set_correction(", "clear_correction(", "correct_segment(")
    users = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "transcriber").rglob("*.py")
        if p != ROOT / "transcriber/records/corrections.py"
        and any(w in p.read_text() for w in writing)
    }
    assert users == {"transcriber/http/page/edits.py", "transcriber/http/api/corrections.py"}


def concrete(template: str, rid: uuid.UUID) -> str:
    """A route's path with every parameter a route has filled in."""
    return template.format(
        recording_id=rid,
        index=0,
        ext="srt",
        name="page.css",
        code="ru",
        share_id=rid,
        secret="A" * 43,
        label="2",
        batch=rid,
        voice_id=rid,
    )


def test_page_paths_are_told_from_the_api() -> None:
    # A guard that asks for the API's bearer token lets exactly the page's paths through.
    rid = uuid.uuid4()
    faces = (page.FACE, rendering.SITE)  # the page's and the files and switch it shares
    for face in faces:
        for route in (r for router in face.routers for r in router.routes):
            path = concrete(route.path, rid)
            assert face.authenticates(path), path
    for path in (
        "/v1/recordings",
        f"/v1/recordings/{rid}/transcript.srt",
        "/healthz",
        "/metrics",
        "/openapi.json",
        "/static",
        "/recordingsx",
    ):
        assert not any(face.authenticates(path) for face in faces), path
    assert {("POST", "/upload")} == page.STREAMED


async def test_every_route_needs_the_token_or_a_session(base_url: str) -> None:
    # The guard lets the page's paths through to the page's own session check: nothing
    # of an owner's answers without one or the other.
    rid = uuid.uuid4()
    open_to_all = {("GET", "/signin"), ("GET", "/ops/signin"), ("GET", "/static/page.css")}
    # The language switch sets its cookie for anyone (it changes only how pages read).
    switch = ("GET", "/lang/ru")
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as anonymous:
        for route in (r for router in app_module.ROUTERS for r in router.routes):
            path = concrete(route.path, rid)
            if path in app_module.PUBLIC_PATHS:
                continue
            if shared_view.is_share_path(path):
                # A shared link is its own capability: a made-up one is refused alike.
                r = await anonymous.get(path)
                assert r.status_code == 404, (path, r.status_code)
                continue
            # A WebSocket route (the live face's) has no methods: its upgrade is a GET,
            # and a plain GET without a token is refused by the guard as any other.
            for method in getattr(route, "methods", {"GET"}) - {"HEAD"}:
                r = await anonymous.request(method, path)
                if (method, path) == switch:
                    assert r.status_code == 303 and r.cookies.get("transcriber_lang") == "ru"
                    continue
                wanted = 200 if (method, path) in open_to_all else 401
                assert r.status_code == wanted, (method, path, r.status_code, r.text)
                # The sign-in form posted without a token is the form again, with why
                # (in Russian once the switch above has set its cookie).
                if (method, path) == ("POST", "/signin"):
                    assert re.search("not an owner&#39;s API token|не токен API владельца", r.text)
                elif (method, path) == ("POST", "/ops/signin"):  # the operator's screen's
                    assert re.search("not an operator&#39;s token|не токен оператора", r.text)
                elif wanted != 200:
                    assert set(r.json()) == {"error"}, (method, path, r.text)
