"""The owner's own text timed to the speech (task `align`): the recognizer's transcript,
with its word times, gives the times; the owner's words are the words.

How a word is timed:
1. Both texts are cut into words and normalized (case, punctuation, ё) and the two
   sequences aligned (difflib's longest matching blocks, no junk heuristic). A word in a
   matching block takes its recognized twin's times: it was `heard`.
2. Between two matched neighbours lies a run of the owner's words and a run of
   recognized ones (the recognizer misspelled a name, dropped a word, heard a cough).
   Runs of equal length are paired one to one: a misspelled name keeps the times of its
   misspelling (`heard`). Otherwise the owner's run is spread over the time the
   recognized run spans (its speech, without the silence around it), in proportion to
   each word's length (`guessed`); with no recognized word in the gap, over the time
   between the neighbours, and where that is too short for the words (a dropped "the"
   between two words that touch), over the previous word's time shared with it.
3. A run that the audio has no room for — more than `UNPLACED_RUN` words and less than
   `MIN_WORD_S` a word of recognized speech between its neighbours (a paragraph the
   speaker skipped), or any word when nothing at all matched — is `unplaced`: kept, in
   its order, with no duration at its neighbour's time, so every export still has it.

Segments are the owner's sentences (at most `SEGMENT_WORDS_MAX` words each), so the
subtitle profiles cut cues from them as from the recognizer's; each word keeps how it
was timed in `timing`.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import attrs

from transcriber.audio.recognize import Transcript

HEARD, GUESSED, UNPLACED = "heard", "guessed", "unplaced"
MIN_WORD_S = 0.1
"""Speech a word takes at the least: a run given less than this a word is not in the
audio."""
UNPLACED_RUN = 3
"""Owner's words in a row that may be squeezed into too little time (dropped short words
between touching ones) before the run counts as not spoken."""
SEGMENT_WORDS_MAX = 40
"""Words of one segment at most: a sentence longer is cut, so a correction or a
`segments` cue stays a readable size."""
SENTENCE_END = re.compile(r"[.!?…。！？][\"'»”’)\]]*$")


@attrs.frozen
class Timed:
    word: str
    start: float
    end: float
    timing: str
    probability: float | None = None


def normalized(word: str) -> str:
    """A word as both texts are compared: lower case, letters and digits only, ё as е."""
    decomposed = unicodedata.normalize("NFKC", word).casefold().replace("ё", "е")
    return "".join(c for c in decomposed if c.isalnum())


def recognized_words(transcript: Transcript) -> list[dict[str, Any]]:
    """The recognizer's words in order, each as one or more tokens of its text."""
    out = []
    for s in transcript.segments:
        for w in s.get("words") or ():
            for piece in str(w.get("word", "")).split():
                out.append({**w, "word": piece})
    return out


def align_words(owner: Sequence[str], heard: Sequence[dict[str, Any]]) -> list[Timed]:
    """The owner's words, each timed by the recognized `heard` words (start, end, word,
    probability); see the module's text."""
    keys = [normalized(w) for w in owner]
    heard_keys = [normalized(str(w["word"])) for w in heard]
    matcher = difflib.SequenceMatcher(None, keys, heard_keys, autojunk=False)
    if not any(block.size for block in matcher.get_matching_blocks()):
        # Nothing in common (another text, another language): no time is a guess worth
        # giving.
        return [Timed(w, 0.0, 0.0, UNPLACED) for w in owner]
    out: list[Timed | None] = [None] * len(owner)
    # Anchors: (owner index, heard index) of every matched word, with sentinels.
    prev_o, prev_h = 0, 0
    for block in matcher.get_matching_blocks():
        _fill_gap(out, owner, heard, prev_o, block.a, prev_h, block.b)
        for k in range(block.size):
            w = heard[block.b + k]
            # An empty key (a lone dash) matches only by accident: timed as a guess.
            if keys[block.a + k]:
                out[block.a + k] = Timed(
                    owner[block.a + k], w["start"], w["end"], HEARD, w.get("probability")
                )
        prev_o, prev_h = block.a + block.size, block.b + block.size
    _place_rest(out, owner)
    return [t for t in out if t is not None]


