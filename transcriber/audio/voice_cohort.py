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

Without espeak-ng or sox, or when either fails, the cohort is empty and the match is the
cosine alone, as before (said in the log once a process); a diarization never fails for
the cohort's sake."""

from __future__ import annotations

import contextlib
import json
import logging
import math
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
    """The cohort's voices, made now (seconds of CPU); [] without espeak-ng or sox, or
    when either fails (a voice this espeak-ng lacks, a broken sox): logged."""
    if shutil.which("espeak-ng") is None or shutil.which("sox") is None:
        log.warning("no espeak-ng or sox: voices are matched by their cosine alone")
        return []
    try:
        with tempfile.TemporaryDirectory(prefix="voice-cohort-") as tmp:
            return [
                [round(float(x), 6) for x in voice(net, _spoken(spec, Path(tmp)))]
                for spec in COHORT_VOICES
            ]
    except Exception as e:  # a refinement of the match: its trouble is never a record's
        log.warning(
            "the voice cohort could not be made (%s): voices are matched by their cosine alone", e
        )
        return []


def _valid(vectors: object) -> bool:
    """Whether `vectors` (read back from the home) is a cohort: a list of vectors of one
    length, of finite numbers. Another (a file cut short, edited, of another shape) is
    made again: NaN would be refused by the database's jsonb, and the match of every
    diarized record with it."""
    if not isinstance(vectors, list) or not vectors:
        return False
    if not all(isinstance(v, list) and v for v in vectors):
        return False
    if len({len(v) for v in vectors}) != 1:
        return False
    return all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
        for v in vectors
        for x in v
    )


def cohort(home: Path, net: CamPlusPlus | None = None) -> list[list[float]]:
    """The cohort, kept in `home` (made the first time, and again when COHORT_VOICES or
    the windows' embedding change, or the file is not a cohort). Never fails: without
    espeak-ng or sox, or when they fail, [] (the cosine alone decides); a home it cannot
    write, the cohort made in this process (made again by the next). Blocking: a worker
    thread."""
    path = home / CACHE
    key = [list(v) for v in COHORT_VOICES]
    try:
        kept = json.loads(path.read_text())
        # Made again when the windows are embedded otherwise (speakers_windows.QUIET_DB):
        # the cohort is compared with voices embedded as now.
        if (
            isinstance(kept, dict)
            and kept.get("voices") == key
            and kept.get("quiet_db") == QUIET_DB
            and _valid(kept.get("vectors"))
        ):
            return [list(map(float, v)) for v in kept["vectors"]]
    except (OSError, ValueError):
        pass
    if not _MADE:
        _MADE.append(made(net or CamPlusPlus.load()))
    vectors = _MADE[0]
    if vectors:
        try:
            _keep(home, path, {"voices": key, "quiet_db": QUIET_DB, "vectors": vectors})
        except OSError as e:
            log.warning(
                "the voice cohort is not kept in %s (%s): made again by each process", home, e
            )
    return vectors


def _keep(home: Path, path: Path, cohort: dict[str, Any]) -> None:
    """Written whole or not at all: another daemon on the same home may read it meanwhile."""
    home.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=home, prefix=".voice-cohort-")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(cohort, f)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
