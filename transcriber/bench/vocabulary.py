"""Clips with rare names, made with espeak-ng, for the vocabulary's effect: each clip is
recognized as it is and told its names (the record's `vocabulary`), and the names are
looked for in what the recognizer wrote.

Two sets: `TUNED` is where the hotwords' form (the terms joined by commas) was chosen
and the test's clip was picked; `HELD_OUT` was run only after, to check that the effect
is not the tuning's. Nothing here is committed audio: the clips are made at run time.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from transcriber.audio.recognize import WhisperRecognizer
from transcriber.options import RecognitionOptions
from transcriber.wer import word_error_rate


@attrs.frozen
class Clip:
    text: str
    terms: tuple[str, ...]


TUNED = (
    Clip("Please send the report to Siobhan Okonkwo before Friday.", ("Siobhan Okonkwo",)),
    Clip("We installed ComfyUI on the new server yesterday.", ("ComfyUI",)),
    Clip("The meeting with Anneliese Brzezinski is at noon.", ("Anneliese Brzezinski",)),
    Clip("Ask Giedre Ramanauskaite about the Grafana dashboard.", ("Giedre Ramanauskaite",)),
    Clip("We moved the database to PgBouncer last week.", ("PgBouncer",)),
)
HELD_OUT = (
    Clip("The Tlaxcala office ships the Quetzalcoatl samples.", ("Tlaxcala", "Quetzalcoatl")),
    Clip("Doctor Nguyen Thi Xuan will present the PyTorch results.", ("Nguyen Thi Xuan",)),
    Clip("Saoirse and Tadhg joined the Wexford team today.", ("Saoirse", "Tadhg", "Wexford")),
    Clip("Our supplier Zalando sent the invoice on Tuesday.", ("Zalando",)),
    Clip("Thank Oluwaseun Adeyemi for the Kibana charts.", ("Oluwaseun Adeyemi", "Kibana")),
)


def make_clip(text: str, path: Path, voice: str = "en-us", speed: int = 150) -> Path:
    """`text` said by espeak-ng, as a 16 kHz mono wav at `path`."""
    raw = path.with_suffix(".raw.wav")
    subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), text],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(path)],
        check=True,
        capture_output=True,
    )
    raw.unlink()
    return path


def written_right(text: str, terms: Sequence[str]) -> int:
    """How many of `terms` `text` has, spelled as given (case too)."""
    return sum(term in text for term in terms)


def measure(
    recognizer: WhisperRecognizer, clips: Sequence[Clip], scratch: Path
) -> list[dict[str, Any]]:
    """Each clip recognized plain and told its terms: terms written right, word error rate."""
    rows = []
    for i, clip in enumerate(clips):
        wav = make_clip(clip.text, scratch / f"vocabulary-{i}.wav")
        row: dict[str, Any] = {"clip": clip.text, "terms": len(clip.terms)}
        for label, options in (
            ("plain", RecognitionOptions()),
            ("told", RecognitionOptions(vocabulary=clip.terms)),
        ):
            got = recognizer.transcribe(wav, 5.0, "en", None, options).text
            row[label] = got
            row[f"{label}_right"] = written_right(got, clip.terms)
            row[f"{label}_wer"] = word_error_rate(clip.text, got)
        rows.append(row)
    return rows
