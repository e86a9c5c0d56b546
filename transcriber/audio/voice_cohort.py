"""The cohort the voice match normalizes against: voices of nobody an owner knows, made
at run time with espeak-ng and sox (nothing of it is shipped: it is made once and kept
in TRANSCRIBER_HOME).

CAM++'s window means are all alike to some degree, and some voices are alike to many: a
real speaker was 0.90 from an espeak-ng voice, more than the same real person heard in
two recordings (0.88). What a cosine means depends on the two voices: one alike to
everybody says little by being alike to a library voice. So each side of a pair is
measured against this cohort (the mean of its `COHORT_TOP` most alike cohort voices,
adaptive S-norm's statistic), and a found speaker is named after a library voice only
when they are more alike to each other than either is to those outsiders
(transcriber.records.voices_match; sql/0031_voices_matched_apart.sql).

Without espeak-ng or sox the cohort is empty and the match is the cosine alone, as
before (said in the log once)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import wave
from pathlib import Path
from typing import Any

import numpy as np

from transcriber.audio.speakers import voice
from transcriber.audio.speakers_model import SAMPLE_RATE, CamPlusPlus
from transcriber.audio.speakers_windows import QUIET_DB

log = logging.getLogger(__name__)

COHORT_VOICES = (
    ("en-us-nyc+m2", ""),
    ("en-gb-x-gbclan+f1", "pitch 100"),
    ("en-gb-x-gbcwmd+m6", "pitch -100"),
    ("en+Storm", ""),
    ("en-us+f2", "pitch -250"),
    ("en-gb+m7", "pitch 350"),
)
"""espeak-ng voices (a sox pitch shift moves the formants too), in neither set the match
was tuned or judged on (transcriber/bench/voices_material.py)."""
COHORT_TEXT = (
    "The weather was fine all week, and on Sunday we walked along the river to the old "
    "mill, where the children fed the ducks and we had lunch under the trees."
)
COHORT_TOP = 3
"""Cohort voices each side is measured against: its most alike ones."""
CACHE = "voice-cohort.json"
_MADE: list[list[list[float]]] = []
"""Made once a process, whatever the home (the same voices make the same vectors)."""


def _spoken(spec: tuple[str, str], folder: Path) -> np.ndarray[Any, Any]:
    raw, wav = folder / "raw.wav", folder / "cohort.wav"
    subprocess.run(
        ["espeak-ng", "-v", spec[0], "-w", str(raw), COHORT_TEXT], check=True, capture_output=True
    )
    subprocess.run(
        [
            "sox",
            str(raw),
            "-r",
            str(SAMPLE_RATE),
            "-c",
            "1",
            "-b",
            "16",
            str(wav),
            *spec[1].split(),
        ],
        check=True,
        capture_output=True,
    )
    with wave.open(str(wav), "rb") as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), np.int16)
    loud = np.flatnonzero(np.abs(samples) > 300)
    samples = samples[loud[0] : loud[-1] + 1] if len(loud) else samples
    return samples.astype(np.float32) / 32768.0


def made(net: CamPlusPlus) -> list[list[float]]:
    """The cohort's voices, made now (seconds of CPU); [] without espeak-ng or sox."""
    if shutil.which("espeak-ng") is None or shutil.which("sox") is None:
        return []
    with tempfile.TemporaryDirectory(prefix="voice-cohort-") as tmp:
        return [
            [round(float(x), 6) for x in voice(net, _spoken(spec, Path(tmp)))]
            for spec in COHORT_VOICES
        ]


def cohort(home: Path, net: CamPlusPlus | None = None) -> list[list[float]]:
    """The cohort, kept in `home` (made the first time, and again when COHORT_VOICES or
    the windows' embedding change). Blocking: a worker thread."""
    path = home / CACHE
    key = [list(v) for v in COHORT_VOICES]
    try:
        kept = json.loads(path.read_text())
        # Made again when the windows are embedded otherwise (speakers_windows.QUIET_DB):
        # the cohort is compared with voices embedded as now.
        if kept.get("voices") == key and kept.get("quiet_db") == QUIET_DB and kept.get("vectors"):
            return [list(map(float, v)) for v in kept["vectors"]]
    except (OSError, ValueError, AttributeError):
        pass
    if not _MADE:
        _MADE.append(made(net or CamPlusPlus.load()))
    vectors = _MADE[0]
    if not vectors:
        log.warning("no espeak-ng or sox: voices are matched by their cosine alone")
        return []
    home.mkdir(parents=True, exist_ok=True)
    # Written whole or not at all: another daemon on the same home may read it meanwhile.
    fd, tmp = tempfile.mkstemp(dir=home, prefix=".voice-cohort-")
    with os.fdopen(fd, "w") as f:
        json.dump({"voices": key, "quiet_db": QUIET_DB, "vectors": vectors}, f)
    os.replace(tmp, path)
    return vectors
