"""The people bench's tally of the voice rule: who counts as known, as a stranger, and whose
speech is named right."""

from __future__ import annotations

import numpy as np

from transcriber.bench.voices_people import measure
from transcriber.records.voices_match import Voice


def _unit(*xs: float) -> tuple[float, ...]:
    v = np.array(xs, dtype=float)
    return tuple(float(x) for x in v / np.linalg.norm(v))


def test_a_person_in_both_conversations_is_known_and_the_rest_strangers() -> None:
    """Ann speaks in both conversations (alike: named), Ben only in the first, Cleo only in
    the second (unlike everybody: a stranger never named); Dan is in both but his second
    voice is unlike his first, so his 3 s are not named."""
    first = {
        "ann": Voice(_unit(1, 0, 0, 0), 10.0),
        "ben": Voice(_unit(0, 1, 0, 0), 4.0),
        "dan": Voice(_unit(0, 0, 0, 1), 5.0),
    }
    second = {
        "ann": Voice(_unit(1, 0.05, 0, 0), 9.0),
        "cleo": Voice(_unit(0, 0, 1, 0), 6.0),
        "dan": Voice(_unit(0, 0.7, 0, 1), 3.0),
    }
    got = measure({"a": first, "b": second}, cohort=[])
    # a→b: ann right, dan missed, cleo a stranger; b→a: ann right, dan missed, ben a stranger.
    assert got == {
        "known": 4,
        "named_right": 2,
        "speech_named_right": round((9 + 10) / (9 + 3 + 10 + 5), 3),
        "named_wrong": 0,
        "strangers": 2,
        "strangers_named": 0,
    }
