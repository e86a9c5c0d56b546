"""Blob storage in an S3-compatible object store (capability `blob-storage`): moto's
standalone server on loopback, the real boto3 client code speaking real HTTP."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from actors import Wakeup, Worker
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.moto_store import EchoRecognizer, MotoStore, keys, multipart_uploads
from tests.helpers.pg_pipeline import at, db_now, state
from tests.helpers.raw_http import (
    RawUpload,
    send_until_answered,
    until,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.intake import accept_file
from transcriber.owners import add_owner
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.storage.configured import blobs_of
from transcriber.storage.s3 import PART_SIZE, S3Blobs


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("blob-storage", title)


@attrs.frozen
class Bucket:
    name: str
    moto: MotoStore
    config: Config

    def keys(self, prefix: str = "") -> list[str]:
        return keys(self.moto, self.name, prefix)


@pytest.fixture
def bucket(moto: MotoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)
    name = moto.new_bucket()
    return Bucket(name, moto, Config(home=tmp_path / "home", storage_url=f"s3://{name}/tx"))


async def source_of(db: Database, rid: Any) -> str:
    return await db.run(
        lambda con: con.fetchval("SELECT source_path FROM recordings WHERE id = $1", rid)
    )


def worker(db: Database, config: Config, queue: PgQueue | None = None) -> Worker:
    steps = audio_steps(config)
    return Worker("w", queue or PgQueue(db, steps), steps, Wakeup())


@scenario("Uploads stream into the object store and a refused one leaves nothing")
async def test_uploads_stream_into_the_store(db: Database, bucket: Bucket) -> None:
    owner = await add_owner(db, "ann")
    limit = PART_SIZE + (PART_SIZE // 2)
    async with (
        serving(create_app(db, bucket.config, max_upload_bytes=limit)) as url,
        httpx.AsyncClient(
            base_url=url, timeout=30, headers={"Authorization": f"Bearer {owner.token}"}
        ) as c,
    ):
        # Chunked, so the server finds out only after a part went to the store.
        refused = await RawUpload.start(url, owner)
        try:
            status, _ = await send_until_answered(refused, 2 * PART_SIZE)
        finally:
            await refused.aclose()
        assert status == 413
        assert bucket.keys() == [] and multipart_uploads(bucket.moto, bucket.name) == []

        # A client that goes away halfway: its multipart upload is aborted.
        cut = await RawUpload.start(url, owner)
        while cut.sent < PART_SIZE + (1 << 20):
            await cut.send(b"\x55" * (1 << 20))
        await until(lambda: multipart_uploads(bucket.moto, bucket.name) != [], "a part sent")
        await cut.aclose()
        await until(lambda: multipart_uploads(bucket.moto, bucket.name) == [], "aborted")
        assert bucket.keys() == []

        small = await c.post("/v1/recordings", files={"file": ("a.wav", b"RIFF", "audio/wav")})
        big = await c.post(
            "/v1/recordings",
            content=b"\x55" * (PART_SIZE + 100),
            headers={"Content-Type": "audio/wav"},
        )
    assert (small.status_code, big.status_code) == (201, 201), (small.text, big.text)
    sources = {await source_of(db, r.json()["id"]) for r in (small, big)}
    assert sources == {f"s3://{bucket.name}/{k}" for k in bucket.keys("tx/uploads/")}
    sizes = sorted(
        o["Size"] for o in bucket.moto.client().list_objects_v2(Bucket=bucket.name)["Contents"]
    )
    assert sizes == [4, PART_SIZE + 100]
    assert multipart_uploads(bucket.moto, bucket.name) == []
    assert not (bucket.config.home / "uploads").exists()


@scenario("The steps read and write audio through the object store")
async def test_steps_read_and_write_audio_through_the_store(
    db: Database, owner_id: int, bucket: Bucket
) -> None:
    with EchoRecognizer() as recognizer:
        config = attrs.evolve(bucket.config, recognizer_url=recognizer.url)
        rid = await accept_file(db, config, SAMPLES / "en.ogg", owner_id)
        w = worker(db, config)
        assert await w.work_once() and await w.work_once()
    row = await state(db, rid)
    assert row["milestone"] == "transcribed" and row["stopped_at"] is None
    [audio_key] = bucket.keys("tx/audio/")
    assert row["audio_path"] == f"s3://{bucket.name}/{audio_key}"
    assert audio_key.startswith(f"tx/audio/{rid}.")  # <id>.<claim token>.wav
    size = bucket.moto.client().head_object(Bucket=bucket.name, Key=audio_key)["ContentLength"]
    transcript = await db.fetchrow("transcript", rid)
    assert transcript["text"] == f"{size} bytes"  # the recognizer got the stored audio whole
    # Scratch copies are gone; nothing of the recording was kept on this host.
    home = config.home
    assert not any((home / "scratch").iterdir())
    assert not (home / "uploads").exists() and not (home / "audio").exists()
    # The owner's player reads the stored audio by ranges (the page's audio route).
    store = blobs_of(config)
    assert await store.size(row["audio_path"]) == size
    whole = bucket.moto.client().get_object(Bucket=bucket.name, Key=audio_key)["Body"].read()
    ranged = [c async for c in store.read_range(row["audio_path"], 44, size - 1)]
    assert b"".join(ranged) == whole[44:]
    assert await store.size(f"s3://{bucket.name}/tx/audio/none.wav") is None


@scenario("The object store going away mid-step is a failed attempt")
async def test_the_store_going_away_is_a_failed_attempt(
    db: Database, owner_id: int, bucket: Bucket
) -> None:
    rid = await accept_file(db, bucket.config, SAMPLES / "en.ogg", owner_id)
    bucket.moto.stop()
    try:
        assert await worker(db, bucket.config).work_once()
    finally:
        bucket.moto.start()
    row = await state(db, rid)
    assert (row["milestone"], row["attempts"], row["audio_path"]) == ("received", 1, None)
    [failed] = [e for e in await db.fetch("ops_journal", rid, 100) if e["kind"] == "attempt_failed"]
    assert failed["detail"]["error"].startswith("StorageError: object store: Could not connect")
    assert bucket.keys("tx/audio/") == []
    now = await db_now(db)
    steps = audio_steps(bucket.config)
    assert await worker(db, bucket.config, at(PgQueue(db, steps), now, 3600)).work_once()
    assert (await state(db, rid))["milestone"] == "normalized"
    assert not any((bucket.config.home / "scratch").iterdir())


@scenario("With an object store the reserve guards the scratch copies, not the uploads")
async def test_the_reserve_guards_scratch_copies_not_uploads(db: Database, bucket: Bucket) -> None:
    owner = await add_owner(db, "ann")
    config = attrs.evolve(bucket.config, min_free_bytes=1 << 62)  # more than any disk
    async with (
        serving(create_app(db, config)) as url,
        httpx.AsyncClient(
            base_url=url, timeout=30, headers={"Authorization": f"Bearer {owner.token}"}
        ) as c,
    ):
        r = await c.post(
            "/v1/recordings",
            files={"file": ("en.ogg", SAMPLES.joinpath("en.ogg").read_bytes(), "audio/ogg")},
        )
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    assert (await source_of(db, rid)).startswith(f"s3://{bucket.name}/")
    assert await worker(db, config).work_once()
    row = await state(db, rid)
    assert (row["milestone"], row["attempts"], row["audio_path"]) == ("received", 1, None)
    [failed] = [e for e in await db.fetch("ops_journal", rid, 100) if e["kind"] == "attempt_failed"]
    assert "scratch disk" in failed["detail"]["error"]
    assert "TRANSCRIBER_MIN_FREE_BYTES" in failed["detail"]["error"]
    assert not any((config.home / "scratch").iterdir())


@scenario("The sweep removes stray objects, never a referenced one")
async def test_the_sweep_removes_stray_objects_only(
    db: Database, owner_id: int, bucket: Bucket
) -> None:
    store = blobs_of(bucket.config)
    assert isinstance(store, S3Blobs)
    rid = await accept_file(db, bucket.config, SAMPLES / "en.ogg", owner_id)
    kept = await source_of(db, rid)
    client = bucket.moto.client()
    stray = "tx/uploads/" + "ab" * 16
    client.put_object(Bucket=bucket.name, Key=stray, Body=b"left by a killed upload")
    stale_audio = f"tx/audio/{rid}.{'0' * 8}-0000-0000-0000-{'0' * 12}.wav"
    client.put_object(Bucket=bucket.name, Key=stale_audio, Body=b"a lost claim's audio")
    foreign = "tx/uploads/notes.txt"
    client.put_object(Bucket=bucket.name, Key=foreign, Body=b"not ours")
    abandoned = client.create_multipart_upload(Bucket=bucket.name, Key="tx/uploads/" + "cd" * 16)
    client.upload_part(
        Bucket=bucket.name,
        Key="tx/uploads/" + "cd" * 16,
        PartNumber=1,
        UploadId=abandoned["UploadId"],
        Body=b"x" * 100,
    )

    assert await store.sweep_strays(db) == []  # all too young
    removed = await store.sweep_strays(db, older_than_s=0)
    assert sorted(removed) == sorted(f"s3://{bucket.name}/{k}" for k in (stray, stale_audio))
    assert sorted(bucket.keys()) == sorted([kept.split("/", 3)[3], foreign])
    assert multipart_uploads(bucket.moto, bucket.name) == []


@scenario("A storage URL that is not s3://BUCKET/PREFIX ends the start in one line")
async def test_a_bad_storage_url_ends_serve_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env.update(TRANSCRIBER_HOME=str(tmp_path), TRANSCRIBER_STORAGE_URL="https://media/x")
    done = await trio.run_process(
        [sys.executable, "-m", "transcriber", "serve", "--no-api"],
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        "transcriber: TRANSCRIBER_STORAGE_URL must look like s3://BUCKET/PREFIX, "
        "not 'https://media/x'"
    ]
    assert not tmp_path.joinpath("pgdata").exists()  # nothing started


def test_storage_url_is_checked() -> None:
    from transcriber.storage.s3 import parse_url

    assert parse_url("s3://media/transcriber") == ("media", "transcriber")
    assert parse_url("s3://media") == ("media", "")
    with pytest.raises(ValueError, match="s3://BUCKET/PREFIX"):
        parse_url("https://media/x")
