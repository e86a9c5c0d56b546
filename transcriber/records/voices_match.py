"""The voice match's rule, in Python: which found speaker of a recording a library voice
names. The diarize step's commit runs the same rule in SQL (`name_found_voices`,
sql/0031_voices_matched_apart.sql); this twin is what the benchmark
(transcriber/bench/voices.py) measures rules with, and the tests hold the two alike.

A found speaker and a library voice are a pair when their cosine (unit vectors) is
at least `threshold` and beats every rival by `margin`: the found speaker is more
like this voice than like any other voice of the library, and the voice more like
this speaker than like any other speaker found in the recording. The most alike pair
first, each speaker and each voice once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs


@attrs.frozen
class Voice:
    """A unit vector and the seconds of speech it stands for."""

    vector: tuple[float, ...]
    seconds: float


@attrs.frozen
class Rule:
    threshold: float
    cohort_margin: float | None = None
    """The pair's cosine over each side's likeness to outsiders (the mean of its `top`
    most alike cohort voices, the larger of the two) at least this; None: not used,
    and not either when there is no cohort."""
    margin: float | None = None
    margin_sides: Literal["library", "both"] = "both"
    snorm: float | None = None
    """S-norm: the pair's cosine z-normed against each side's cohort, averaged, at least
    this (None: not used)."""
    cohort: Literal["situ", "run", "both"] = "situ"
    top: int = 3
    sd_floor: float = 0.05
    alone: float = 0.9
    """S-norm with no cohort at all (one voice against one speaker): the raw cosine
    needed instead."""
    min_seconds: float = 0.0


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=True)))


def _top_mean(vector: Sequence[float], cohort: Sequence[Voice], rule: Rule) -> float:
    top = sorted((cosine(vector, x.vector) for x in cohort), reverse=True)[: rule.top]
    return sum(top) / len(top)


def _z(c: float, rivals: list[float], rule: Rule) -> float | None:
    if not rivals:
        return None
    top = sorted(rivals, reverse=True)[: rule.top]
    mean = sum(top) / len(top)
    sd = float((sum((x - mean) ** 2 for x in top) / len(top)) ** 0.5)
    return (c - mean) / max(sd, rule.sd_floor)


def match(
    found: Mapping[int, Voice],
    library: Mapping[Any, Voice],
    rule: Rule,
    cohort: Sequence[Voice] = (),
) -> dict[int, Any]:
    """Found speakers named after library voices: {speaker: voice's key}."""
    cos = {(s, n): cosine(f.vector, v.vector) for s, f in found.items() for n, v in library.items()}
    pairs = []
    for (s, n), c in cos.items():
        if c < rule.threshold:
            continue
        if min(found[s].seconds, library[n].seconds) < rule.min_seconds:
            continue
        other_voices = [cos[s, m] for m in library if m != n]
        other_speakers = [cos[t, n] for t in found if t != s]
        if rule.margin is not None:
            rivals = other_voices + (other_speakers if rule.margin_sides == "both" else [])
            if rivals and c - max(rivals) < rule.margin:
                continue
        if rule.cohort_margin is not None and cohort:
            outside = max(
                _top_mean(found[s].vector, cohort, rule), _top_mean(library[n].vector, cohort, rule)
            )
            if c - outside < rule.cohort_margin:
                continue
        key = c
        if rule.snorm is not None:
            situ = rule.cohort in ("situ", "both")
            run = rule.cohort in ("run", "both")
            # Each side against voices that are not the other side's: the recording's
            # other speakers and the library's other voices (situ), outsiders (run).
            for_s = (
                [cosine(found[s].vector, found[t].vector) for t in found if t != s] + other_voices
                if situ
                else []
            ) + ([cosine(found[s].vector, x.vector) for x in cohort] if run else [])
            for_v = (
                [cosine(library[n].vector, library[m].vector) for m in library if m != n]
                + other_speakers
                if situ
                else []
            ) + ([cosine(library[n].vector, x.vector) for x in cohort] if run else [])
            zs, zv = _z(c, for_s, rule), _z(c, for_v, rule)
            if zs is None or zv is None:
                if c < rule.alone:
                    continue
                key = rule.snorm
            else:
                key = (zs + zv) / 2
                if key < rule.snorm:
                    continue
        pairs.append((key, c, s, n))
    named: dict[int, Any] = {}
    for _, _, s, n in sorted(pairs, key=lambda p: (-p[0], -p[1], p[2])):
        if s not in named and n not in named.values():
            named[s] = n
    return named
