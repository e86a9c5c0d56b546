"""The speaker count on two sets of conversations: one the clustering's constants were
chosen on (TUNING: bench-speakers' voices and seeds), one they never were (HELD_OUT: other
espeak-ng voices, seeds and turn lengths, and real speech from samples/). Each
conversation is embedded once (CAM++ windows, as diarization makes them) into a cache
folder; the counting methods are then compared on the cache, which costs seconds.

    transcriber bench-speakers --count-cache /tmp/speakers-cache

prints, per set and method, the share of conversations whose count is right and the mean
DER.
"""

from __future__ import annotations

import random
import tempfile
import wave
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from transcriber.bench.speakers import RATE, VOICES, der, make_conversation

HELD_OUT_VOICES = (
    ("en-gb+m1", ""),
    ("en-us+f2", ""),
    ("en-gb-scotland+m7", "pitch -300"),
    ("en+Annie", "pitch 100"),
    ("en-029+m4", "pitch 250"),
    ("en-us+f4", "pitch -250"),
)
"""Voices none of the tuning set uses (other espeak-ng bases, variants and pitch shifts),
taken without listening to how alike CAM++ finds them."""
MALE_FEMALE = (
    (("en-us+m1", ""), ("en-us+f2", "")),
    (("en-us+m3", ""), ("en-us+f3", "")),
    (("en+m2", ""), ("en+f1", "")),
    (("en-gb+m4", ""), ("en-gb+f4", "")),
    (("en+Michael", ""), ("en+Annie", "")),
    (("en-us+m7", ""), ("en-us+f5", "")),
)
"""The issue's case: a male and a female variant of one espeak-ng voice, 8 turns (about
42 s); variants of one voice embed more alike than different voices do."""
SAMPLES = Path(__file__).parents[2] / "samples"


@attrs.frozen
class Spec:
    """One conversation to make: `speakers` of `voices`, `turns` turns from `seed`;
    `sentences` caps the sentences in a turn (short turns: a quick back-and-forth);
    `real` names samples/ recordings instead (one each, or interleaved)."""

    name: str
    speakers: int = 2
    turns: int = 16
    seed: int = 0
    voices: tuple[tuple[str, str], ...] = VOICES
    sentences: int = 4
    real: tuple[str, ...] = ()


def tuning_set() -> list[Spec]:
    """bench-speakers' conversations (its seeds, 1000 × speakers + c) of 1–6 voices."""
    return [Spec(f"tune-{s}-{c}", s, 16, 1000 * s + c) for s in range(1, 7) for c in range(3)]


def held_out_set() -> list[Spec]:
    """Other voices and seeds, turns of other lengths, the male/female pair, real speech."""
    out = [
        Spec(f"held-{s}-{c}", s, 16, 7000 + 10 * s + c, HELD_OUT_VOICES)
        for s in range(1, 7)
        for c in range(2)
    ]
    out += [Spec(f"held-short-{s}", s, 24, 7500 + s, HELD_OUT_VOICES, 1) for s in (2, 3, 4, 5, 6)]
    out += [Spec(f"held-long-{s}", s, 10, 7600 + s, HELD_OUT_VOICES[::-1]) for s in (2, 3, 4)]
    out += [Spec(f"male-female-{c}", 2, 8, 7700 + c, MALE_FEMALE[0]) for c in range(4)]
    out += [Spec(f"pair-{c}", 2, 8, 7800 + c, pair) for c, pair in enumerate(MALE_FEMALE[1:])]
    return [*out, Spec("real-en", 1, real=("en",)), Spec("real-ru", 1, real=("ru",))]


def _real(path: Path, spec: Spec) -> list[tuple[float, float, int]]:
    """samples/ recordings: one alone, or two cut at their pauses into turns of 2–8 s and
    interleaved (two real voices, one after the other)."""
    from transcriber.audio.normalize import decode_to_wav
    from transcriber.audio.speakers_windows import speech_stretches

    rng = random.Random(spec.seed)
    turns: list[list[np.ndarray[Any, Any]]] = []
    for name in spec.real:
        wav = path.with_suffix(f".{name}.wav")
        decode_to_wav(SAMPLES / f"{name}.ogg", wav, max_duration_s=3600)
        with wave.open(str(wav), "rb") as w:
            samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
        wav.unlink()
        pieces: list[np.ndarray[Any, Any]] = []
        start = None
        for s, e in speech_stretches(samples.astype(np.float32) / 32768):
            start = s if start is None else start
            if e - start >= rng.uniform(2, 8):
                pieces.append(samples[int(start * RATE) : int(e * RATE)])
                start = None
        turns.append(pieces)
    out, reference, t = [], [], 0.0
    for i in range(max(len(p) for p in turns)):
        for k, pieces in enumerate(turns):
            if i < len(pieces):
                gap = np.zeros(int(rng.uniform(0.3, 0.8) * RATE), dtype=np.int16)
                out += [gap, pieces[i]]
                t += len(gap) / RATE
                reference.append((round(t, 3), round(t + len(pieces[i]) / RATE, 3), k))
                t += len(pieces[i]) / RATE
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.concatenate(out).tobytes())
    return reference


