"""Words that do not change: LocalAgreement-2 over a growing audio buffer, as
whisper_streaming (ufal, `whisper_online.py`) does it.

The turn's audio since the last trim is decoded again at every step; a word is
confirmed when two consecutive passes agree on it (and on every word before it), and a
confirmed word is never taken back. The buffer is trimmed at the end of a confirmed
sentence once it is longer than `trim_s`, at a confirmed clause mark (a comma) once it is
longer than `clause_s`, and at the last confirmed word once it is longer than `word_s`
(by default once it nears Whisper's 30 s window), so a decode never grows with the
session: the words confirmed before the trim go on as the next pass's prompt.

Pure state, no I/O: the caller decodes (`transcriber.audio.live`) and feeds the words
in; `transcriber.http.live` sends what is confirmed."""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

SENTENCE_END = (".", "?", "!", "。", "？", "！", "…")
CLAUSE_END = (",", ";", ":", "，", "、", "；", "：")
PROMPT_CHARS = 200
"""Confirmed text before the buffer that a pass is prompted with (whisper_streaming's)."""
OVERLAP_WORDS = 5
"""A pass may repeat up to this many words confirmed just before it (Whisper sees them
again in the audio): they are dropped, not confirmed twice."""


@attrs.frozen
class Word:
    """A word and its times in seconds from the start of the turn."""

    start: float
    end: float
    text: str

    @property
    def key(self) -> str:
        """What two passes must agree on: the word without case or punctuation, so a
        comma that comes and goes does not hold the text back."""
        return re.sub(r"[^\w']+", "", self.text.lower())


def joined(words: Sequence[Word]) -> str:
    """Whisper's words carry their own leading space."""
    return "".join(w.text for w in words).strip()


