"""What the integration tests share: expensive things made once a session (the model,
warm recognizers, the owner's page's service and its browser) and the HTTP API's
fixtures (a config, two owners, a served app and clients holding each owner's token)."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio_asyncio
from selenium.webdriver.remote.webdriver import WebDriver
from trio.testing import MockClock

from actors.testing import MemoryQueue
from tests.helpers import generated_audio
from tests.helpers.api_clients import client
from tests.helpers.browser import PageService, browser_session, page_service
from tests.helpers.memory_pipeline import pipeline
from tests.helpers.pages import signed_in
from tests.helpers.pg_pipeline import db_now, noop
from tests.helpers.postgres import scratch_database
from tests.helpers.queue_drivers import MemoryDriver, PgDriver, QueueDriver
from tests.helpers.s3_watching import Prefix, new_prefix, watch_of
from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.recognize import bundled_model
from transcriber.bench.speakers import make_conversation
from transcriber.config import Config
from transcriber.db.database import Database, open_database
from transcriber.http import create_app, serving
from transcriber.owners import NewOwner, add_owner
from transcriber.pipeline.pg_queue import PgQueue


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled Whisper base, joined once (145 MB) and then passed to every test as
    `Config(model=<folder>)`, which is also how any CTranslate2 model folder is named."""
    return bundled_model(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def warm_recognizer(model_dir: Path) -> Iterator[ProcessRecognizer]:
    """Recognizer children with the bundled model loaded, shared by the tests whose
    config is the default one but for the model (the children do not depend on the
    home or the database). Batches of 2 speech pieces, so the long speech of the thread
    tests (three pieces) takes two batches: a test can stop it between them."""
    recognizer = ProcessRecognizer(Config(model=str(model_dir), batch_size=2))
    recognizer.warm(1)
    yield recognizer
    recognizer.close()


@pytest.fixture(scope="session")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """About 40 s of two espeak-ng voices taking turns (bench/speakers.py's builder), and
    its reference turns (start, end, speaker index): spoken once a session, for the
    speakers' tests (test_speakers.py, test_openai_speakers.py). Read it, never change it."""
    path = tmp_path_factory.mktemp("speakers") / "two-voices.wav"
    return path, make_conversation(path, speakers=2, turns=8, seed=7)


@pytest.fixture(scope="session")
def page_served(
    pg_admin_url: str, template_db: str, model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PageService]:
    """The owner's page's `transcriber serve` (tests/helpers/browser.py), once a session:
    the page's browser tests and the speakers' one share it (and its warm recognizer)."""
    out = tmp_path_factory.mktemp("page-browser")
    print(f"\npage screenshots and figures: {out}")
    with page_service(pg_admin_url, template_db, model_dir, out) as served:
        yield served
        (out / "figures.json").write_text(json.dumps(served.figures, indent=2))
        print(f"\npage figures: {json.dumps(served.figures)}")


@pytest.fixture(scope="session")
def page_browser(page_served: PageService) -> Iterator[WebDriver]:
    """One headless Chromium on the owner's page for the session (its tests sign in
    where they need to)."""
    with browser_session(page_served.out / "chromium-profile") as driver:
        yield driver


# --- the HTTP API (tests/integration/test_api*.py, test_page.py, test_metrics.py, ...)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    # No workers run here: a request to the OpenAI-compatible endpoint (the schema's
    # fuzzing sends some) answers after a short wait, naming its record.
    return Config(home=tmp_path / "home", openai_wait_s=0.05)


@pytest.fixture(scope="session")
def long_speech(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """3 minutes of audio as normalize stores it: the English sample every 30 s. The VAD
    makes three pieces of it (two sentences each): two batches for the shared
    recognizer (batches of 2)."""
    path = tmp_path_factory.mktemp("long") / "long.wav"
    return path, generated_audio.long_speech_wav(path, windows=6)


@pytest.fixture
async def ann(db: Database) -> NewOwner:
    return await add_owner(db, "ann")


@pytest.fixture
async def ben(db: Database) -> NewOwner:
    return await add_owner(db, "ben")


@pytest.fixture
async def base_url(db: Database, config: Config) -> AsyncIterator[str]:
    async with serving(create_app(db, config)) as url:
        yield url


@pytest.fixture
async def as_ann(base_url: str, ann: NewOwner) -> AsyncIterator[httpx.AsyncClient]:
    async with client(base_url, ann) as c:
        yield c


@pytest.fixture
async def as_ben(base_url: str, ben: NewOwner) -> AsyncIterator[httpx.AsyncClient]:
    async with client(base_url, ben) as c:
        yield c


@pytest.fixture
async def page_ann(base_url: str, ann: NewOwner) -> AsyncIterator[httpx.AsyncClient]:
    async with signed_in(base_url, ann) as c:
        yield c


@pytest.fixture
async def page_ben(base_url: str, ben: NewOwner) -> AsyncIterator[httpx.AsyncClient]:
    async with signed_in(base_url, ben) as c:
        yield c


# --- the queue protocol's drivers (tests/integration/test_queue_protocol.py) ----------


@pytest.fixture(params=["memory", "postgres"])
def queue_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def queue_clock(queue_kind: str) -> MockClock | None:
    """The trio clock a test of the queue suite runs on. pytest-trio hands a Clock among
    the test's arguments to trio.run, so every test of the suite names this fixture: a
    MockClock for the in-memory queue (its time is trio's, moved only by the driver),
    none for PostgreSQL (its time is the `now` the driver passes to its statements)."""
    return MockClock() if queue_kind == "memory" else None


@pytest.fixture
def queue_server(queue_kind: str, request: pytest.FixtureRequest) -> tuple[str, str] | None:
    """PostgreSQL's admin URL and migrated template, for the postgres driver only (so the
    memory driver's tests start no server)."""
    if queue_kind != "postgres":
        return None
    return request.getfixturevalue("pg_admin_url"), request.getfixturevalue("template_db")


@pytest.fixture
async def queue(
    queue_clock: MockClock | None, queue_server: tuple[str, str] | None
) -> AsyncIterator[QueueDriver]:
    """An empty queue of each kind over the two-step table of the runtime tests
    (tests/helpers/memory_pipeline.py), its steps doing nothing, behind its driver."""
    steps = pipeline(normalize=noop, recognize=noop)
    if queue_clock is not None:
        yield MemoryDriver(MemoryQueue(steps, rng=random.Random(0)), queue_clock)
        return
    assert queue_server is not None
    admin_url, template = queue_server
    async with (
        trio_asyncio.open_loop(),
        scratch_database(admin_url, template) as url,
        open_database(url, min_size=1, max_size=4) as db,
    ):
        owner = await add_owner(db, "ann")
        start = await db_now(db)
        yield PgDriver(PgQueue(db, steps, rng=random.Random(0)), db, owner.id, start)


@pytest.fixture
def prefix(moto: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Prefix:
    """A new bucket on moto, its `rec/` to be watched (tests/helpers/s3_watching.py)."""
    return new_prefix(moto, tmp_path, monkeypatch)


@pytest.fixture
async def watched(db: Database, ann: object, prefix: Prefix) -> int:
    """`prefix` watched by ann (her account made first, whichever `ann` the test has)."""
    return await watch_of(db, "ann", prefix)
