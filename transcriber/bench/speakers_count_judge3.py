"""The speaker count's third judge set (issue 36, third round): conversations of voices,
shifts and seeds that none of speakers_count's three earlier sets uses (all three were
tuned on by then), with voices that only say a word or two the way meetings have them
("Yes, I agree.", "Sure." — a second or two each), frozen before any tuning and scored
once, with the method chosen: 20 of 28 right (71 %; the count before 15, NME-SC 13), mean
DER 4.4 % (3.9 %); by voices speaking 1: 3/3, 2: 6/7, 3: 4/6, 4: 3/5, 5: 3/4, 6: 1/3.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from transcriber.bench.speakers import RATE, SENTENCES, Conversation, _say

JUDGE3_VOICES = (
    ("en-gb-scotland+david", "pitch 60"),
    ("en-029+belinda", ""),
    ("en-us+edward", "tempo 0.96"),
    ("en+Andrea", "pitch -120"),
    ("en-gb-x-rp+john", "pitch -220"),
    ("en-us-nyc+shelby", "tempo 1.04"),
    ("en-gb-x-gbcwmd+travis", "pitch 220"),
    ("en+grandma", "pitch -60"),
)
"""Voices of espeak-ng variants none of the earlier sets uses (male and female; each
checked to sound unlike its base: a misspelt variant is the base voice), with
pitch and tempo shifts none uses either; not listened to for how alike CAM++ finds them."""
JUDGE3_PAIRS = (
    (("en-029+adam", ""), ("en-029+Alicia", "")),
    (("en-gb-scotland+paul", ""), ("en-gb-scotland+steph2", "")),
    (("en+rob", ""), ("en+steph3", "")),
)
"""A male and a female variant of one base (the issue's case), variants new to the sets."""
BRIEF = (
    "Yes, I agree.",
    "Sure.",
    "Exactly.",
    "Good point.",
    "Right, okay.",
    "Okay, thanks.",
    "Yes.",
    "Sure, why not.",
    "No, not really.",
    "Fine by me.",
)
"""What a voice that speaks only briefly says: one of these (two when the first is a word),
a second or two."""
BRIEF_TURNS = 2
"""Turns of each brief voice, at random places after the first turn."""


def make_meeting(
    path: Path,
    speakers: int,
    turns: int,
    seed: int,
    voices: tuple[tuple[str, str], ...],
    sentences: int,
    brief: int,
) -> list[tuple[float, float, int]]:
    """A 16 kHz mono wav at `path`: `speakers - brief` voices take `turns` turns as
    bench-speakers' conversations do (one to `sentences` sentences, a quarter single
    words), and each of the last `brief` voices says BRIEF_TURNS short things among them;
    answers the reference turns (start, end, speaker)."""
    rng = random.Random(seed)
    main = speakers - brief
    plan: list[tuple[int, str]] = []
    speaker = 0
    for i in range(turns):
        if i > 0 and main > 1:
            speaker = (speaker + rng.randrange(1, main)) % main
        short = rng.random() < 0.25
        count = 1 if short else rng.randint(1, sentences)
        pool = [s for s in SENTENCES if len(s) < 16] if short else list(SENTENCES)
        plan.append((speaker, " ".join(rng.choice(pool) for _ in range(count))))
    for k in range(main, speakers):
        for _ in range(BRIEF_TURNS):
            said = rng.choice(BRIEF)
            if len(said) < 10:
                said += " " + rng.choice(BRIEF)
            plan.insert(rng.randrange(1, len(plan) + 1), (k, said))
    scratch = Path(tempfile.mkdtemp(prefix="meeting-"))
    try:
        joined = Conversation()
        for i, (k, text) in enumerate(plan):
            speech = _say(
                text, voices[k % len(voices)], rng.randint(150, 185), scratch / f"{i}.wav"
            )
            joined.add(rng.uniform(0.2, 0.8), speech[: 20 * RATE], k)
        joined.write(path, tail_s=0.5)
        return joined.reference
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def meeting_set(
    name: str,
    seed: int,
    voices: tuple[tuple[str, str], ...],
    pairs: tuple[tuple[tuple[str, str], ...], ...],
    usual: int,
    one_voice: tuple[tuple[str, int], ...],
) -> list[Any]:
    """A judge set the way judge3's and judge4's are made, seeds from `seed`: 1–6 voices ×
    `usual` in the usual turns; 2–6 voices of which one (two from five) only says BRIEF
    things, twice each; long turns with and without a brief voice; the male/female
    `pairs`; one voice of one-sentence turns per `one_voice` (name's end, its turn of
    `voices`)."""
    from transcriber.bench.speakers_count import Spec

    def turned(c: int) -> tuple[tuple[str, str], ...]:
        c %= len(voices)
        return voices[c:] + voices[:c]

    out = [
        Spec(f"{name}-{s}-{c}", s, 16, seed + 10 * s + c, turned(3 * s + c))
        for s in range(1, 7)
        for c in range(usual)
    ]
    out += [
        Spec(f"{name}-brief-{s}-{c}", s, 14, seed + 100 + 10 * s + c, turned(s + 5 * c), brief=b)
        for s, c, b in (
            (2, 0, 1),
            (3, 0, 1),
            (3, 1, 1),
            (4, 0, 1),
            (4, 1, 2),
            (5, 0, 2),
            (5, 1, 1),
            (6, 0, 2),
        )
    ]
    out += [
        Spec(f"{name}-long-{s}-{b}", s, 10, seed + 200 + 10 * s + b, turned(2 * s + 1), 6, brief=b)
        for s, b in ((2, 0), (3, 0), (3, 1), (4, 1))
    ]
    out += [Spec(f"{name}-pair-{c}", 2, 8, seed + 300 + c, pair) for c, pair in enumerate(pairs)]
    return [
        *out,
        *(
            Spec(f"{name}-short-{end}", 1, 24, seed + 400 + k, turned(c), 1)
            for k, (end, c) in enumerate(one_voice)
        ),
    ]


def judge3_set() -> list[Any]:
    """28 conversations, seeds 11000+ (meeting_set): the usual turns × 2, one voice of
    one-sentence turns once."""
    return meeting_set("judge3", 11000, JUDGE3_VOICES, JUDGE3_PAIRS, 2, (("1", 6),))
