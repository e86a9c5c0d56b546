"""Deleting records (capability `archive`): the owner's over the API, another owner's
refused, the operator's from the command line, retention; and deletions racing a step
in flight on a real object store (moto), the step held with events."""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from actors import Job, Progress, Wakeup, Worker
from tests.helpers.api_clients import fake_audio, uploaded
from tests.helpers.cli_process import cli
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.moto_store import EchoRecognizer, MotoStore, keys
from tests.helpers.pages import transcribed_with_audio
from tests.helpers.pg_pipeline import journal
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.owners import NewOwner
from transcriber.pipeline.audio_steps import audio_steps, normalize_step
from transcriber.pipeline.deletions import delete_expired
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.step_table import step_table
from transcriber.records.archive import stored_bytes
from transcriber.records.corrections import set_correction
from transcriber.records.deletion import delete_own
from transcriber.storage.blobs import NewAudio
from transcriber.storage.configured import blobs_of
from transcriber.storage.s3 import S3Blobs


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


async def rows_of(db: Database, rid: Any) -> dict[str, int]:
    counts = {}
    for table in ("recordings", "transcripts", "corrections", "shares"):
        column = "id" if table == "recordings" else "recording_id"
        counts[table] = await db.run(
            lambda con, t=table, c=column: con.fetchval(
                f"SELECT count(*) FROM {t} WHERE {c} = $1", rid
            )
        )
    return counts


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@scenario("A deleted recording is gone with its transcript, corrections and bytes")
async def test_a_deleted_recording_is_gone(
    db: Database, config: Config, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    data = fake_audio()
    rid = (await uploaded(as_ann, data, title="private talk"))["id"]
    await transcribed_with_audio(db, config)
    await set_correction(db, ann.id, uuid.UUID(rid), 0, "Hello there.", {"by": "owner"})
    assert len(files_under(config.home / "uploads")) == 1
    assert len(files_under(config.home / "audio")) == 1
    assert await stored_bytes(db, ann.id) > 0
    assert (await rows_of(db, rid))["corrections"] == 1

    r = await as_ann.delete(f"/v1/recordings/{rid}")
    assert (r.status_code, r.content) == (204, b"")

    assert (await as_ann.get(f"/v1/recordings/{rid}")).status_code == 404
    assert (await as_ann.get(f"/v1/recordings/{rid}/text")).status_code == 404
    assert (await as_ann.delete(f"/v1/recordings/{rid}")).status_code == 404  # once only
    assert await rows_of(db, rid) == {
        "recordings": 0,
        "transcripts": 0,
        "corrections": 0,
        "shares": 0,
    }
    assert files_under(config.home / "uploads") == files_under(config.home / "audio") == []
    assert await stored_bytes(db, ann.id) == 0
    events = await journal(db, rid)
    assert events[0]["kind"] == "accepted"
    last = events[-1]
    assert (last["kind"], last["origin"]) == ("deleted", "human")
    assert last["detail"]["by"] == "owner" and last["detail"]["owner_id"] == ann.id
    assert last["detail"]["via"] == "api" and last["detail"]["size_bytes"] == len(data)
    assert not any("Hello" in str(e["detail"]) for e in events)  # no transcript text kept


@scenario("Another owner's delete is a 404 that changes nothing")
async def test_another_owners_delete_is_404(
    db: Database,
    config: Config,
    as_ann: httpx.AsyncClient,
    as_ben: httpx.AsyncClient,
) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribed_with_audio(db, config)
    before = await journal(db, rid)
    unknown = await as_ben.delete(f"/v1/recordings/{uuid.uuid4()}")
    assert unknown.status_code == 404
    for target in (rid, "not-an-id"):
        r = await as_ben.delete(f"/v1/recordings/{target}")
        assert (r.status_code, r.json()) == (404, unknown.json())
    assert (await rows_of(db, rid))["transcripts"] == 1
    assert len(files_under(config.home / "uploads")) == 1
    assert await journal(db, rid) == before
    assert (await as_ann.get(f"/v1/recordings/{rid}/text")).status_code == 200


@scenario("The operator deletes from the command line and retention deletes old records")
async def test_operator_and_retention_delete(
    db: Database,
    db_url: str,
    config: Config,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
    as_ben: httpx.AsyncClient,
) -> None:
    old = (await uploaded(as_ann))["id"]
    kept = (await uploaded(as_ann))["id"]
    bens = (await uploaded(as_ben))["id"]
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET created_at = now() - interval '40 days' WHERE id = $1", old
        )
    )
    done = await cli(db_url, "delete", bens, str(uuid.uuid4()), home=str(config.home))
    assert done.returncode == 1, done.stderr
    assert f"deleted {bens}" in done.stdout and "no record" in done.stderr
    assert (await rows_of(db, bens))["recordings"] == 0
    [by_operator] = [e for e in await journal(db, bens) if e["kind"] == "deleted"]
    assert by_operator["origin"] == "human" and by_operator["detail"]["by"] == "operator"
    assert by_operator["detail"]["operator"]

    gone = await delete_expired(db, blobs_of(config), 30)
    assert [str(d.id) for d in gone] == [old]
    assert (await rows_of(db, kept))["recordings"] == 1
    [by_retention] = [e for e in await journal(db, old) if e["kind"] == "deleted"]
    assert by_retention["origin"] == "pipeline"
    assert by_retention["detail"]["by"] == "retention"
    assert len(files_under(config.home / "uploads")) == 1  # the kept one's
    listed = await cli(db_url, "delete", "--list", home=str(config.home))
    assert listed.returncode == 0, listed.stderr
    assert old in listed.stdout and bens in listed.stdout


