"""The HTTP API (capabilities `intake` and `archive`), over real HTTP on loopback, on a
real PostgreSQL. The fixtures and helpers here are shared by tests/integration/test_api_*.py."""

from __future__ import annotations

import base64
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.helpers.api_clients import (
    client,
    count_recordings,
    store_files,
    transcribe,
    upload,
    uploaded,
)
from tests.helpers.pg_pipeline import journal
from tests.helpers.postgres import admin
from transcriber.config import Config
from transcriber.db.database import WORK_CHANNEL, Database
from transcriber.owners import NewOwner
from transcriber.storage.local import LocalBlobs


def intake(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("intake", title)


def archive(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


CARD_FIELDS = {
    "id",
    "title",
    "summary",
    "topics",
    "filename",
    "size_bytes",
    "created_at",
    "milestone",
    "milestone_entered_at",
    "done",
    # Where it is (queued, a step at work, done, stopped), and while queued how many
    # records are ahead.
    "state",
    "queue_ahead",
    # The transcript can be read (from `recognized` on, before who spoke is known).
    "readable",
    "progress",
    "duration_s",
    "language",
    "stopped",
    "speakers",
    # How it was asked to be recognized: the task, and the owner's vocabulary.
    "task",
    "vocabulary",
    # Which of those came from the owner's settings (tests/integration/test_owner_settings.py).
    "from_settings",
    "links",
    # A live session's draft, while it runs and until the transcript is readable.
    "live_text",
}


# --- intake: tokens --------------------------------------------------------------------

ENDPOINTS = [
    ("GET", "/v1/recordings"),
    ("POST", "/v1/recordings"),
    ("GET", "/v1/recordings/{id}"),
    ("PATCH", "/v1/recordings/{id}"),
    ("GET", "/v1/recordings/{id}/text"),
    ("GET", "/v1/recordings/{id}/transcript.srt"),
    ("GET", "/v1/recordings/{id}/transcript.vtt"),
    ("GET", "/v1/recordings/{id}/transcript.json"),
    ("GET", "/v1/recordings/{id}/events"),
    ("DELETE", "/v1/recordings/{id}"),
    ("GET", "/v1/recordings/{id}/transcript.md"),
    ("GET", "/v1/recordings/{id}/transcript.docx"),
    ("POST", "/v1/recordings/{id}/shares"),
    ("GET", "/v1/recordings/{id}/shares"),
    ("DELETE", "/v1/recordings/{id}/shares/{share_id}"),
    ("PUT", "/v1/recordings/{id}/speakers/{label}"),
    ("PUT", "/v1/recordings/{id}/segments/{index}/speaker"),
    ("PUT", "/v1/recordings/{id}/segments/{index}"),
]


def endpoint(path: str, rid: str) -> str:
    return path.format(id=rid, share_id=uuid.uuid4(), label="2", index=0)


def body_of(method: str, path: str) -> dict[str, Any] | None:
    """A valid body for the route, so that only the owner check can refuse it."""
    if method == "PATCH":
        return {"title": "mine now"}
    if method == "PUT" and path.endswith("/segments/{index}"):
        return {"text": "mine now"}
    if method == "PUT":
        return {"name": "mine now"} if "/speakers/" in path else {"speaker": "Speaker 1"}
    return {} if method == "POST" else None


@intake("A request without a valid token is refused")
async def test_requests_without_a_valid_token_are_refused(
    db: Database, config: Config, base_url: str, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    before = (await count_recordings(db), store_files(config), await journal(db))
    credentials = [
        None,
        "Basic " + base64.b64encode(b"ann:secret").decode(),
        "Bearer tr_not-a-token",
        "Bearer",
        "Bearer " + "x" * 600,
    ]
    async with client(base_url) as anonymous:
        for method, path in ENDPOINTS:
            for credential in credentials:
                headers = {} if credential is None else {"Authorization": credential}
                r = await anonymous.request(
                    method,
                    endpoint(path, rid),
                    headers=headers,
                    json={"title": "hijacked"}
                    if method == "PATCH"
                    else body_of(method, path)
                    if method == "PUT"
                    else None,
                    files={"file": ("a.wav", b"data")} if method == "POST" else None,
                )
                assert r.status_code == 401, (method, path, credential, r.text)
                assert r.json() == {"error": "missing or invalid API token"}
                assert r.headers["www-authenticate"] == "Bearer"
    assert (await count_recordings(db), store_files(config), await journal(db)) == before


# --- intake: uploads ---------------------------------------------------------------------


@intake("An accepted upload has its file and its record before the answer")
async def test_form_upload_is_stored_and_recorded(
    db: Database, config: Config, as_ann: httpx.AsyncClient, ann: NewOwner
) -> None:
    audio = bytes(range(256)) * 1000
    r = await upload(as_ann, audio, name="Board meeting.wav", title="Board", language="EN")
    assert r.status_code == 201, r.text
    body = r.json()
    assert r.headers["location"] == f"/v1/recordings/{body['id']}"
    assert (body["milestone"], body["done"], body["stopped"]) == ("received", False, None)
    assert (body["title"], body["language"], body["filename"], body["size_bytes"]) == (
        "Board",
        "en",
        "Board meeting.wav",
        len(audio),
    )

    row = await db.fetchrow("recording", uuid.UUID(body["id"]))
    assert row["owner_id"] == ann.id
    [stored] = store_files(config)
    assert stored.read_bytes() == audio
    source = await db.run(
        lambda con: con.fetchval("SELECT source_path FROM recordings WHERE id = $1", row["id"])
    )
    assert Path(source) == stored
    first = (await journal(db, row["id"]))[0]
    assert (first["kind"], first["origin"], first["milestone"]) == (
        "accepted",
        "pipeline",
        "received",
    )
    assert (await as_ann.get(r.headers["location"])).json() == body


@intake("An accepted upload has its file and its record before the answer")
async def test_raw_body_upload(db: Database, config: Config, as_ann: httpx.AsyncClient) -> None:
    r = await as_ann.post(
        "/v1/recordings",
        content=b"OggS raw",
        params={"filename": "memo.ogg", "title": "Memo", "language": "ru"},
        headers={"Content-Type": "audio/ogg"},
    )
    assert r.status_code == 201, r.text
    assert {k: r.json()[k] for k in ("filename", "title", "language", "size_bytes")} == {
        "filename": "memo.ogg",
        "title": "Memo",
        "language": "ru",
        "size_bytes": 8,
    }

    # The name may also come from Content-Disposition (RFC 6266, UTF-8 included).
    r = await as_ann.post(
        "/v1/recordings",
        content=b"\x00\x01",
        headers={
            "Content-Type": "application/octet-stream",
            "Content-Disposition": "attachment; filename*=UTF-8''%D0%B7%D0%B0%D0%BC%D0%B5%D1%82"
            "%D0%BA%D0%B0.mp3",
        },
    )
    assert r.status_code == 201, r.text
    assert r.json()["filename"] == "заметка.mp3" and r.json()["title"] is None
    assert sorted(p.read_bytes() for p in store_files(config)) == [b"\x00\x01", b"OggS raw"]
    assert await count_recordings(db) == 2


async def test_an_upload_wakes_an_idle_worker(db: Database, as_ann: httpx.AsyncClient) -> None:
    async with db.listen(WORK_CHANNEL) as listener:
        await uploaded(as_ann)
        with trio.fail_after(5):
            assert await listener.payloads.receive() == "accepted"


@intake("A client's filename never becomes a path")
async def test_client_filename_never_becomes_a_path(
    tmp_path: Path, config: Config, as_ann: httpx.AsyncClient
) -> None:
    before = sorted(p for p in tmp_path.rglob("*"))
    body = await uploaded(as_ann, b"data", name="../../escape.wav")
    assert body["filename"] == "escape.wav"
    [stored] = store_files(config)
    assert stored.parent == LocalBlobs(config.home).uploads and stored.name != "escape.wav"
    assert len(stored.name) == 32 and int(stored.name, 16) >= 0  # a generated uuid hex
    created = sorted(set(tmp_path.rglob("*")) - set(before))
    assert set(created) <= {config.home, LocalBlobs(config.home).uploads, stored}


@intake("A malformed upload is refused and leaves nothing")
async def test_malformed_uploads_are_refused(
    db: Database, config: Config, as_ann: httpx.AsyncClient
) -> None:
    boundary = "b0undary"
    form = {"Content-Type": f"multipart/form-data; boundary={boundary}"}

    def part(name: str, value: bytes, filename: str | None = None) -> bytes:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        return (
            f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + value + b"\r\n"
        )

    end = f"--{boundary}--\r\n".encode()
    cases = [
        (422, "no 'file'", form, part("title", b"T") + end),
        (
            422,
            "unexpected form field 'owner_id'",
            form,
            part("file", b"x", "a.wav") + part("owner_id", b"2") + end,
        ),
        (
            422,
            "more than one file",
            form,
            part("file", b"x", "a.wav") + part("file", b"y", "b.wav") + end,
        ),
        (400, "ended before its last boundary", form, part("file", b"x" * 1000, "a.wav")),
        (400, "without a usable boundary", {"Content-Type": "multipart/form-data"}, b"x"),
        (422, "language", form, part("file", b"x", "a.wav") + part("language", b"english") + end),
        (422, "NUL", form, part("file", b"x", "a.wav") + part("title", b"a\x00b") + end),
        (422, "not UTF-8", form, part("file", b"x", "a.wav") + part("title", b"\xff") + end),
        (415, "multipart/form-data", {"Content-Type": "text/plain"}, b"hello"),
        (415, "multipart/form-data", {}, b"hello"),
    ]
    for status, words, headers, content in cases:
        r = await as_ann.post("/v1/recordings", content=content, headers=headers)
        assert r.status_code == status, (words, r.text)
        assert words in r.json()["error"], (words, r.text)
    r = await as_ann.post(
        "/v1/recordings",
        content=b"x",
        params={"language": "english"},
        headers={"Content-Type": "audio/wav"},
    )
    assert r.status_code == 422 and "language" in r.json()["error"]
    assert await count_recordings(db) == 0
    assert store_files(config) == []


@intake("An empty upload is refused")
async def test_empty_upload_is_refused(
    db: Database, config: Config, as_ann: httpx.AsyncClient
) -> None:
    raw = await as_ann.post("/v1/recordings", content=b"", headers={"Content-Type": "audio/wav"})
    form = await upload(as_ann, b"")
    for r in (raw, form):
        assert r.status_code == 400, r.text
        assert r.json() == {"error": "the upload is empty"}
    assert await count_recordings(db) == 0
    assert store_files(config) == []


# --- intake: health and the schema's shape ----------------------------------------------


@intake("Health says whether the database answers")
async def test_health_says_whether_the_database_answers(
    db_url: str, pg_admin_url: str, base_url: str
) -> None:
    async with client(base_url) as c:
        up = await c.get("/healthz")
        assert (up.status_code, up.json()["status"]) == (200, "ok")
        # What recognizes here (the recognition capability): no GPU on these machines.
        assert up.json()["recognizer"] == {
            "model": "whisper-base",
            "decoding": "batched",
            "device": "cpu",
            "compute_type": "int8",
        }
        name = urllib.parse.urlsplit(db_url).path.lstrip("/")
        await admin(pg_admin_url, f'DROP DATABASE "{name}" WITH (FORCE)')
        down = await c.get("/healthz")
    assert down.status_code == 503
    assert down.json()["status"] == "unavailable" and down.json()["error"]
    assert name not in down.text  # the cause is the operator's, in the log


async def test_openapi_describes_every_endpoint(base_url: str) -> None:
    async with client(base_url) as c:
        schema = (await c.get("/openapi.json")).json()
    paths = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops}
    assert {(m, p.replace("{id}", "{recording_id}")) for m, p in ENDPOINTS} | {
        ("GET", "/healthz"),
        ("GET", "/metrics"),
        # OpenAI-compatible (tests/integration/test_openai.py)
        ("POST", "/v1/audio/transcriptions"),
        ("POST", "/v1/audio/translations"),
        ("GET", "/v1/models"),
        # Transcribe again (tests/integration/test_page_again.py: another owner's is 404)
        ("POST", "/v1/recordings/{recording_id}/again"),
        # The owner's memory (tests/integration/test_owner_settings.py, test_voices.py)
        ("GET", "/v1/settings"),
        ("PATCH", "/v1/settings"),
        ("GET", "/v1/voices"),
        ("POST", "/v1/voices"),
        ("PATCH", "/v1/voices/{voice_id}"),
        ("DELETE", "/v1/voices/{voice_id}"),
    } == paths
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    card = schema["components"]["schemas"]["Card"]["properties"]
    assert set(card) == CARD_FIELDS


# --- archive: the card and the list -----------------------------------------------------


@archive("The owner reads the card of a new recording")
async def test_owner_reads_the_card_of_a_new_recording(as_ann: httpx.AsyncClient) -> None:
    posted = await uploaded(as_ann, b"abc", title="Standup")
    r = await as_ann.get(f"/v1/recordings/{posted['id']}")
    assert r.status_code == 200
    got = r.json()
    assert set(got) == CARD_FIELDS
    assert got == posted
    assert (got["milestone"], got["done"], got["stopped"], got["progress"]) == (
        "received",
        False,
        None,
        None,
    )
    base = f"/v1/recordings/{got['id']}"
    assert got["links"] == {
        "text": f"{base}/text",
        "srt": f"{base}/transcript.srt",
        "vtt": f"{base}/transcript.vtt",
        "json": f"{base}/transcript.json",
        "markdown": f"{base}/transcript.md",
        "docx": f"{base}/transcript.docx",
    }


@archive("The list pages through the owner's recordings, newest first")
async def test_list_pages_newest_first(
    db: Database, as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient
) -> None:
    mine = [(await uploaded(as_ann, title=f"ann {i}", language="ru"))["id"] for i in range(3)]
    await transcribe(db)  # two kinds of card: transcribed (language detected: en) ...
    mine += [(await uploaded(as_ann, title=f"ann {i}"))["id"] for i in range(3, 5)]
    theirs = {(await uploaded(as_ben))["id"] for _ in range(2)}
    pages, cursor = [], None
    while True:
        r = await as_ann.get(
            "/v1/recordings", params={"limit": 2, **({"cursor": cursor} if cursor else {})}
        )
        assert r.status_code == 200, r.text
        pages.append(r.json()["items"])
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [2, 2, 1]
    listed = [c for p in pages for c in p]
    assert [c["id"] for c in listed] == mine[::-1]
    assert not theirs & {c["id"] for c in listed}
    for c in listed:  # the list shows the very cards
        assert c == (await as_ann.get(f"/v1/recordings/{c['id']}")).json()
    assert [c["language"] for c in listed] == [None, None, "en", "en", "en"]
    everything = (await as_ann.get("/v1/recordings")).json()
    assert len(everything["items"]) == 5 and everything["next_cursor"] is None

    bad_cursor = await as_ann.get("/v1/recordings", params={"cursor": "not a cursor"})
    assert bad_cursor.status_code == 400 and "cursor" in bad_cursor.json()["error"]
    for params in ({"limit": 0}, {"limit": 101}):
        bad = await as_ann.get("/v1/recordings", params=params)
        assert bad.status_code == 422 and "error" in bad.json(), params


# --- archive: only the owner ---------------------------------------------------------------


@archive("Another owner's record is indistinguishable from a missing one")
async def test_another_owners_record_is_a_missing_one(
    db: Database, as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann, title="Private"))["id"]
    await transcribe(db)
    card_before = (await as_ann.get(f"/v1/recordings/{rid}")).json()
    assert card_before["done"]
    events_before = await journal(db, uuid.UUID(rid))
    unknown, malformed = str(uuid.UUID(int=42)), "not-an-id"
    for method, path in ENDPOINTS:
        if "{id}" not in path:
            continue
        answers = []
        for target in (rid, unknown, malformed):
            r = await as_ben.request(
                method,
                endpoint(path, target),
                json=body_of(method, path),
            )
            answers.append((r.status_code, r.json()))
        assert answers == [(404, {"error": "no such recording"})] * 3, (method, path)
    listed = (await as_ben.get("/v1/recordings")).json()["items"]
    assert listed == []
    assert (await as_ann.get(f"/v1/recordings/{rid}")).json() == card_before
    assert await journal(db, uuid.UUID(rid)) == events_before
