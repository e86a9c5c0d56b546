"""The voices benchmark's material (transcriber/bench/voices.py): recordings made here,
each kept as its windows' CAM++ embeddings and found speakers, so that every rule of
the voice match is tried on the same material.

Two sets, so a rule tuned on one is judged on the other:

- tune: bench-speakers' espeak-ng voices (`VOICES`): conversations of 1-4 of them twice
  (other words, other seeds), and strangers: conversations of the voices a library lacks;
- judge: the real people of samples/ (en.ogg and ru.ogg, each cut in two recordings,
  their turns given: diarization folds a 3.5 s speaker, MIN_SPEAKER_S), and other
  espeak-ng voices shifted by sox (`JUDGE_VOICES`), none of them in the tune set: their
  conversations twice, and as strangers to the real people's library and the real people
  as strangers to theirs.

Diarized recordings are diarized for real, with the count given (what the count finds is
another engineer's measure: transcriber/bench/speakers_count.py)."""

from __future__ import annotations

import pickle
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from transcriber.audio.normalize import decode_to_wav
from transcriber.audio.recognize import read_windows
from transcriber.audio.speakers import Turn, turns_of
from transcriber.audio.speakers_clustering import cluster
from transcriber.audio.speakers_model import CamPlusPlus
from transcriber.audio.speakers_windows import embed_windows, speech_stretches, windows_of
from transcriber.bench.speakers import VOICES, Conversation, make_conversation
from transcriber.speaker_options import SpeakersOption

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
JUDGE_VOICES = (
    ("en-gb+m1", "pitch -200"),
    ("en-us+f4", "pitch 150"),
    ("en-gb-scotland+m2", "tempo 1.1"),
    ("en+f3", "pitch -150"),
    ("en-029+m5", "pitch 250"),
    ("en-gb-x-rp+m4", "pitch -300"),
)
"""Voices of the judge set: other espeak-ng variants and accents than VOICES, each moved
by sox (pitch moves the formants too)."""


@attrs.frozen
class Heard:
    """One recording as the rules see it: each window's embedding and found speaker,
    the found turns, and the reference turns (start, end, person)."""

    name: str
    windows: list[tuple[float, float]]
    embeddings: np.ndarray[Any, Any]
    labels: list[int]
    turns: list[Turn]
    reference: list[tuple[float, float, str]]

    @property
    def people(self) -> frozenset[str]:
        return frozenset(p for _, _, p in self.reference)


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def whose(heard: Heard) -> dict[int, str]:
    """Each found speaker's person: the one whose reference turns it overlaps most."""
    spoken: dict[int, dict[str, float]] = {}
    for t in heard.turns:
        for a, b, who in heard.reference:
            if o := _overlap((t.start, t.end), (a, b)):
                d = spoken.setdefault(t.speaker, {})
                d[who] = d.get(who, 0.0) + o
    return {s: max(d, key=lambda k: d[k]) for s, d in spoken.items()}


def _pcm(path: Path) -> np.ndarray[Any, Any]:
    with wave.open(str(path), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), np.int16)


def _samples(path: Path) -> np.ndarray[Any, Any]:
    return np.concatenate([s for _, s in read_windows(path)])


def diarized(name: str, path: Path, ref: list[tuple[float, float, str]], n: int) -> Heard:
    """A recording diarized as the diarize step does it (one read window: they are short),
    its windows kept."""
    samples = _samples(path)
    stretches = speech_stretches(samples)
    windows = [w for s, e in stretches for w in windows_of(s, e)]
    emb = embed_windows(_net(), samples, windows, threads=2)
    labels = cluster(emb, SpeakersOption.parse(str(n)), windows)
    order: dict[int, int] = {}
    turns = turns_of(windows, list(labels), stretches, order)
    return Heard(name, windows, emb, [order[int(x)] for x in labels], turns, ref)


def given_turns(name: str, path: Path, ref: list[tuple[float, float, str]]) -> Heard:
    """A recording whose turns are the reference's: windows over each turn."""
    samples = _samples(path)
    people = sorted({p for _, _, p in ref})
    windows, labels, turns = [], [], []
    for a, b, who in ref:
        local = windows_of(a, b)
        windows += local
        labels += [people.index(who)] * len(local)
        turns.append(Turn(a, b, people.index(who)))
    emb = embed_windows(_net(), samples, windows, threads=2)
    return Heard(name, windows, emb, labels, turns, ref)