@attrs.define
class Agreement:
    """The confirmed words of one turn and the hypothesis they are checked against."""

    trim_s: float = 12.0
    """Trim at a confirmed sentence end once the buffer is longer than this."""
    clause_s: float | None = None
    """Trim at a confirmed clause mark too (a comma, a semicolon, a colon: where the
    speaker pauses within a sentence) once the buffer is longer than this; None:
    sentence ends only."""
    word_s: float | None = None
    """Trim at the last confirmed word where no mark lets the buffer go once it is
    longer than this; None: `max_buffer_s`."""
    keep_s: float = 0.0
    """A cut leaves at least this much audio after it: a sentence confirmed just as the
    turn ends is not cut off, or the turn's last pass would hear its trailing silence
    alone (Whisper makes up words there, "the next winter, the next winter, …")."""
    max_buffer_s: float = 24.0
    """Trim at the last confirmed word once the buffer is longer than this, sentence
    or not: Whisper decodes 30 s at a time."""
    confirmed: list[Word] = attrs.field(factory=list)
    """Every confirmed word of the turn, in order."""
    offset: float = 0.0
    """Where the buffer starts in the turn (seconds trimmed so far)."""
    pending: list[Word] = attrs.field(factory=list)
    """The last pass's words past the confirmed ones, waiting for the next to agree."""
    heard_until: float = 0.0
    """The end of the audio the last pass heard, in the turn's times."""

    @property
    def confirmed_until(self) -> float:
        return self.confirmed[-1].end if self.confirmed else self.offset

    def prompt(self) -> str:
        """Confirmed text of the turn before the buffer, as the next pass's prompt."""
        before = [w for w in self.confirmed if w.end <= self.offset]
        return joined(before)[-PROMPT_CHARS:]

    def insert(self, words: Sequence[Word]) -> list[Word]:
        """A pass's words (times from the buffer's start) in; the words it newly
        confirms out."""
        fresh = self._fresh(words)
        agreed: list[Word] = []
        for new, old in zip(fresh, self.pending, strict=False):
            if new.key != old.key or not new.key:
                break
            agreed.append(new)
        self.pending = fresh[len(agreed) :]
        self.confirmed.extend(agreed)
        return agreed

    def insert_heard(self, words: Sequence[Word], heard_s: float, margin_s: float) -> list[Word]:
        """One pass decides (the margin policy, AlignAtt's rule read off word times): a
        word is confirmed when it ends `margin_s` before the end of the audio heard
        (`heard_s`, from the buffer's start; Whisper's word times come from the same
        cross-attention AlignAtt stops on), and, where the previous pass heard it whole
        too, that pass had the same word there. Confirmed in order: the first word that
        fails holds back the rest."""
        fresh = self._fresh(words)
        end = heard_s + self.offset
        agreed: list[Word] = []
        for n, new in enumerate(fresh):
            if new.end > end - margin_s or not new.key:
                break
            old = self.pending[n] if n < len(self.pending) else None
            heard_before = old is not None and old.end <= self.heard_until - margin_s
            if heard_before and old is not None and old.key != new.key:
                break
            agreed.append(new)
        self.pending = fresh[len(agreed) :]
        self.heard_until = end
        self.confirmed.extend(agreed)
        return agreed

    def finish(self, words: Sequence[Word]) -> list[Word]:
        """The last pass of the turn (its whole audio heard): every word past the
        confirmed ones is the turn's, agreed or not."""
        fresh = self._fresh(words)
        self.confirmed.extend(fresh)
        self.pending = []
        return fresh

    def trim_at(self, buffer_s: float) -> float | None:
        """Where to cut the buffer (seconds from its start), or None to keep it whole:
        the last confirmed mark the buffer's length allows (a sentence end past
        `trim_s`, a clause mark past `clause_s`), else the last confirmed word past
        `word_s` (`max_buffer_s`), each at least `keep_s` before the buffer's end.
        Only confirmed words are cut off: what the next pass hears is what no delta has
        said yet."""
        marks: tuple[str, ...] = ()
        if buffer_s > self.trim_s:
            marks += SENTENCE_END
        if self.clause_s is not None and buffer_s > self.clause_s:
            marks += SENTENCE_END + CLAUSE_END
        latest = self.offset + buffer_s - self.keep_s
        inside = [w for w in self.confirmed if self.offset < w.end <= latest]
        ends = [w.end for w in inside if marks and w.text.rstrip().endswith(marks)]
        if ends:
            return ends[-1] - self.offset
        word_s = self.max_buffer_s if self.word_s is None else self.word_s
        if buffer_s > word_s and inside:
            return inside[-1].end - self.offset
        return None

    def overflow(self, buffer_s: float) -> float | None:
        """Where to cut a buffer that nothing confirmed lets trim (noise, a language
        Whisper keeps changing its mind on) before it passes Whisper's window: the
        words the last pass heard before the cut are taken as they are."""
        if buffer_s <= self.max_buffer_s + 4.0:
            return None
        cut = buffer_s - self.max_buffer_s
        taken = [w for w in self.pending if w.end <= self.offset + cut]
        self.confirmed.extend(taken)
        self.pending = self.pending[len(taken) :]
        return cut

    def trimmed(self, seconds: float) -> None:
        """The buffer lost its first `seconds`."""
        self.offset += seconds
        self.pending = [w for w in self.pending if w.start >= self.offset]

    def _fresh(self, words: Sequence[Word]) -> list[Word]:
        """A pass's words in the turn's times, past the confirmed ones: those that
        start before the last confirmed word ended are heard again, and a repeat of the
        last confirmed words at the buffer's start is dropped (whisper_streaming's
        n-gram check)."""
        shifted = [Word(w.start + self.offset, w.end + self.offset, w.text) for w in words]
        until = self.confirmed_until
        fresh = [w for w in shifted if w.start > until - 0.1]
        if fresh and self.confirmed and abs(fresh[0].start - until) < 1.0:
            tail = self.confirmed[-OVERLAP_WORDS:]
            for n in range(min(len(tail), len(fresh)), 0, -1):
                if [w.key for w in tail[-n:]] == [w.key for w in fresh[:n]]:
                    fresh = fresh[n:]
                    break
        return fresh
