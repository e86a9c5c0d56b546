"""Voices named once, measured: `python -m transcriber.bench.voices [SCRATCH]`.

A library of voices is kept of one recording and a second recording of the same people
is named after it; strangers (recordings of people in no library they are set against)
should be named by nobody. The rules of the match are tried side by side on the same
material (transcriber/bench/voices_material.py: tuned on bench-speakers' espeak-ng voices,
judged on the real people of samples/ and other, sox-shifted espeak-ng voices):

- raw: the cosine of the two unit vectors at a threshold (the old rule, 0.87);
- margin: the cosine over the best rival's: another library voice for the found speaker,
  another found speaker of the recording for the library voice (`sides`: library only,
  or both);
- S-norm: the cosine z-normed against a cohort on both sides (adaptive: the top k), the
  cohort the owner's other voices and the recording's other speakers (situ), or the
  outsiders the diarize step measures against (run: transcriber.audio.voice_cohort);
- cohort margin: the cosine over each side's likeness to those outsiders (MATCH, shipped);
- a minimum of speech before a voice is named or taken;
- the voice averaged over clean windows only (not overlapping a change of speaker).

For each: the share of the second recordings' speech named right (mean, worst), names
given to the wrong person, strangers named. Needs espeak-ng and sox. SCRATCH keeps the
material between runs (made afresh in a temporary folder without it)."""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from transcriber.audio.voice_cohort import cohort as cohort_of
from transcriber.bench.voices_material import Heard, Material, make, whose
from transcriber.records.voices import MATCH
from transcriber.records.voices_match import Rule, Voice, match


def voices_of(heard: Heard, clean: bool) -> dict[int, Voice]:
    """Each found speaker's voice: the unit mean of their windows (`clean`: only those
    every overlapping window of which is theirs too, when they have any), and the seconds
    of their turns."""
    labels = np.asarray(heard.labels)
    starts = np.array([w[0] for w in heard.windows])
    out = {}
    for s in sorted(set(heard.labels)):
        mine = labels == s
        if clean:
            ok = np.array(
                [
                    mine[i] and bool(np.all(labels[np.abs(starts - starts[i]) < 1.5] == s))
                    for i in range(len(labels))
                ]
            )
            if ok.any():
                mine = ok
        mean = heard.embeddings[mine].mean(0)
        seconds = sum(t.end - t.start for t in heard.turns if t.speaker == s)
        out[s] = Voice(tuple(float(x) for x in mean / np.linalg.norm(mean)), seconds)
    return out


def library_of(heard: Heard, clean: bool) -> dict[str, Voice]:
    """The library an owner would keep of a recording: each found speaker named after
    the person they mostly are (the first found speaker of each person)."""
    people = whose(heard)
    out: dict[str, Voice] = {}
    for s, v in voices_of(heard, clean).items():
        if s in people and people[s] not in out:
            out[people[s]] = v
    return out


def _named_share(heard: Heard, named: dict[int, str]) -> float:
    right = total = 0.0
    for a, b, who in heard.reference:
        total += b - a
        right += sum(
            max(0.0, min(t.end, b) - max(t.start, a))
            for t in heard.turns
            if named.get(t.speaker) == who
        )
    return right / total


def score(material: Material, rule: Rule, clean: bool, cohort: list[Voice]) -> dict[str, Any]:
    shares, names, wrong = [], 0, 0
    for first, second in material.pairs:
        named = match(voices_of(second, clean), library_of(first, clean), rule, cohort)
        shares.append(_named_share(second, named))
        people = whose(second)
        names += len(named)
        wrong += sum(1 for s, n in named.items() if people.get(s) != n)
    strangers = named_strangers = 0
    libraries = [library_of(h, clean) for h, _ in material.pairs]
    for library, heard in itertools.product(libraries, [*material.strangers, *_others(material)]):
        if set(library) & heard.people:
            continue
        found = voices_of(heard, clean)
        strangers += len(found)
        named_strangers += len(match(found, library, rule, cohort))
    return {
        "named right": round(float(np.mean(shares)), 3),
        "worst": round(float(np.min(shares)), 3),
        "wrong": f"{wrong}/{names}",
        "strangers named": f"{named_strangers}/{strangers}",
        "stranger rate": round(named_strangers / max(1, strangers), 3),
    }


def across(sets: dict[str, Material], rule: Rule, clean: bool, cohort: list[Voice]) -> str:
    """Strangers across the sets (each set's libraries against the other set's
    recordings: nobody there is in them), named of all found."""
    named = found = 0
    for mine, theirs in itertools.permutations(sets.values(), 2):
        for first, _ in mine.pairs:
            library = library_of(first, clean)
            for heard in [*theirs.strangers, *(h for p in theirs.pairs for h in p)]:
                voices = voices_of(heard, clean)
                found += len(voices)
                named += len(match(voices, library, rule, cohort))
    return f"{named}/{found}"


def _others(material: Material) -> Iterable[Heard]:
    """Every pair's second recording is a stranger to the libraries of other people."""
    return (second for _, second in material.pairs)


RULES: list[tuple[str, Rule]] = [
    ("raw 0.87 (old)", Rule(threshold=0.87)),
    ("MATCH (the rule shipped)", MATCH),
    *((f"raw {t}", Rule(threshold=t)) for t in (0.80, 0.90, 0.93)),
    *(
        (f"margin {sides} {m} (raw 0.8)", Rule(threshold=0.8, margin=m, margin_sides=sides))
        for sides in ("library", "both")
        for m in (0.03, 0.05, 0.08)
    ),
    *(
        (f"s-norm {c} top{k} z{z} (raw 0.8)", Rule(threshold=0.8, snorm=z, cohort=c, top=k))
        for c in ("situ", "run", "both")
        for k in (3, 6)
        for z in (1.0, 1.5, 2.0)
    ),
    *(
        (f"cohort {z} (raw {t})", Rule(threshold=t, cohort_margin=z))
        for t in (0.75, 0.8, 0.87)
        for z in (0.0, 0.02, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.11)
    ),
    *(
        (f"cohort 0.06 (raw 0.8) min {m}s", Rule(threshold=0.8, cohort_margin=0.06, min_seconds=m))
        for m in (2.0, 5.0)
    ),
]


def run_cohort(folder: Path) -> list[Voice]:
    """The run-time cohort, as the diarize step makes it (transcriber.audio.voice_cohort)."""
    return [Voice(tuple(v), 0.0) for v in cohort_of(folder)]


def main(argv: list[str] = sys.argv[1:]) -> None:
    def go(folder: Path) -> None:
        sets = make(folder)
        cohort = run_cohort(folder)
        rows: list[dict[str, Any]] = []
        for (label, rule), clean in itertools.product(RULES, (False, True)):
            row: dict[str, Any] = {"rule": label, "clean": clean}
            for name, material in sets.items():
                row[name] = score(material, rule, clean, cohort)
            row["strangers across the sets"] = across(sets, rule, clean, cohort)
            rows.append(row)
            print(json.dumps(row), flush=True)

    if argv:
        Path(argv[0]).mkdir(parents=True, exist_ok=True)
        go(Path(argv[0]))
    else:
        with tempfile.TemporaryDirectory(prefix="bench-voices-") as tmp:
            go(Path(tmp))


if __name__ == "__main__":
    main()
