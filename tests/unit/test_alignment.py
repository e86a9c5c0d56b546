"""The owner's words timed by the recognized ones (transcriber.audio.alignment): every
word once, in order, times that never go back; misspellings keep their twin's times,
missed words lie between their neighbours, what the audio has no room for is marked."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcriber.audio.alignment import GUESSED, HEARD, UNPLACED, align, align_words
from transcriber.audio.recognize import Transcript
from transcriber.subtitles import cues
from transcriber.subtitles.profiles import PROFILES


def heard(text: str, start: float = 0.0, per_word: float = 0.5) -> list[dict[str, Any]]:
    """Recognized words one after another, each 0.4 s of its 0.5."""
    out = []
    for i, w in enumerate(text.split()):
        at = start + i * per_word
        out.append(
            {"word": w, "start": round(at, 3), "end": round(at + 0.4, 3), "probability": 0.9}
        )
    return out


def in_order(timed: list[Any]) -> bool:
    return all(a.start <= b.start and a.start <= a.end for a, b in itertools.pairwise(timed))


@pytest.mark.scenario("subtitles", "Words the recognizer missed are timed between their neighbours")
def test_misses_misspellings_extras_skips_and_strangers() -> None:
    recognized = heard("please send report to Shivana Khankwal before friday and then stop")
    owner = [
        "Please",
        "send",
        "the",
        "report",
        "to",
        "Siobhan",
        "Okonkwo",
        "before",
        "Friday.",
        "And",
        "then,",
        "stop!",
        "This",
        "whole",
        "sentence",
        "was",
        "never",
        "said",
        "by",
        "anyone.",
    ]
    got = align_words(owner, recognized)
    assert [t.word for t in got] == owner
    assert in_order(got)
    by = {t.word: t for t in got}
    # The misspelled name keeps its misspelling's times.
    assert (by["Siobhan"].start, by["Okonkwo"].end) == (2.0, 2.9)
    assert by["Siobhan"].timing == HEARD and by["Friday."].timing == HEARD
    # "the", dropped between two words that touch (after 0.9 "send" ends, 1.0 "report").
    assert by["the"].timing == GUESSED
    assert by["send"].start <= by["the"].start < by["report"].start
    # The sentence never said: no room after the last word heard.
    tail = got[-8:]
    assert {t.timing for t in tail} == {UNPLACED}
    assert all(t.start == t.end == by["stop!"].end for t in tail)

    # A skipped paragraph in the middle: more than three words with no time between.
    skipped = align_words(list("12abcdef34"), heard("1 2 3 4"))
    assert [t.timing for t in skipped[2:8]] == [UNPLACED] * 6
    assert in_order(skipped)

    # An extra word in a pause is spread over the pause.
    paused = align_words(["yes", "well", "no"], heard("yes", 0.0) + heard("no", 2.0))
    assert paused[1].timing == GUESSED and 0.4 <= paused[1].start < paused[1].end <= 2.0

    # Nothing in common: every word kept and unplaced.
    strangers = align_words(["completely", "other", "words"], heard("nothing alike here at all"))
    assert [t.timing for t in strangers] == [UNPLACED] * 3


def test_unequal_runs_are_spread_over_the_recognized_speech_by_length() -> None:
    # Four recognized words for two owner's words between the same neighbours.
    names = ["start", "Quetzalcoatl", "Tlaxcala", "end"]
    got = align_words(names, heard("start kets al co tlax end"))
    assert [t.timing for t in got] == [HEARD, GUESSED, GUESSED, HEARD]
    # Spread over 0.5 .. 2.4 (the four recognized words), the longer name the longer.
    assert got[1].start == 0.5 and got[2].end == 2.4
    assert got[1].end - got[1].start > got[2].end - got[2].start


def test_aligned_transcript_has_the_owners_sentences_and_every_profile_keeps_them() -> None:
    recognized = Transcript(
        "hello there general kenobi you are a bold one",
        [{"start": 0.0, "end": 4.5, "text": "hello there general kenobi you are a bold one",
          "words": heard("hello there general kenobi you are a bold one")}],
        "en",
        "whisper-base",
    )  # fmt: skip
    text = "Hello there! General Kenobi… You are a bold one."
    got = align(recognized, text)
    assert [s["text"] for s in got.segments] == [
        "Hello there!",
        "General Kenobi…",
        "You are a bold one.",
    ]
    assert got.text == text
    for profile in PROFILES.values():
        built = cues.build(got.segments, profile)
        assert [w for c in built for w in c.words] == text.split()


WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "delta", "the", "a", "Ёж", "ёж,", "—"]), max_size=30
)


@settings(max_examples=150, deadline=None)
@given(owner=WORDS, said=WORDS, gaps=st.lists(st.floats(0, 2), min_size=30, max_size=30))
def test_every_owner_word_once_in_order_whatever_was_heard(
    owner: list[str], said: list[str], gaps: list[float]
) -> None:
    at, recognized = 0.0, []
    for w, gap in zip(said, gaps, strict=False):
        at += gap
        recognized.append({"word": w, "start": at, "end": at + 0.3, "probability": None})
        at += 0.3
    got = align_words(owner, recognized)
    assert [t.word for t in got] == owner
    assert in_order(got)
    assert all(t.timing in (HEARD, GUESSED, UNPLACED) for t in got)
