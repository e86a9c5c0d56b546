"""The speaker count's later judge sets are judges only while nothing in them was tuned on."""

from __future__ import annotations

from typing import Any


def _voices(specs: list[Any]) -> set[str]:
    return {v[0].lower() for s in specs if not s.real for v in s.voices[: s.speakers]}


def _shifts(specs: list[Any]) -> set[str]:
    return {v[1] for s in specs if not s.real for v in s.voices[: s.speakers]} - {""}


def test_the_fifth_judge_set_shares_no_voice_shift_nor_seed_with_the_five_before() -> None:
    """judge5 is judged on after the five earlier sets were tuned on or looked into: none of
    their espeak-ng variants (any case, whatever the shift), shifts or seeds; 1–6 voices,
    voices that only say a word or two among them; no variant the service's own voice
    benchmarks use either."""
    from transcriber.bench.speakers import VOICES
    from transcriber.bench.speakers_count import held_out_set, judge_set, tuning_set
    from transcriber.bench.speakers_count_judge3 import judge3_set
    from transcriber.bench.speakers_count_judge4 import judge4_set
    from transcriber.bench.speakers_count_judge5 import judge5_set

    before = tuning_set() + held_out_set() + judge_set() + judge3_set() + judge4_set()
    judge5 = judge5_set()

    def variants(voices: set[str]) -> set[str]:
        return {v.split("+")[1] for v in voices if "+" in v}

    assert variants(_voices(judge5)).isdisjoint(variants(_voices(before)))
    assert variants(_voices(judge5)).isdisjoint({v[0].split("+")[1].lower() for v in VOICES})
    assert _shifts(judge5).isdisjoint(_shifts(before))
    assert {s.seed for s in judge5}.isdisjoint({s.seed for s in before})
    assert {s.speakers for s in judge5} == {1, 2, 3, 4, 5, 6}
    assert sum(s.brief > 0 for s in judge5) >= 8
    assert len(judge5) == 35


def test_the_people_set_is_of_people_no_earlier_set_has() -> None:
    """The people set: each voice a different person's flite or festival voice (no
    espeak-ng variant, which every earlier set and the voice benchmarks have), no seed of
    an earlier set; 1–6 voices, voices that only say a word or two among them."""
    from transcriber.bench.speakers_count import held_out_set, judge_set, tuning_set
    from transcriber.bench.speakers_count_judge3 import judge3_set
    from transcriber.bench.speakers_count_judge4 import judge4_set
    from transcriber.bench.speakers_count_judge5 import judge5_set
    from transcriber.bench.speakers_count_people import PEOPLE_VOICES, people_set

    before = [
        *tuning_set(), *held_out_set(), *judge_set(), *judge3_set(), *judge4_set(),
        *judge5_set(),
    ]  # fmt: skip
    people = people_set()
    assert all(v.split(":")[0] in {"flite", "festival"} for v in _voices(people))
    assert _voices(people).isdisjoint(_voices(before))
    assert len({v for v, _ in PEOPLE_VOICES}) == len(PEOPLE_VOICES) == 14
    assert all(len(set(s.voices[: s.speakers])) == s.speakers for s in people)
    assert {s.seed for s in people}.isdisjoint({s.seed for s in before})
    assert {s.speakers for s in people} == {1, 2, 3, 4, 5, 6}
    assert sum(s.brief > 0 for s in people) >= 8
    assert len(people) == 35
