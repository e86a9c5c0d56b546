"""The owner's page from a test's side, without a browser: a signed-in client holding
the page's session cookie and anti-forgery token, and records made transcribed with
audio the page can play."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tests.helpers.api_clients import SEGMENTS, worker
from tests.helpers.pg_pipeline import journal
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.page import session as page_sign_in
from transcriber.owners import NewOwner
from transcriber.pipeline.pg_queue import Saved
from transcriber.storage.local import LocalBlobs


@contextlib.asynccontextmanager
async def signed_in(base_url: str, owner: NewOwner) -> AsyncIterator[httpx.AsyncClient]:
    """A client holding `owner`'s page session (cookie), its anti-forgery token in
    `.csrf`."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as c:
        r = await c.post("/signin", data={"token": owner.token, "next": "/"})
        assert r.status_code == 303, r.text
        c.csrf = csrf_of((await c.get("/")).text)  # type: ignore[attr-defined]
        yield c


def csrf_of(html: str) -> str:
    m = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
    assert m, html[:500]
    return m.group(1)


def with_audio(config: Config, audio: bytes = b"RIFF" + bytes(range(256)) * 40) -> Any:
    """A normalize step that keeps `audio` as the record's normalized audio."""

    async def normalize(job: Any, progress: Any) -> Saved:
        LocalBlobs(config.home).audio.mkdir(parents=True, exist_ok=True)
        path = LocalBlobs(config.home).audio / f"{job.claim.id}.wav"
        path.write_bytes(audio)
        return Saved("save_normalized", (str(path), 3.25))

    return normalize


async def transcribed_with_audio(
    db: Database,
    config: Config,
    segments: list[dict[str, Any]] = SEGMENTS,
    text: str = "Hello world. Goodbye.",
) -> None:
    """Every waiting record normalized with audio and transcribed as `text`."""

    async def recognize(job: Any, progress: Any) -> Saved:
        return Saved("save_transcript", (text, segments, "en", "test-model"))

    w = worker(db, normalize=with_audio(config), recognize=recognize)
    while await w.work_once():
        pass


async def correct(
    c: httpx.AsyncClient, rid: str, index: int, text: str, **headers: str
) -> httpx.Response:
    return await c.post(
        f"/recordings/{rid}/segments/{index}",
        data={"text": text},
        headers={"X-CSRF-Token": c.csrf, **headers},
    )  # type: ignore[attr-defined]


async def state_of_record(db: Database, rid: str) -> tuple[Any, ...]:
    rec = await db.fetchrow("recording", uuid.UUID(rid))
    fixes = await db.fetch("owner_corrections", rec["owner_id"], uuid.UUID(rid))
    return (dict(rec), [dict(f) for f in fixes], len(await journal(db, uuid.UUID(rid))))


@contextlib.asynccontextmanager
async def as_operator(base_url: str, token: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client holding an operator's /ops session, its anti-forgery token in `.csrf`."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as c:
        r = await c.post("/ops/signin", data={"token": token, "next": "/ops"})
        assert r.status_code == 303, r.text
        c.csrf = csrf_of((await c.get("/ops")).text)  # type: ignore[attr-defined]
        yield c


async def owner_session_secret(base_url: str, owner: NewOwner) -> str:
    """The secret of a page session `owner` signs in to."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as c:
        r = await c.post("/signin", data={"token": owner.token, "next": "/"})
        assert r.status_code == 303
        return r.cookies[page_sign_in.COOKIE]
