"""Expensive things the integration tests share, made once a session."""

from __future__ import annotations

from pathlib import Path

import pytest

from transcriber.recognize import bundled_model


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled Whisper base, joined once (145 MB) and then passed to every test as
    `Config(model=<folder>)`, which is also how any CTranslate2 model folder is named."""
    return bundled_model(tmp_path_factory.mktemp("models"))
