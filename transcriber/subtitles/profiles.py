"""The subtitle profiles: each a small table of rules and where its numbers come from.

`general` is the default of every SRT and VTT export: two lines of 42 characters, 5/6 s
to 7 s a cue, two frames between cues, no reading-speed rule. `segments` is not a
profile of rules but today's cues, one per recognized segment (`SEGMENTS`). The sources
are quoted in docs/subtitles.md.
"""

from __future__ import annotations

import attrs

FRAME_24 = 1 / 24
"""A frame at 24 fps: Netflix counts its gap in frames "regardless of frame rate"."""


@attrs.frozen
class Profile:
    """The rules a cue follows. `max_cps` None: reading speed is not a rule of it."""

    name: str
    max_chars: int
    """Characters a line (spaces and punctuation included, as the guides count)."""
    max_lines: int
    min_duration_s: float
    max_duration_s: float
    min_gap_s: float
    max_cps: float | None
    """Characters a second the reader is given, the cue's characters over its time."""
    source: str
    """Where the numbers come from: the guide's address."""
    note: str = ""


NETFLIX_GENERAL = (
    "https://partnerhelp.netflixstudios.com/hc/en-us/articles/"
    "215758617-Timed-Text-Style-Guide-General-Requirements"
)
NETFLIX_EN = (
    "https://backlothelp.netflix.com/hc/en-us/articles/"
    "219375728-English-Template-Timed-Text-Style-Guide"
)
NETFLIX_RU = (
    "https://partnerhelp.netflixstudios.com/hc/en-us/articles/"
    "215346638-Russian-Timed-Text-Style-Guide"
)
BBC = "https://www.bbc.co.uk/accessibility/forproducts/guides/subtitles/"

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="general",
            max_chars=42,
            max_lines=2,
            min_duration_s=5 / 6,
            max_duration_s=7.0,
            min_gap_s=2 * FRAME_24,
            max_cps=None,
            source=NETFLIX_GENERAL,
            note="the default: Netflix's general layout and durations, no reading speed",
        ),
        Profile(
            name="netflix-en",
            max_chars=42,
            max_lines=2,
            min_duration_s=5 / 6,
            max_duration_s=7.0,
            min_gap_s=2 * FRAME_24,
            max_cps=17.0,
            source=NETFLIX_EN,
            note="adult programs: 200 words a minute, 17 characters a second",
        ),
        Profile(
            name="netflix-ru",
            max_chars=39,
            max_lines=2,
            min_duration_s=5 / 6,
            max_duration_s=7.0,
            min_gap_s=2 * FRAME_24,
            max_cps=17.0,
            source=NETFLIX_RU,
            note=(
                "39 characters a line from the Russian guide; the rest, reading speed "
                "included, from the general requirements and the English template"
            ),
        ),
        Profile(
            name="bbc",
            max_chars=37,
            max_lines=2,
            min_duration_s=5 / 6,
            max_duration_s=7.0,
            min_gap_s=2 / 25,
            max_cps=16.5,
            source=BBC,
            note=(
                "37 characters a line, two lines; 160-180 words a minute taken as 180 "
                "at 5.5 characters a word with its space (16.5 a second); the gap is two "
                "frames at the BBC's 25 fps; durations as Netflix's (ours)"
            ),
        ),
    )
}

DEFAULT = "general"
SEGMENTS = "segments"
"""Not a profile: one cue per recognized segment, the cues of before the profiles."""
NAMES = (*PROFILES, SEGMENTS)


class UnknownProfile(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown subtitle profile {name!r}; choose from {', '.join(NAMES)}")


def profile(name: str | None) -> Profile | None:
    """The profile `name` (None: the default), None for `segments`; UnknownProfile for a
    name no profile has."""
    name = DEFAULT if name is None or name == "" else name
    if name == SEGMENTS:
        return None
    if name not in PROFILES:
        raise UnknownProfile(name)
    return PROFILES[name]