def embed(spec: Spec, cache: Path) -> Path:
    """The conversation's windows, their CAM++ embeddings, speech stretches, the reference
    turns and each window's true speaker (most overlapping; -1 none), as cache/NAME.npz
    (made once)."""
    from transcriber.audio.recognize import read_windows
    from transcriber.audio.speakers_model import CamPlusPlus
    from transcriber.audio.speakers_windows import embed_windows, speech_stretches, windows_of

    target = cache / f"{spec.name}.npz"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(prefix="speakers-count-") as tmp:
        wav = Path(tmp) / "c.wav"
        if spec.real:
            reference = _real(wav, spec)
        else:
            reference = make_conversation(
                wav, spec.speakers, spec.turns, spec.seed, spec.voices, spec.sentences
            )
        samples = np.concatenate([s for _, s in read_windows(wav)])
    stretches = speech_stretches(samples)
    windows = [w for s, e in stretches for w in windows_of(s, e)]
    embeddings = embed_windows(CamPlusPlus.load(), samples, windows, threads=1)
    truth = []
    for a, b in windows:
        overlaps = [(min(b, e) - max(a, s), k) for s, e, k in reference]
        best = max(overlaps)
        truth.append(best[1] if best[0] > 0 else -1)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(
        target,
        embeddings=embeddings,
        windows=np.array(windows, dtype=float).reshape(-1, 2),
        stretches=np.array(stretches, dtype=float).reshape(-1, 2),
        reference=np.array(reference, dtype=float).reshape(-1, 3),
        truth=np.array(truth, dtype=int),
    )
    return target


Method = Callable[[np.ndarray[Any, Any], Any, Sequence[tuple[float, float]]], np.ndarray[Any, Any]]


def score(path: Path, method: Method, asked: str = "auto") -> dict[str, Any]:
    """One cached conversation clustered by `method`: the count found against the count
    speaking, and the DER of the turns made from its labels."""
    from transcriber.audio.speakers import turns_of
    from transcriber.speaker_options import SpeakersOption

    data = np.load(path)
    windows = [tuple(w) for w in data["windows"].tolist()]
    reference = [(s, e, int(k)) for s, e, k in data["reference"].tolist()]
    labels = method(data["embeddings"], SpeakersOption.parse(asked), windows)
    turns = turns_of(windows, list(labels), [tuple(s) for s in data["stretches"].tolist()])
    found = len({t.speaker for t in turns})
    speaking = len({k for _, _, k in reference})
    return {
        "name": path.stem,
        "speaking": speaking,
        "found": found,
        **der(reference, [(t.start, t.end, t.speaker) for t in turns]),
    }


def compare(cache: Path, methods: dict[str, Method], specs: Sequence[Spec]) -> list[dict[str, Any]]:
    """Per method: the share of `specs` counted right, the mean DER, the wrong ones."""
    paths = [embed(s, cache) for s in specs]
    rows = []
    for name, method in methods.items():
        scores = [score(p, method) for p in paths]
        right = [s for s in scores if s["found"] == s["speaking"]]
        rows.append(
            {
                "method": name,
                "right": f"{len(right)}/{len(scores)}",
                "share": round(len(right) / max(1, len(scores)), 3),
                "mean_der": round(float(np.mean([s["der"] for s in scores])), 4),
                "wrong": " ".join(
                    f"{s['name']}:{s['found']}≠{s['speaking']}"
                    for s in scores
                    if s["found"] != s["speaking"]
                ),
            }
        )
    return rows


def methods() -> dict[str, Method]:
    """Today's count (average linkage, LINK_COSINE and APART_MARGIN), the one before
    APART_MARGIN (LINK_COSINE alone), and NME-SC's."""
    from transcriber.audio.speakers_clustering import cluster

    def by(count_by: str) -> Method:
        return lambda x, option, windows: cluster(x, option, windows, count_by)

    return {"linkage": by("linkage"), "threshold": by("threshold"), "nme": by("nme")}


def main(cache: Path) -> str:
    """Both sets' table (embedding what the cache lacks first: minutes)."""
    lines = []
    for name, specs in (("tuning", tuning_set()), ("held-out", held_out_set())):
        for row in compare(cache, methods(), specs):
            lines.append(
                f"{name} | {row['method']} | {row['right']} | {row['share']} | "
                f"{row['mean_der']} | {row['wrong']}"
            )
    head = "set | method | right | share | mean DER | wrong (found≠speaking)"
    return "\n".join([head, " | ".join(["---"] * 6), *lines])
