"""The cohort of outsiders the voice match measures voices against
(transcriber/audio/voice_cohort.py): made at run time with espeak-ng and sox, kept in the
home, made again when its voices change; none without espeak-ng."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from transcriber.audio import voice_cohort
from transcriber.audio.speakers_model import CamPlusPlus


def test_the_cohort_is_made_once_and_kept_in_the_home(tmp_path: Path) -> None:
    vectors = voice_cohort.cohort(tmp_path)
    assert len(vectors) == len(voice_cohort.COHORT_VOICES)
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-3 for v in vectors)
    kept = json.loads((tmp_path / voice_cohort.CACHE).read_text())
    assert kept["vectors"] == vectors
    # Outsiders, not one voice: no two of them are the same (CAM++ puts espeak-ng's
    # variants of one voice at 0.8-0.96).
    m = np.array(vectors) @ np.array(vectors).T
    assert float(m[~np.eye(len(m), dtype=bool)].max()) < 0.9

    # Read back from the home; a file of other voices (or a broken one) is made again.
    assert voice_cohort.cohort(tmp_path) == vectors
    (tmp_path / voice_cohort.CACHE).write_text(json.dumps({"voices": [], "vectors": [[1.0]]}))
    assert voice_cohort.cohort(tmp_path) == vectors
    (tmp_path / voice_cohort.CACHE).write_text("{not json")
    assert voice_cohort.cohort(tmp_path) == vectors
    # So is one of the same voices embedded with every frame (before QUIET_DB).
    same = [list(v) for v in voice_cohort.COHORT_VOICES]
    (tmp_path / voice_cohort.CACHE).write_text(json.dumps({"voices": same, "vectors": [[1.0]]}))
    assert voice_cohort.cohort(tmp_path) == vectors


def test_without_espeak_there_is_no_cohort(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert voice_cohort.made(CamPlusPlus.load()) == []


MADE = [[0.6, 0.8], [0.8, -0.6]]


@pytest.fixture
def made_here(monkeypatch: pytest.MonkeyPatch) -> list[list[float]]:
    """The cohort as this process made it (no espeak-ng run: seconds of CPU)."""
    monkeypatch.setattr(voice_cohort, "_MADE", [MADE])
    return MADE


def kept(vectors: object) -> str:
    voices = [list(v) for v in voice_cohort.COHORT_VOICES]
    return json.dumps({"voices": voices, "quiet_db": voice_cohort.QUIET_DB, "vectors": vectors})


@pytest.mark.parametrize(
    "text",
    [
        kept([1.0, 2.0]),  # vectors that are numbers: a TypeError out of the step, before
        kept([[float("nan"), 1.0], [1.0, 0.0]]),  # the database's jsonb refuses NaN
        kept([[1.0, 0.0], [1.0]]),  # vectors of two lengths
        kept([[True, False]]),
        kept([[1.0, None]]),
        kept({"a": [1.0]}),
        "[1, 2]",
        '{"voices": ',  # cut short
        "\xff\xfe",
    ],
)
def test_a_kept_file_that_is_no_cohort_is_made_again(
    tmp_path: Path, made_here: list[list[float]], text: str
) -> None:
    (tmp_path / voice_cohort.CACHE).write_text(text, errors="surrogateescape")
    assert voice_cohort.cohort(tmp_path) == made_here
    assert voice_cohort.cohort(tmp_path) == made_here  # and kept
    assert json.loads((tmp_path / voice_cohort.CACHE).read_text())["vectors"] == made_here


def test_a_home_it_cannot_write_still_has_the_cohort(
    tmp_path: Path, made_here: list[list[float]], caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "file").write_text("")
    assert voice_cohort.cohort(tmp_path / "file" / "home") == made_here  # not a folder
    (tmp_path / voice_cohort.CACHE).mkdir()  # where the file goes, a folder
    assert voice_cohort.cohort(tmp_path) == made_here
    assert "not kept" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([voice_cohort.CACHE, "file"])


def test_an_espeak_that_fails_leaves_the_cosine_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # An espeak-ng without one of the voices (a distribution's build), or one broken.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("espeak-ng", "sox"):
        (bin_dir / tool).write_text("#!/bin/sh\necho 'voice not found' >&2\nexit 1\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(voice_cohort, "_MADE", [])
    home = tmp_path / "home"
    assert voice_cohort.cohort(home, net=CamPlusPlus.__new__(CamPlusPlus)) == []
    assert "could not be made" in caplog.text
    assert not (home / voice_cohort.CACHE).exists()
