"""Clients of the HTTP API for the tests that talk to it through httpx, and fake audio
steps that take a record to a transcript (the API's fixtures `config`, `ann`, `ben`,
`base_url`, `as_ann`, `as_ben` are in tests/integration/conftest.py)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx

from actors import Wakeup, Worker
from tests.helpers.pg_pipeline import table
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.owners import NewOwner
from transcriber.pipeline.pg_queue import PgQueue, Saved
from transcriber.pipeline.prometheus import RUNTIME_METRICS
from transcriber.pipeline.step_table import step_table
from transcriber.storage.local import LocalBlobs

SEGMENTS = [
    {"start": 0.0, "end": 1.5, "text": "Hello world."},
    {"start": 1.5, "end": 3.25, "text": "Goodbye."},
]
TEXT = "Hello world. Goodbye."


def client(base_url: str, owner: NewOwner | None = None) -> httpx.AsyncClient:
    headers = {} if owner is None else {"Authorization": f"Bearer {owner.token}"}
    return httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30)


def fake_audio() -> bytes:
    """Bytes no other upload of the test has: the same bytes with the same fields again
    would name the first record (retries never duplicate)."""
    return b"RIFF fake audio " + uuid.uuid4().hex.encode()


async def upload(
    c: httpx.AsyncClient, data: bytes | None = None, *, name: str = "talk.wav", **fields: str
) -> httpx.Response:
    data = fake_audio() if data is None else data
    return await c.post("/v1/recordings", files={"file": (name, data, "audio/wav")}, data=fields)


async def uploaded(
    c: httpx.AsyncClient, data: bytes | None = None, **fields: str
) -> dict[str, Any]:
    r = await upload(c, data, **fields)
    assert r.status_code == 201, r.text
    return r.json()


def store_files(config: Config) -> list[Path]:
    return (
        sorted(LocalBlobs(config.home).uploads.iterdir())
        if LocalBlobs(config.home).uploads.exists()
        else []
    )


async def count_recordings(db: Database) -> int:
    return await db.run(lambda con: con.fetchval("SELECT count(*) FROM recordings"))


def worker(db: Database, **steps: Any) -> Worker:
    table_ = table(**steps)
    # Counts where /metrics looks, as the daemon's workers do.
    return Worker("w", PgQueue(db, table_), table_, Wakeup(), RUNTIME_METRICS)


async def normalized(job: Any, progress: Any) -> Saved:
    return Saved("save_normalized", ("/store/audio.wav", 3.25))


async def recognized(job: Any, progress: Any) -> Saved:
    return Saved("save_transcript", (TEXT, SEGMENTS, "en", "test-model"))


async def transcribe(db: Database) -> None:
    """Take every waiting record through both steps with fake audio steps."""
    w = worker(db, normalize=normalized, recognize=recognized)
    while await w.work_once():
        pass


async def diarized_with(db: Database, c: httpx.AsyncClient, **steps: Any) -> str:
    """The id of an upload asking two speakers, carried to the end by a worker with
    `steps` (fakes of normalize, recognize, diarize), which found two."""
    rid = (await uploaded(c, speakers="2"))["id"]
    table_ = step_table(**steps)
    w = Worker("w", PgQueue(db, table_), table_, Wakeup())
    while await w.work_once():
        pass
    card = (await c.get(f"/v1/recordings/{rid}")).json()
    assert card["done"] and card["speakers"]["found"] == 2, card
    return str(rid)