# --- deletions racing a step in flight, on the object store ------------------------------


@attrs.frozen
class Bucket:
    name: str
    moto: MotoStore
    config: Config

    def objects(self) -> list[str]:
        return keys(self.moto, self.name)


@pytest.fixture
def bucket(moto: MotoStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    for name, value in moto.env().items():
        monkeypatch.setenv(name, value)
    name = moto.new_bucket()
    return Bucket(name, moto, Config(home=tmp_path / "home", storage_url=f"s3://{name}/tx"))


class HeldRecognizer(EchoRecognizer):
    """Says when a request is inside it (a thread event), and answers once the gate opens."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = threading.Event()
        self.gate.clear()

    def answer(self, path: str, fields: dict[str, bytes], authorization: str | None) -> Any:
        self.inside.set()
        return super().answer(path, fields, authorization)


@contextlib.asynccontextmanager
async def working(w: Worker) -> AsyncIterator[trio.Event]:
    """`w` works one step in the background; the event is set when it is done."""
    finished = trio.Event()
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            await w.work_once()
            finished.set()

        nursery.start_soon(run)
        yield finished


@scenario("A deletion racing a running recognition leaves no row, no blob and no object")
async def test_deletion_racing_recognition(db: Database, owner_id: int, bucket: Bucket) -> None:
    with HeldRecognizer() as recognizer:
        config = attrs.evolve(bucket.config, recognizer_url=recognizer.url)
        rid = await accept_file(db, config, SAMPLES / "en.ogg", owner_id)
        steps = audio_steps(config)
        w = Worker("w", PgQueue(db, steps), steps, Wakeup())
        assert await w.work_once()  # normalized: the upload and the audio are objects
        assert len(bucket.objects()) == 2
        async with working(w) as finished:
            assert await trio.to_thread.run_sync(recognizer.inside.wait, 60)
            assert len(files_under(config.home / "scratch")) == 1  # the step's copy
            [gone] = await delete_own(db, blobs_of(config), owner_id, [rid], via="api")
            # The upload, the audio and the step's scratch copy of it.
            assert len(gone.files) == 3
            recognizer.gate.set()
            await finished.wait()
    assert await rows_of(db, rid) == {
        "recordings": 0,
        "transcripts": 0,
        "corrections": 0,
        "shares": 0,
    }
    kinds = [e["kind"] for e in await journal(db, rid)]
    assert kinds[-2:] == ["deleted", "lease_lost"], kinds
    assert bucket.objects() == []
    assert files_under(config.home) == []


@attrs.define(eq=False)
class HeldAudio(NewAudio):
    real: NewAudio
    held: HeldPublishing

    @property
    def path(self) -> Path:
        return self.real.path

    @property
    def ref(self) -> str:
        return self.real.ref

    @property
    def min_free_bytes(self) -> int:
        return self.real.min_free_bytes

    async def publish(self) -> None:
        if not self.held.after:
            await self.hold()
        await self.real.publish()
        self.held.published.append(self.real.ref)
        if self.held.after:
            await self.hold()

    async def hold(self) -> None:
        self.held.entered.set()
        await self.held.open.wait()


@attrs.define(eq=False)
class HeldPublishing(S3Blobs):
    """The object store, but a step's audio waits for `open` just before (or, `after`,
    just after) it is published."""

    after: bool = False
    entered: trio.Event = attrs.field(factory=trio.Event)
    open: trio.Event = attrs.field(factory=trio.Event)
    published: list[str] = attrs.field(factory=list)

    @contextlib.asynccontextmanager
    async def new_audio(self, name: str) -> AsyncIterator[NewAudio]:
        # Not super(): attrs makes a new class for the slots, which super()'s cell misses
        # inside the context manager's wrapper.
        async with S3Blobs.new_audio(self, name) as audio:
            yield HeldAudio(audio, self)


async def held_normalization(
    db: Database, owner_id: int, bucket: Bucket, *, after: bool
) -> tuple[Any, HeldPublishing, Worker]:
    real = blobs_of(bucket.config)
    assert isinstance(real, S3Blobs)
    held = HeldPublishing(real.bucket, real.prefix, real.home, real.client, after=after)
    rid = await accept_file(db, bucket.config, SAMPLES / "en.ogg", owner_id)

    async def unused(job: Job, progress: Progress) -> None:
        raise AssertionError("no recognition here")

    steps = step_table(normalize=normalize_step(bucket.config, held), recognize=unused)
    return rid, held, Worker("w", PgQueue(db, steps), steps, Wakeup())


@scenario("A deletion racing a normalization leaves nothing, published or not")
async def test_deletion_racing_normalization(db: Database, owner_id: int, bucket: Bucket) -> None:
    rid, held, w = await held_normalization(db, owner_id, bucket, after=False)
    async with working(w) as finished:
        with trio.fail_after(60):  # a step that failed before publishing never enters
            await held.entered.wait()
        await delete_own(db, blobs_of(bucket.config), owner_id, [rid], via="api")
        assert bucket.objects() == []
        held.open.set()
        await finished.wait()
    # Its audio went with its scratch file: nothing could be published.
    assert held.published == []
    assert bucket.objects() == []
    assert [e["kind"] for e in await journal(db, rid)][-2:] == ["deleted", "lease_lost"]
    assert files_under(bucket.config.home) == []
    assert (await rows_of(db, rid))["recordings"] == 0


@pytest.mark.scenario("blob-storage", "Audio published by a claim that lost its commit is removed")
async def test_audio_of_a_refused_commit_is_removed(
    db: Database, owner_id: int, bucket: Bucket
) -> None:
    rid, held, w = await held_normalization(db, owner_id, bucket, after=True)
    async with working(w) as finished:
        with trio.fail_after(60):
            await held.entered.wait()
        [audio] = held.published
        assert audio.endswith(".wav") and len(bucket.objects()) == 2
        # Another claim took the record meanwhile (say the lease ran out).
        await db.run(
            lambda con: con.execute(
                "UPDATE recordings SET claim_token = gen_random_uuid() WHERE id = $1", rid
            )
        )
        held.open.set()
        await finished.wait()
    assert [e["kind"] for e in await journal(db, rid)][-1] == "lease_lost"
    source = await db.run(
        lambda con: con.fetchval("SELECT source_path FROM recordings WHERE id = $1", rid)
    )
    assert [f"s3://{bucket.name}/{k}" for k in bucket.objects()] == [source]  # the upload only
    assert files_under(bucket.config.home) == []


async def test_retention_of_no_records_is_a_no_op(db: Database, config: Config) -> None:
    assert await delete_expired(db, blobs_of(config), 1, now=dt.datetime.now(dt.UTC)) == []


@pytest.mark.scenario("page", "The owner deletes one recording or the selected ones from the page")
async def test_page_deletes_one_or_the_selected(
    db: Database,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
    as_ben: httpx.AsyncClient,
) -> None:
    from tests.helpers.pages import signed_in

    one, two, three = [(await uploaded(as_ann))["id"] for _ in range(3)]
    bens = (await uploaded(as_ben))["id"]
    async with signed_in(base_url, ann) as page:
        listed = (await page.get("/")).text
        assert f'name="id" value="{one}" form="delete-selected"' in listed
        assert 'data-confirm="' in listed
        record = (await page.get(f"/recordings/{one}")).text
        assert f'action="/recordings/{one}/delete"' in record
        # Without the anti-forgery token nothing is deleted.
        forged = await page.post(f"/recordings/{one}/delete", data={})
        assert forged.status_code == 403
        r = await page.post(f"/recordings/{one}/delete", data={"csrf": page.csrf})
        assert (r.status_code, r.headers["location"]) == (303, "/?deleted=1")
        # The selected ones; another owner's id among them is passed over.
        r = await page.post(
            "/delete", data={"csrf": page.csrf, "id": [two, three, bens, "nonsense"]}
        )
        assert r.status_code == 303
        assert (
            await page.post(f"/recordings/{bens}/delete", data={"csrf": page.csrf})
        ).status_code == 404
    for rid in (one, two, three):
        assert (await rows_of(db, rid))["recordings"] == 0
        [gone] = [e for e in await journal(db, rid) if e["kind"] == "deleted"]
        assert gone["detail"]["via"] == "page"
    assert (await rows_of(db, bens))["recordings"] == 1
    assert await stored_bytes(db, ann.id) == 0
