"""The speaker count's fourth judge set (issue 36, fourth round): conversations of voices,
shifts and seeds that none of the four earlier sets uses (all four were tuned on by then:
speakers_count's tuning, held-out and judge sets, and speakers_count_judge3's), made the
way judge3's are (usual turns, voices that only say a word or two, long turns, a male and
a female variant of one base), frozen before the fourth round's tuning and scored once,
with the method chosen: 24 of 35 right (69 %; the third round's count 24, without voices
apart 19, NME-SC 17), mean DER 3.5 %; by voices speaking 1: 5/5, 2: 7/8, 3: 5/7, 4: 3/6,
5: 4/6, 6: 0/3; 20 of the 25 without a brief voice, 4 of the 10 with one.
"""

from __future__ import annotations

from typing import Any

JUDGE4_VOICES = (
    ("en-us+Mike", "pitch 80"),
    ("en+anika", ""),
    ("en-gb-x-rp+victor", "tempo 0.95"),
    ("en+zac", "pitch -150"),
    ("en-us-nyc+norbert", "pitch 180"),
    ("en-029+kaukovalta", "tempo 1.05"),
    ("en-gb-scotland+Lee", "pitch -180"),
    ("en-gb-x-gbclan+quincy", "pitch 280"),
    ("en+Marco", "tempo 1.1"),
    ("en-us+grandpa", "pitch 120"),
)
"""Voices of espeak-ng variants none of the earlier sets uses, with pitch and tempo shifts
none uses either; chosen from the variant list without listening to how alike CAM++ finds
them (not on the base `en-gb`, which espeak-ng 1.51 gives no variant: `en-gb+f3` is
`en-gb`)."""
JUDGE4_PAIRS = (
    (("en-029+robert", ""), ("en-029+anika", "")),
    (("en-us-nyc+michel", ""), ("en-us-nyc+zac", "")),
    (("en-gb-x-gbcwmd+iven3", ""), ("en-gb-x-gbcwmd+kaukovalta", "")),
)
"""A male and a higher variant of one base (the issue's case), variants new to the sets."""


def judge4_set() -> list[Any]:
    """35 conversations, seeds 13000+ (judge3's meeting_set): the usual turns × 3, one
    voice of one-sentence turns twice."""
    from transcriber.bench.speakers_count_judge3 import meeting_set

    return meeting_set("judge4", 13000, JUDGE4_VOICES, JUDGE4_PAIRS, 3, (("1-0", 4), ("1-1", 7)))
