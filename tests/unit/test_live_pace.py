"""What the live policies measured by bench-live are made of: the margin policy's one-pass
rule (transcriber.audio.agreement), the encoder's window cut to the buffer
(transcriber.audio.live.ShortContext), the policies' paces (transcriber.http.live.turns),
and how the long session's minutes are read (transcriber.bench.live_long)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from transcriber.audio.agreement import Agreement, Word, joined
from transcriber.audio.live import ShortContext
from transcriber.bench.live_long import concatenated, per_minute
from transcriber.http.live.turns import POLICIES, LiveLimits


def said(*texts: str, start: float = 0.0, each: float = 0.5) -> list[Word]:
    return [Word(start + i * each, start + (i + 1) * each, f" {t}") for i, t in enumerate(texts)]


def test_the_margin_policy_confirms_words_heard_whole_in_one_pass() -> None:
    agreement = Agreement()
    # 2 s heard: words ending 0.5 s before that are taken at once; "four" (ends at 2.0)
    # may be cut off and waits.
    got = agreement.insert_heard(said("one", "two", "three", "four"), 2.0, 0.5)
    assert joined(got) == "one two three"
    # The next pass hears it whole (3 s heard), as "for" though the last pass had "four"
    # (it heard it cut off), and "five" after it: taken on this pass alone.
    got = agreement.insert_heard(said("one", "two", "three", "for", "five"), 3.0, 0.5)
    assert joined(got) == "for five"
    assert joined(agreement.confirmed) == "one two three for five"


def test_the_margin_policy_waits_where_the_last_pass_heard_the_word_otherwise() -> None:
    agreement = Agreement()
    # A word held back (empty key: a mark alone) stops the words after it…
    assert agreement.insert_heard(said("one", "…", "three", "four"), 4.0, 0.5) == [said("one")[0]]
    # …and a later pass that hears another word where the last pass heard one whole
    # waits for the next to agree.
    assert agreement.insert_heard(said("one", "too", "three", "four"), 4.5, 0.5) == []
    assert joined(agreement.insert_heard(said("one", "too", "three", "four"), 5.0, 0.5)) == (
        "too three four"
    )
    # Nothing confirmed is ever taken back, whatever the next pass hears.
    agreement.insert_heard(said("won", "to"), 6.0, 0.5)
    assert joined(agreement.confirmed) == "one too three four"


class FakeModel:
    """Records the frames each encode was given."""

    def __init__(self) -> None:
        self.given: list[int] = []

    def encode(self, features: np.ndarray) -> Any:
        self.given.append(features.shape[-1])
        return features


def test_the_encoder_is_given_the_buffer_and_its_padding_not_the_window() -> None:
    model = FakeModel()
    context = ShortContext(model)
    window = np.zeros((80, 3000), dtype=np.float32)  # faster-whisper pads to 30 s
    context.frames = context.frames_for(np.zeros(16000 * 5), 2.0)
    model.encode(window)
    context.frames = context.frames_for(np.zeros(16000 * 29), 2.0)  # never past 30 s
    model.encode(window)
    context.frames = context.frames_for(np.zeros(16000 * 5), None)  # the whole window
    model.encode(window)
    assert model.given == [700, 3000, 3000]


def test_a_policy_names_its_pace_and_a_given_step_is_kept() -> None:
    chosen = LiveLimits().pace
    assert chosen == POLICIES["agreement"]
    assert chosen.step_s < chosen.busy_step_s and chosen.context_pad_s is not None
    assert not LiveLimits(policy="whole").pace.passes
    assert LiveLimits(policy="la2-window").pace.context_pad_s is None
    # A step given (the tests' fakes) is the step whatever the passes take.
    given = LiveLimits(step_s=0.2).pace
    assert (given.step_s, given.busy_step_s) == (0.2, 0.2)
    with pytest.raises(ValueError):
        LiveLimits(policy="fastest")


def test_a_long_session_is_made_of_the_materials_and_read_minute_by_minute() -> None:
    second = 24_000 * 2
    found = [
        {
            "name": "a",
            "pcm": b"\0" * 40 * second,
            "batch": [(1.0, " x"), (39.0, " y")],
            "language": "en",
        },
        {"name": "b", "pcm": b"\0" * 30 * second, "batch": [(2.0, " z")], "language": "en"},
    ]
    long = concatenated(found, 1.5)
    assert len(long["pcm"]) == 110 * second  # a, b, a: past 90 s
    assert long["batch"] == [(1.0, " x"), (39.0, " y"), (42.0, " z"), (71.0, " x"), (109.0, " y")]
    got = {
        # (arrival, word): each word 1.5 s after its end, but the last 5 s after.
        "live": [(2.5, "x"), (40.5, "y"), (43.5, "z"), (72.5, "x"), (114.0, "y")],
        "turn_times": [(39.5, 40.0), (100.0, 103.0)],
    }
    first, last = per_minute(got, long["copies"], 110.0)
    assert first == {
        "minute": 1,
        "words": 3,
        "p50_s": 1.5,
        "p95_s": 1.5,
        "behind_at_end_s": 60.0 - 42.0,  # "z" ended at 42 s, the last word sent by 60 s
        "turns": 1,
        "completion_p50_s": 0.5,
        "completion_max_s": 0.5,
    }
    assert (last["words"], last["p95_s"], last["completion_max_s"]) == (2, 5.0, 3.0)
    assert last["behind_at_end_s"] == 110.0 - 71.0  # "y" at 109 s came after the end


def test_a_copy_of_a_paragraph_is_matched_with_its_own_deltas() -> None:
    second = 24_000 * 2
    same = {
        "name": "a",
        "pcm": b"\0" * 10 * second,
        "batch": [(4.0, " x"), (8.0, " y")],
        "language": "en",
    }
    long = concatenated([same], 30 / 60)  # three copies of the same words
    # The first copy's words were not sent; the second's and third's were, 1 s late.
    got = {"live": [(15.0, "x"), (19.0, "y"), (25.0, "x"), (29.0, "y")], "turn_times": []}
    rows = per_minute(got, long["copies"], 30.0)
    assert (rows[0]["words"], rows[0]["p50_s"], rows[0]["p95_s"]) == (4, 1.0, 1.0)