_NETS: list[CamPlusPlus] = []


def _net() -> CamPlusPlus:
    if not _NETS:
        _NETS.append(CamPlusPlus.load())
    return _NETS[0]


def _conversation(
    folder: Path, name: str, voices: Sequence[tuple[str, str]], ids: Sequence[str], seed: int
) -> Heard:
    n = len(voices)
    path = folder / f"{name}.wav"
    ref = make_conversation(path, n, max(3, 4 * n), seed=seed, voices=voices)
    return diarized(name, path, [(a, b, ids[s]) for a, b, s in ref], n)


def _joined(pieces: list[tuple[np.ndarray[Any, Any], str]], path: Path) -> list[Any]:
    joined = Conversation()
    for x, who in pieces:
        joined.add(0.5, x, who)
    joined.write(path, tail_s=0.5)
    return joined.reference


def real_pair(folder: Path) -> tuple[Heard, Heard]:
    """samples/en.ogg and ru.ogg, each cut in halves: two recordings of the two people."""
    for lang in ("en", "ru"):
        decode_to_wav(SAMPLES / f"{lang}.ogg", folder / f"{lang}.wav", max_duration_s=600)
    en, ru = _pcm(folder / "en.wav"), _pcm(folder / "ru.wav")
    a = _joined([(en[: len(en) // 2], "en"), (ru[: len(ru) // 2], "ru")], folder / "real-a.wav")
    b = _joined([(ru[len(ru) // 2 :], "ru"), (en[len(en) // 2 :], "en")], folder / "real-b.wav")
    return given_turns("real-a", folder / "real-a.wav", a), given_turns(
        "real-b", folder / "real-b.wav", b
    )


@attrs.frozen
class Material:
    """Pairs (first recording: the library; second: named after it) and strangers
    (recordings whose people are in no library of the pairs they are set against)."""

    pairs: list[tuple[Heard, Heard]]
    strangers: list[Heard]


def make(folder: Path) -> dict[str, Material]:
    """Both sets, made in `folder` (their embeddings kept in `folder`/material.pickle:
    made once, read on the next run)."""
    kept = folder / "material.pickle"
    if kept.exists():
        with kept.open("rb") as f:
            done: dict[str, Material] = pickle.load(f)  # our own scratch file
            return done
    tune_ids = [f"t{i}" for i in range(len(VOICES))]
    judge_ids = [f"j{i}" for i in range(len(JUDGE_VOICES))]
    tune_pairs = [
        (
            _conversation(folder, f"t{n}-{c}-a", VOICES[:n], tune_ids, 500 + 10 * n + c),
            _conversation(folder, f"t{n}-{c}-b", VOICES[:n], tune_ids, 900 + 10 * n + c),
        )
        for n in (1, 2, 3, 4)
        for c in range(2)
    ]
    tune_strangers = [
        _conversation(folder, f"ts{k}-{m}", VOICES[k : k + m], tune_ids[k : k + m], 700 + k)
        for k, m in ((4, 2), (5, 1), (3, 3), (2, 2))
    ]
    judge_pairs = [real_pair(folder)] + [
        (
            _conversation(folder, f"j{n}-{c}-a", JUDGE_VOICES[:n], judge_ids, 600 + 10 * n + c),
            _conversation(folder, f"j{n}-{c}-b", JUDGE_VOICES[:n], judge_ids, 800 + 10 * n + c),
        )
        for n, c in ((1, 0), (2, 0), (3, 0))
    ]
    judge_strangers = [
        _conversation(folder, f"js{k}-{m}", JUDGE_VOICES[k : k + m], judge_ids[k : k + m], 750 + k)
        for k, m in ((3, 3), (4, 2), (5, 1))
    ]
    done = {
        "tune": Material(tune_pairs, tune_strangers),
        "judge": Material(judge_pairs, judge_strangers),
    }
    with kept.open("wb") as f:
        pickle.dump(done, f)
    return done