def _fill_gap(
    out: list[Timed | None],
    owner: Sequence[str],
    heard: Sequence[dict[str, Any]],
    o1: int,
    o2: int,
    h1: int,
    h2: int,
) -> None:
    """Times for owner[o1:o2] from heard[h1:h2], which lie between the same matched
    neighbours (or the ends); runs left None are placed by `_place_rest`."""
    n = o2 - o1
    if n == 0:
        return
    if n == h2 - h1:
        for k in range(n):
            w = heard[h1 + k]
            out[o1 + k] = Timed(owner[o1 + k], w["start"], w["end"], HEARD, w.get("probability"))
        return
    if h2 > h1:
        start, end = float(heard[h1]["start"]), float(heard[h2 - 1]["end"])
        if n > UNPLACED_RUN and end - start < n * MIN_WORD_S:
            return
        out[o1:o2] = _spread(owner[o1:o2], start, end)


def _spread(words: Sequence[str], start: float, end: float) -> list[Timed | None]:
    """`words` over start..end in proportion to their length (a space counted for each)."""
    total = sum(len(w) + 1 for w in words) or 1
    out: list[Timed | None] = []
    at = 0
    for w in words:
        a = start + (end - start) * at / total
        at += len(w) + 1
        out.append(Timed(w, round(a, 3), round(start + (end - start) * at / total, 3), GUESSED))
    return out


def _place_rest(out: list[Timed | None], owner: Sequence[str]) -> None:
    """The runs no recognized word lies beside: spread between their timed neighbours
    where there is room, else sharing the previous word's time (a few), else unplaced."""
    i = 0
    while i < len(out):
        if out[i] is not None:
            i += 1
            continue
        j = i
        while j < len(out) and out[j] is None:
            j += 1
        before = out[i - 1] if i > 0 else None
        after = out[j] if j < len(out) else None
        run = owner[i:j]
        if before is None and after is None:
            out[i:j] = [Timed(w, 0.0, 0.0, UNPLACED) for w in run]
        elif before is None or after is None:
            # Before the first matched word or after the last, with no speech heard
            # there: the run is not in the audio as far as anything can tell.
            at = after.start if after is not None else before.end  # type: ignore[union-attr]
            out[i:j] = [Timed(w, at, at, UNPLACED) for w in run]
        elif after.start - before.end >= len(run) * MIN_WORD_S:
            out[i:j] = _spread(run, before.end, after.start)
        elif len(run) <= UNPLACED_RUN:
            # A dropped short word between two that touch: it shares the previous
            # word's time (so the times stay in order and the cues whole).
            shared = _spread([before.word, *run], before.start, max(before.end, after.start))
            first = shared[0]
            assert first is not None
            out[i - 1] = attrs.evolve(before, end=first.end)
            out[i:j] = shared[1:]
        else:
            out[i:j] = [Timed(w, before.end, before.end, UNPLACED) for w in run]
        i = j


def sentences(words: Sequence[Timed]) -> list[list[Timed]]:
    """The words cut after each sentence's end, and every `SEGMENT_WORDS_MAX` words."""
    out: list[list[Timed]] = [[]]
    for w in words:
        out[-1].append(w)
        if SENTENCE_END.search(w.word) or len(out[-1]) >= SEGMENT_WORDS_MAX:
            out.append([])
    return [s for s in out if s]


def align(transcript: Transcript, text: str) -> Transcript:
    """The owner's `text` as a transcript timed by the recognized `transcript`: the same
    language and model, the owner's words and sentences, every word in order."""
    words = align_words(text.split(), recognized_words(transcript))
    segments: list[dict[str, Any]] = []
    for run in sentences(words):
        timed = [t for t in run if t.timing != UNPLACED] or run
        segments.append(
            {
                "start": min(t.start for t in timed),
                "end": max(t.end for t in timed),
                "text": " ".join(t.word for t in run),
                "words": [
                    {
                        "start": t.start,
                        "end": t.end,
                        "word": " " + t.word,
                        "probability": t.probability,
                        "timing": t.timing,
                    }
                    for t in run
                ],
            }
        )
    return Transcript(
        " ".join(s["text"] for s in segments), segments, transcript.language, transcript.model
    )
