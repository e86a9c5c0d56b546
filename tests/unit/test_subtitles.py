"""Subtitles by a profile's rules (capability `subtitles`): lines broken where a reader
expects, in English and Russian; cues cut from word times within the profile's lines
and durations, held for reading and apart by the gap; every word kept, in order; the
escaping of `transcriber.formats` on every cue; and the checker, on the service's files
and on files written by hand."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_cue_escaping import parse_srt, parse_vtt
from transcriber.subtitles import check, cues, lines, profiles
from transcriber.subtitles.profiles import PROFILES


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("subtitles", title)


GENERAL = PROFILES["general"]
NETFLIX = PROFILES["netflix-en"]


def laid(text: str, max_chars: int = 42, lead: int = 0) -> list[str]:
    found = lines.layout(text.split(), max_chars, 2, lead)
    assert found is not None
    return found[0]


def timed_segment(text: str, start: float, per_word: float, **extra: Any) -> dict[str, Any]:
    """A segment as the recognizer stores it: its words with times, one after another."""
    words = []
    at = start
    for w in text.split():
        words.append({"word": " " + w, "start": round(at, 3), "end": round(at + per_word * 0.9, 3)})
        at += per_word
    return {"start": start, "end": round(at, 3), "text": text, "words": words, **extra}


# --- line breaking --------------------------------------------------------------------------


@scenario("Lines break after punctuation, before conjunctions, never after an article")
def test_line_breaks_english_and_russian() -> None:
    # Fits: one line, as the guides ask.
    assert laid("Thank you for coming tonight.") == ["Thank you for coming tonight."]
    # After the comma, though a later break would balance better.
    assert laid("We walked along the river, and then we saw the old mill.") == [
        "We walked along the river,",
        "and then we saw the old mill.",
    ]
    # Before the conjunction, not inside "the bridge".
    assert laid("The children waited near the bridge because the rain came") == [
        "The children waited near the bridge",
        "because the rain came",
    ]
    # An article stays with its noun even where the balance asks otherwise.
    assert laid("Nobody here really understands the extraordinarily complicated rules") == [
        "Nobody here really understands",
        "the extraordinarily complicated rules",
    ]
    for text in (
        "I have been looking everywhere for a very beautiful thing",
        "Nobody expected that the decision would come so soon",
    ):
        first, second = laid(text)
        assert lines.bare(first.split()[-1]) not in lines.ARTICLES, (first, second)
    # Russian: after the comma; before the preposition, never after it.
    assert laid("Мы пошли в лес, и там мы увидели большого медведя", 39) == [
        "Мы пошли в лес,",
        "и там мы увидели большого медведя",
    ]
    first, second = laid("Вчера вечером мы долго разговаривали о работе в новом городе", 39)
    assert lines.bare(first.split()[-1]) not in lines.PREPOSITIONS, (first, second)
    assert all(len(x) <= 39 for x in (first, second))
    # A first and last name stay on one line, where the balance would part them.
    assert laid("Everybody loved watching Anna Petrova perform tonight onstage") == [
        "Everybody loved watching",
        "Anna Petrova perform tonight onstage",
    ]
    # A speaker's name on the first line counts.
    first, second = laid("We walked along the river and saw the mill", lead=len("Anna: "))
    assert len(first) + len("Anna: ") <= 42


def test_too_long_for_the_lines_does_not_fit() -> None:
    assert lines.layout(("word " * 20).split(), 42, 2) is None
    assert lines.layout(["Supercalifragilisticexpialidocious-and-more-words-here"], 42, 2) == (
        ["Supercalifragilisticexpialidocious-and-more-words-here"],
        0.0,
    )


# --- cues -----------------------------------------------------------------------------------


@scenario("A long segment becomes cues within the profile's lines, durations and gaps")
def test_a_long_segment_is_cut_into_cues_by_the_rules() -> None:
    text = (
        "Today we are going to talk about the history of the city. It was founded on "
        "the river a long time ago, and merchants came from far away to trade furs, "
        "salt and honey. Later the city grew, and the old walls were taken down."
    )
    segments = [timed_segment(text, 0.0, 0.3), timed_segment("Any questions?", 13.5, 0.4)]
    for profile in PROFILES.values():
        built = cues.build(segments, profile)
        assert len(built) > 3
        assert [w for c in built for w in c.words] == (text + " Any questions?").split()
        srt = cues.to_srt(built)
        broken = check.check(check.parse(srt), profile)
        # A too-fast cue the speech does not leave time for is reported, nothing else.
        assert {b.rule for b in broken} <= {"reading_speed"}, (profile.name, broken, srt)
        # Cuts after the sentences' ends where the lines allow.
        assert any(c.lines[-1].endswith("city.") for c in built), (profile.name, srt)


def test_a_short_cue_is_held_for_reading_into_the_silence() -> None:
    segments = [timed_segment("Yes.", 1.0, 0.2), timed_segment("Then we left.", 5.0, 0.3)]
    built = cues.build(segments, NETFLIX)
    assert built[0].start == 1.0 and built[0].end == pytest.approx(1.0 + 5 / 6, abs=0.001)
    # No room: held only up to the gap before the next cue, and reported.
    tight = [timed_segment("Absolutely not, never.", 0.0, 0.1), timed_segment("Why?", 0.4, 0.2)]
    built = cues.build(tight, NETFLIX)
    assert built[1].start - built[0].end >= NETFLIX.min_gap_s
    rules = {b.rule for b in check.check(check.parse(cues.to_srt(built)), NETFLIX)}
    assert "min_duration" in rules and "gap" not in rules


def test_a_word_without_time_borrows_from_the_next_cue() -> None:
    # The recognizer gave "Hey." no time, and the next cue starts at once: the next one
    # starts later, keeping its own minimum, so neither is a flash.
    flash = {
        "start": 3.0,
        "end": 3.0,
        "text": "Hey.",
        "words": [{"word": " Hey.", "start": 3.0, "end": 3.0}],
    }
    built = cues.build([flash, timed_segment("Look at the river over there.", 3.0, 0.4)], NETFLIX)
    assert built[0].end - built[0].start == pytest.approx(5 / 6, abs=0.001)
    assert built[1].start - built[0].end == pytest.approx(0.084, abs=0.001)
    assert built[1].end - built[1].start >= 5 / 6
    assert check.check(check.parse(cues.to_srt(built)), GENERAL) == []


def test_a_speaker_change_begins_a_cue_and_is_named() -> None:
    segments = [
        timed_segment("Hello.", 0.0, 0.3, speaker="Anna"),
        timed_segment("Hi.", 0.4, 0.3, speaker="Boris"),
    ]
    srt = cues.render("srt", segments, GENERAL)
    assert parse_srt(srt) == ["Anna: Hello.", "Boris: Hi."]
    assert parse_vtt(cues.render("vtt", segments, GENERAL)) == [
        ("Anna", "Hello."),
        ("Boris", "Hi."),
    ]


@scenario("A corrected segment's words are spread over its time")
def test_corrected_text_is_spread_over_the_segment() -> None:
    machine = timed_segment("the whether is fine", 2.0, 0.5)
    fixed = {**machine, "text": "The weather is fine today, isn't it?", "corrected": True}
    built = cues.build([fixed], GENERAL)
    assert [w for c in built for w in c.words] == fixed["text"].split()
    words = cues.timed_words(fixed)
    assert words[0].start == 2.0 and words[-1].end == pytest.approx(machine["end"], abs=0.02)
    assert all(a.end <= b.start for a, b in itertools.pairwise(words))
    # The machine's words keep the recognizer's times.
    assert cues.timed_words(machine)[1].start == machine["words"][1]["start"]


WORD = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=14,
).filter(lambda w: w.split() == [w])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(WORD, min_size=0, max_size=40),
            st.floats(0.0, 3.0),
            st.floats(0.05, 0.8),
            st.sampled_from([None, "Anna", "Bo <v> -->"]),
            st.booleans(),
        ),
        max_size=6,
    ),
    st.sampled_from(sorted(PROFILES)),
)
def test_no_word_is_dropped_or_reordered(segs: list[Any], name: str) -> None:
    """Whatever the words (markup, arrows, any script), the cues hold the segments' words
    in order, and each file is one a strict parser reads with the formats' escaping."""
    segments, at = [], 0.0
    for words, pause, per_word, speaker, timed in segs:
        at += pause
        s = timed_segment(" ".join(words), at, per_word, speaker=speaker)
        if not timed:
            s = {k: v for k, v in s.items() if k != "words"}
        segments.append(s)
        at = s["end"]
    profile = PROFILES[name]
    built = cues.build(segments, profile)
    assert [w for c in built for w in c.words] == [w for s in segments for w in s["text"].split()]
    for a, b in itertools.pairwise(built):
        assert b.start - a.end >= profile.min_gap_s - 0.0005
        assert a.start < a.end
    srt = parse_srt(cues.to_srt(built))
    vtt = parse_vtt(cues.to_vtt(built))
    assert len(srt) == len(vtt) == len(built)
    for c, (voice, text) in zip(built, vtt, strict=True):
        assert voice == c.speaker and text.split() == c.words


