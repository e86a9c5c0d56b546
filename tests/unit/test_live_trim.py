"""Where a live turn's buffer is trimmed (transcriber.audio.agreement.Agreement.trim_at):
at a confirmed sentence end past `trim_s`, at a confirmed clause mark past `clause_s`, at
the last confirmed word past `word_s`, each `keep_s` before the buffer's end; only
confirmed words are cut off and none is taken back; and a session's policy trims its
turns so (transcriber.http.live.stream)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import trio
import trio.testing

from transcriber.audio.agreement import Agreement, Word, joined
from transcriber.http.live.stream import Stream
from transcriber.http.live.turns import BYTES_PER_S, POLICIES, LiveLimits, Pace


def said(*texts: str, start: float = 0.0, each: float = 0.5) -> list[Word]:
    return [Word(start + i * each, start + (i + 1) * each, f" {t}") for i, t in enumerate(texts)]


FERRY = ("the", "ferry", "leaves", "at", "seven,", "and", "on", "windy", "days", "it", "waits.")
"""Eleven words of half a second: "seven," ends at 2.5 s, "waits." at 5.5 s."""


def confirmed(agreement: Agreement, words: list[Word]) -> None:
    agreement.insert(words)
    agreement.insert(words)


def test_a_confirmed_comma_trims_past_clause_s_a_sentence_end_past_trim_s() -> None:
    sentence_only = Agreement(trim_s=4.0)
    confirmed(sentence_only, said(*FERRY[:9]))  # up to "days": no sentence end yet
    assert sentence_only.trim_at(4.5) is None  # a comma is not a sentence end
    clause = Agreement(trim_s=8.0, clause_s=4.0)
    confirmed(clause, said(*FERRY[:9]))
    assert clause.trim_at(4.0) is None  # not longer than clause_s
    assert clause.trim_at(4.5) == 2.5  # after "seven,"
    # Past clause_s a sentence end counts as a clause end, and the last mark is taken.
    confirmed(clause, said(*FERRY))
    assert clause.trim_at(6.0) == 5.5  # after "waits."


def test_a_word_boundary_trims_past_word_s_where_no_mark_does() -> None:
    agreement = Agreement(trim_s=4.0, word_s=6.0)
    words = said("the", "ferry", "leaves", "the", "harbor", "at", "half", "past", "seven", "and")
    agreement.insert(words[:8])
    agreement.insert(words)  # confirms up to "past" (4.0 s); "seven and" are pending
    assert joined(agreement.confirmed) == "the ferry leaves the harbor at half past"
    assert agreement.trim_at(6.0) is None
    # The last confirmed word, not the last heard: what no delta has said stays heard.
    assert agreement.trim_at(6.5) == 4.0
    default = Agreement(trim_s=4.0)  # word_s None: only near Whisper's window
    confirmed(default, words)
    assert default.trim_at(6.5) is None
    assert default.trim_at(24.5) == 5.0


def test_a_cut_leaves_keep_s_of_audio_after_it() -> None:
    agreement = Agreement(trim_s=4.0, clause_s=4.0, keep_s=1.0)
    confirmed(agreement, said(*FERRY))  # "waits." ends at 5.5 s, the turn's last word
    # The turn ends half a second later: cutting at "waits." would leave the last pass
    # its silence alone; the comma before it is taken.
    assert agreement.trim_at(6.0) == 2.5
    assert agreement.trim_at(6.5) == 5.5
    word = Agreement(trim_s=4.0, word_s=4.0, keep_s=1.0)
    confirmed(word, said("no", "mark", "in", "these", "words", "at", "all", "here"))
    assert word.trim_at(4.5) == 3.5  # "all", not "here" (4.0 s)


def test_after_a_clause_trim_nothing_confirmed_is_taken_back_or_sent_twice() -> None:
    agreement = Agreement(trim_s=8.0, clause_s=4.0)
    confirmed(agreement, said(*FERRY[:9]))
    cut = agreement.trim_at(4.5)
    assert cut == 2.5
    agreement.trimmed(cut)
    assert agreement.prompt() == "the ferry leaves at seven,"
    # The cut came a little early: the next passes hear "seven" again at the buffer's
    # start (times from the trimmed buffer's), and it is not confirmed twice.
    again = said("seven", "and", "on", "windy", "days", "it", "waits.", start=-0.05)
    assert agreement.insert(again) == []
    assert joined(agreement.insert(again)) == "it waits."
    assert joined(agreement.confirmed) == " ".join(FERRY)


class Scripted:
    """A live recognizer whose passes hear the words of a script (times in the turn)
    that end within the audio received so far; it keeps each pass's buffer and prompt."""

    def __init__(self, script: list[Word]):
        self.script = script
        self.heard_s = 0.0
        self.passes: list[tuple[float, str | None]] = []

    async def warm(self) -> None:
        pass

    async def words(self, samples: np.ndarray, language: Any, prompt: Any, pad: Any) -> list[Word]:
        buffer_s = samples.size / 16_000
        offset = self.heard_s - buffer_s
        self.passes.append((round(buffer_s, 3), prompt))
        return [
            Word(w.start - offset, w.end - offset, w.text)
            for w in self.script
            if w.start >= offset - 0.01 and w.end <= self.heard_s + 1e-9
        ]


async def test_a_sessions_policy_trims_its_turns_buffer_at_a_confirmed_comma(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pace = Pace(step_s=1.0, busy_step_s=1.0, context_pad_s=2.0, trim_s=8.0, clause_s=3.0)
    monkeypatch.setitem(POLICIES, "agreement", pace)  # the session's policy, as given
    recognizer = Scripted(said(*FERRY))
    sent: list[dict[str, Any]] = []

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    stream = Stream(recognizer, LiveLimits(policy="agreement"), send)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(stream.run)
        for _ in range(6):
            recognizer.heard_s += 1.0
            await stream.add("item", "en", None, b"\0\0" * (BYTES_PER_S // 2))
            await trio.testing.wait_all_tasks_blocked()
        stream.close("item", "en", None)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    # Passes over 1, 2, 3, 4 s; the fourth confirms "seven," (2.5 s) with the buffer past
    # 3 s: cut there, the fifth hears 2.5 s with the confirmed words as its prompt.
    assert [p[0] for p in recognizer.passes] == [1.0, 2.0, 3.0, 4.0, 2.5, 3.5, 3.5]
    assert recognizer.passes[4][1] == "the ferry leaves at seven,"
    deltas = [e["delta"] for e in sent if e["type"].endswith(".delta")]
    completed = [e["transcript"] for e in sent if e["type"].endswith(".completed")]
    assert "".join(deltas) == completed[0] == " ".join(FERRY)
