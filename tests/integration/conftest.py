"""What the integration tests share: expensive things made once a session (the model,
warm recognizers) and the HTTP API's fixtures (a config, two owners, a served app and
clients holding each owner's token)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers.api_clients import client
from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.recognize import bundled_model
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.owners import NewOwner, add_owner


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


# --- the HTTP API (tests/integration/test_api*.py, test_page.py, test_metrics.py, ...)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    # No workers run here: a request to the OpenAI-compatible endpoint (the schema's
    # fuzzing sends some) answers after a short wait, naming its record.
    return Config(home=tmp_path / "home", openai_wait_s=0.05)


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