# --- the checker ----------------------------------------------------------------------------

HAND_SRT = """\ufeff1\r
00:00:01,000 --> 00:00:02,000\r
<i>This first line is far too long to be read on one line</i>\r
and a second\r
and a third\r
\r
7\r
0:00:02.010 --> 00:00:09.500\r
Short.\r
\r
\r
00:00:09,520 --> 00:00:10,000 X1:0\r
Anna: Fast fast fast fast fast fast fast.\r
"""

HAND_VTT = """WEBVTT - made by hand

NOTE a comment
with --> no timing line? it has one, but NOTE blocks are not cues

STYLE
::cue { color: red }

intro
00:01.000 --> 00:02.000 line:0 position:10%
<v Anna>Tom &amp; Jerry</v>

00:02.100 --> 00:02.800
<c.x>Fine</c>
"""


@scenario("The checker reports every broken rule with its cue's number")
def test_checker_on_hand_written_files() -> None:
    srt = check.parse(HAND_SRT)
    assert [c.number for c in srt] == [1, 2, 3]
    assert srt[0].lines[0] == "This first line is far too long to be read on one line"
    assert (srt[1].start, srt[1].end) == (2.01, 9.5)
    got = {(b.cue, b.rule) for b in check.check(srt, NETFLIX)}
    assert got == {
        (1, "line_length"),
        (1, "line_count"),
        (1, "reading_speed"),
        (1, "gap"),
        (2, "max_duration"),
        (2, "gap"),
        (3, "min_duration"),
        (3, "reading_speed"),
    }
    vtt = check.parse(HAND_VTT)
    assert [(c.number, c.lines) for c in vtt] == [(1, ("Tom & Jerry",)), (2, ("Fine",))]
    assert [(b.cue, b.rule) for b in check.check(vtt, GENERAL)] == [(2, "min_duration")]
    report = check.report(vtt, NETFLIX)
    assert report["ok"] is False and report["counts"]["min_duration"] == 1
    assert report["broken"] == [
        {"cue": 2, "rule": "min_duration", "detail": "0.700 s, at least 0.833 s"}
    ]


def test_not_subtitles() -> None:
    with pytest.raises(check.NotSubtitles):
        check.parse("just some words\n\nand more")
    assert check.parse("") == []


def test_unknown_profile_names_the_known_ones() -> None:
    with pytest.raises(profiles.UnknownProfile) as e:
        profiles.profile("netflix")
    assert "general, netflix-en, netflix-ru, bbc, segments" in str(e.value)
    assert profiles.profile(None) is GENERAL and profiles.profile("segments") is None
