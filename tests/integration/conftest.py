"""Expensive things the integration tests share, made once a session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.recognize import bundled_model
from transcriber.config import Config


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
