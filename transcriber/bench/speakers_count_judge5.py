"""The speaker count's fifth judge set (issue 36, sixth round): conversations of voices,
shifts and seeds that none of the five earlier sets uses (all five tuned on or looked into
by then), made the way judge3's and judge4's are (usual turns, voices that only say a word
or two, long turns, a male and a higher variant of one base), frozen and committed before
the sixth round's change and scored once after it: the count as it is 19 of 35 (54 %),
mean DER 6.7 %; by voices speaking 1: 3/5, 2: 7/8, 3: 3/7, 4: 4/6, 5: 2/5, 6: 0/4 (windows
padded to a full window, not taken: 23; each window alone: 19).
"""

from __future__ import annotations

from typing import Any

JUDGE5_VOICES = (
    ("en-us+benjamin", "pitch 40"),
    ("en+Alex", "tempo 0.9"),
    ("en-gb-x-rp+caleb", "pitch -90"),
    ("en-029+Jacky", ""),
    ("en-us-nyc+Hugo", "pitch 330"),
    ("en-gb-scotland+Diogo", "tempo 1.15"),
    ("en-gb-x-gbclan+marcelo", "pitch -270"),
    ("en+gustave", "pitch 160"),
    ("en-gb-x-gbcwmd+boris", "tempo 0.93"),
    ("en-us+iven2", "pitch -40"),
)
"""Voices of espeak-ng variants none of the earlier sets uses, with pitch and tempo shifts
none uses either, chosen from the variant list without listening to them or embedding
them."""
JUDGE5_PAIRS = (
    (("en-us+pedro", ""), ("en-us+Nguyen", "")),
    (("en-gb-x-rp+marcelo", ""), ("en-gb-x-rp+ed", "")),
    (("en-029+iven", ""), ("en-029+Gene2", "")),
)
"""A lower and a higher variant of one base (the issue's case), variants new to the sets."""


def judge5_set() -> list[Any]:
    """35 conversations, seeds 15000+ (judge3's meeting_set): the usual turns × 3, one
    voice of one-sentence turns twice."""
    from transcriber.bench.speakers_count_judge3 import meeting_set

    return meeting_set("judge5", 15000, JUDGE5_VOICES, JUDGE5_PAIRS, 3, (("1-0", 2), ("1-1", 8)))
