"""Voices named once, measured: `python -m transcriber.bench.voices`.

A library of voices is kept of one recording and a second recording of the same people
is named after it (the diarize step's match: the most alike pair first, one voice to one
speaker, at a threshold). Two sets of voices:

- real: samples/en.ogg and samples/ru.ogg, two people, each cut in halves that make two
  recordings (about 6 s and 3.5 s a person each); their turns are given, not found
  (diarization folds a speaker of 3.5 s into the other, speakers_clustering.MIN_SPEAKER_S);
- espeak-ng: nine pairs of bench-speakers' conversations (2, 3 and 4 voices, other words
  in the second), each diarized for real with the count given.

For each threshold: the share of the second recordings' speech named right (mean and
worst), names given to the wrong voice, and strangers named: each set's library against
the other set's speakers, none of whom is in it. Needs espeak-ng and sox."""

from __future__ import annotations

import itertools
import json
import tempfile
import wave
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from transcriber.audio.normalize import decode_to_wav
from transcriber.audio.speakers import Turn, diarize
from transcriber.audio.speakers_model import CamPlusPlus
from transcriber.bench.speakers import RATE, make_conversation
from transcriber.http.owner_voices import speaker_voice
from transcriber.speaker_options import SpeakersOption

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
THRESHOLDS = (0.75, 0.8, 0.85, 0.86, 0.87, 0.88, 0.9)
Vectors = dict[Any, np.ndarray[Any, Any]]
Case = tuple[
    str, Vectors, Vectors, list[Turn], list[tuple[float, float, int]], Callable[[int], str]
]


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def _to_reference(turns: Sequence[Turn], ref: Sequence[tuple[float, float, int]]) -> dict[int, int]:
    """Each found speaker's reference speaker: the one it overlaps most."""
    heard: dict[int, dict[int, float]] = {}
    for t in turns:
        for a, b, who in ref:
            if o := _overlap((t.start, t.end), (a, b)):
                heard.setdefault(t.speaker, {})[who] = heard.get(t.speaker, {}).get(who, 0.0) + o
    return {s: max(d, key=lambda k: d[k]) for s, d in heard.items()}


def match(found: Vectors, library: Vectors, threshold: float) -> dict[Any, Any]:
    """The diarize step's match (sql/0026 `name_found_voices`), here in numpy."""
    pairs = sorted(
        ((float(v @ lv), s, n) for s, v in found.items() for n, lv in library.items()),
        key=lambda p: -p[0],
    )
    named: dict[Any, Any] = {}
    for cosine, s, n in pairs:
        if cosine < threshold:
            break
        if s not in named and n not in named.values():
            named[s] = n
    return named


def _espeak_cases(folder: Path, net: CamPlusPlus) -> list[Case]:
    cases: list[Case] = []
    for n, c in itertools.product((2, 3, 4), range(3)):
        pa, pb = folder / f"e{n}-{c}-a.wav", folder / f"e{n}-{c}-b.wav"
        ra = make_conversation(pa, n, 4 * n, seed=500 + 10 * n + c)
        rb = make_conversation(pb, n, 4 * n, seed=900 + 10 * n + c)
        da = diarize(pa, SpeakersOption.parse(str(n)), net=net)
        db = diarize(pb, SpeakersOption.parse(str(n)), net=net)
        whose = _to_reference(da.turns, ra)
        library: Vectors = {}
        for s, v in da.voices.items():
            if s in whose and f"e{whose[s]}" not in library:
                library[f"e{whose[s]}"] = np.array(v)
        found = {s: np.array(v) for s, v in db.voices.items()}
        cases.append(("espeak", library, found, db.turns, rb, lambda i: f"e{i}"))
    return cases


def _pcm(path: Path) -> np.ndarray[Any, Any]:
    with wave.open(str(path), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), np.int16)


def _joined(
    pieces: list[tuple[np.ndarray[Any, Any], int]], path: Path
) -> list[tuple[float, float, int]]:
    ref, t, out = [], 0.0, []
    for x, s in pieces:
        out += [np.zeros(RATE // 2, np.int16), x]
        t += 0.5
        ref.append((t, t + len(x) / RATE, s))
        t += len(x) / RATE
    out.append(np.zeros(RATE // 2, np.int16))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.concatenate(out).tobytes())
    return ref


def _real_case(folder: Path, net: CamPlusPlus) -> tuple[Case, dict[str, list[float]]]:
    people = []
    for lang in ("en", "ru"):
        decode_to_wav(SAMPLES / f"{lang}.ogg", folder / f"{lang}.wav", max_duration_s=600)
        people.append(_pcm(folder / f"{lang}.wav"))
    en, ru = people
    refs = {
        "a": _joined([(en[: len(en) // 2], 0), (ru[: len(ru) // 2], 1)], folder / "real-a.wav"),
        "b": _joined([(ru[len(ru) // 2 :], 1), (en[len(en) // 2 :], 0)], folder / "real-b.wav"),
    }
    voices = {}
    for k, ref in refs.items():
        turns = [Turn(a, b, s) for a, b, s in ref]
        voices[k] = {
            s: np.array(speaker_voice(folder / f"real-{k}.wav", turns, s, net).vector)
            for s in (0, 1)
        }
    cosines = {
        "same person": [float(voices["a"][s] @ voices["b"][s]) for s in (0, 1)],
        "the other": [
            float(voices["a"][0] @ voices["b"][1]),
            float(voices["a"][1] @ voices["b"][0]),
        ],
    }
    turns_b = [Turn(a, b, s) for a, b, s in refs["b"]]
    library = {f"r{s}": v for s, v in voices["a"].items()}
    return ("real", library, voices["b"], turns_b, refs["b"], lambda i: f"r{i}"), cosines


def _row(cases: list[Case], threshold: float) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for kind in ("real", "espeak"):
        shares, wrong, named_count = [], 0, 0
        for _, library, found, turns, ref, truth in (c for c in cases if c[0] == kind):
            named = match(found, library, threshold)
            right = total = 0.0
            for a, b, who in ref:
                total += b - a
                right += sum(
                    _overlap((t.start, t.end), (a, b))
                    for t in turns
                    if named.get(t.speaker) == truth(who)
                )
            shares.append(right / total)
            whose = _to_reference(turns, ref)
            named_count += len(named)
            wrong += sum(1 for s, n in named.items() if s not in whose or truth(whose[s]) != n)
        row[kind] = {
            "named right": round(float(np.mean(shares)), 3),
            "worst": round(float(np.min(shares)), 3),
            "names": named_count,
            "wrong": wrong,
        }
    strangers = named_strangers = 0
    for kept, heard in itertools.product(cases, cases):
        if kept[0] != heard[0]:
            strangers += len(heard[2])
            named_strangers += len(match(heard[2], kept[1], threshold))
    row["strangers"] = {"speakers": strangers, "named": named_strangers}
    return row


def main() -> None:
    net = CamPlusPlus.load()
    with tempfile.TemporaryDirectory(prefix="bench-voices-") as tmp:
        real, cosines = _real_case(Path(tmp), net)
        cases = [real, *_espeak_cases(Path(tmp), net)]
    print(json.dumps({"real cosines": cosines}, indent=1))
    for threshold in THRESHOLDS:
        print(threshold, json.dumps(_row(cases, threshold)))


if __name__ == "__main__":
    main()
