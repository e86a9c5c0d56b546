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
