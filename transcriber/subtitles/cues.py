"""Cues built from a transcript's segments by a profile's rules, and written as SRT or
VTT with the escaping of `transcriber.formats` (each line one line of text, no `-->`,
VTT's markup characters escaped).

A cue never spans two segments: a segment is what the owner corrects and what a
speaker is given, so a speaker's change always begins a cue, and a correction changes
only its own segment's cues. Within a segment the words are cut into cues where the
cuts read best (`lines.break_cost`) with each cue within the profile's lines and its
maximum duration, as few cues as that allows.

The times come from the recognizer's word times. A segment without them (a corrected
segment, whose words are the owner's, or a transcript a remote recognizer gave without
words) has its text's words spread over the segment's time in proportion to their
length. Then each cue is held for its minimum duration and its reading speed where the
silence after it allows, never closer than the profile's gap to the next cue; what the
speech does not allow stays, and the checker reports it.

Every word of the segments' texts is in the cues, once, in order (the property tests
of tests/unit/test_subtitles.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from transcriber.formats import srt_text, timestamp, vtt_text
from transcriber.subtitles.lines import break_cost, layout, width
from transcriber.subtitles.profiles import Profile

CUE_COST = 1.0
"""What one more cue costs against a worse cut: a cut after a sentence's end costs 0, an
ordinary one 1, one after an article NEVER."""
CUT_WEIGHT = 2.0
"""A cut between cues weighs more than one between lines: a reader holds a line break in
view, not a cut."""
SHORT_CUE_CHARS = 12
SHORT_CUE_COST = 0.5
"""A cue this short beside a longer one reads as a flash: a little against it."""


@attrs.frozen
class Word:
    text: str
    start: float
    end: float


@attrs.frozen
class Cue:
    start: float
    end: float
    lines: tuple[str, ...]
    speaker: str | None = None

    @property
    def words(self) -> list[str]:
        return [w for line in self.lines for w in line.split()]


def timed_words(segment: Mapping[str, Any]) -> list[Word]:
    """The words of the segment's text with their times: the recognizer's where its words
    are the text's, else spread over the segment's time by their length."""
    tokens = str(segment.get("text", "")).split()
    start = float(segment.get("start", 0.0))
    end = max(start, float(segment.get("end", start)))
    timed = [
        Word(piece, float(w["start"]), float(w["end"]))
        for w in segment.get("words") or ()
        for piece in str(w.get("word", "")).split()
    ]
    if tokens and [w.text for w in timed] == tokens and not segment.get("corrected"):
        return timed
    total = (sum(len(t) for t in tokens) + len(tokens) - 1) or 1
    out, at = [], 0
    for t in tokens:
        out.append(
            Word(
                t, start + (end - start) * at / total, start + (end - start) * (at + len(t)) / total
            )
        )
        at += len(t) + 1
    return out


def label_width(speaker: str | None) -> int:
    """Characters the speaker's name takes on a cue's first line (`Name: ` in SRT; VTT's
    voice tag is not shown, but the cue is laid out the same for both)."""
    return len(speaker) + 2 if speaker else 0


def chunks(words: Sequence[Word], profile: Profile, lead: int) -> list[list[Word]]:
    """The words cut into cues: each within the profile's lines and maximum duration (a
    single word always is a cue), the cuts' and cues' costs least."""
    texts = [w.text for w in words]
    n = len(words)
    best: list[tuple[float, int]] = [(0.0, 0)] + [(math.inf, 0)] * n
    for i in range(n):
        if best[i][0] == math.inf:
            continue
        for j in range(i + 1, n + 1):
            if j > i + 1 and (
                width(texts[i:j]) + lead > profile.max_chars * profile.max_lines
                or words[j - 1].end - words[i].start > profile.max_duration_s
            ):
                break
            laid = layout(texts[i:j], profile.max_chars, profile.max_lines, lead)
            if laid is None:
                continue
            cost = best[i][0] + CUE_COST + laid[1] * 0.5
            if j < n:
                cost += CUT_WEIGHT * break_cost(texts[j - 1], texts[j])
            if width(texts[i:j]) < SHORT_CUE_CHARS and n > j - i:
                cost += SHORT_CUE_COST
            if cost < best[j][0]:
                best[j] = (cost, i)
    cuts, j = [], n
    while j > 0:
        cuts.append(j)
        j = best[j][1]
    bounds = [0, *reversed(cuts)]
    return [list(words[a:b]) for a, b in itertools.pairwise(bounds)]


def build(segments: Sequence[Mapping[str, Any]], profile: Profile) -> list[Cue]:
    """The cues of the segments by `profile`: laid out, then timed (`timed`)."""
    raw: list[Cue] = []
    for s in segments:
        words = timed_words(s)
        if not words:
            continue
        speaker = s.get("speaker") or None
        lead = label_width(speaker)
        for chunk in chunks(words, profile, lead):
            laid = layout([w.text for w in chunk], profile.max_chars, profile.max_lines, lead)
            lines = laid[0] if laid else [" ".join(w.text for w in chunk)]
            raw.append(Cue(chunk[0].start, chunk[-1].end, tuple(lines), speaker))
    return timed(raw, profile)


def shown_chars(cue: Cue) -> int:
    return sum(len(line) for line in cue.lines) + label_width(cue.speaker)


def timed(cues: Sequence[Cue], profile: Profile) -> list[Cue]:
    """Each cue held for its minimum duration and reading speed into the silence after
    it, up to its maximum duration and the gap before the next; a cue that runs into
    the next one's gap is ended there. Where that leaves it less than its minimum, the
    next cue starts later, as far as the next keeps its own minimum. Times are whole
    milliseconds, as the files write them."""
    gap = math.ceil(profile.min_gap_s * 1000) / 1000
    out: list[Cue] = []
    starts = [c.start for c in cues]
    for i, c in enumerate(cues):
        start = starts[i]
        if out and start < out[-1].end + gap:
            start = out[-1].end + gap
        needed = profile.min_duration_s
        if profile.max_cps:
            needed = max(needed, shown_chars(c) / profile.max_cps)
        end = max(c.end, min(start + needed, start + profile.max_duration_s))
        if i + 1 < len(cues):
            # No room for the minimum duration (the words' times run together, or the
            # recognizer gave a word no time): the next cue starts later, as long as it
            # keeps its own minimum; reading speed never moves a cue.
            shortest = start + profile.min_duration_s
            if starts[i + 1] - gap < shortest:
                later = min(shortest + gap, cues[i + 1].end - profile.min_duration_s)
                starts[i + 1] = max(starts[i + 1], later)
            end = min(end, starts[i + 1] - gap)
        end = max(end, start + 0.001)
        out.append(attrs.evolve(c, start=round(start, 3), end=round(end, 3)))
    return out


def cue_text_srt(cue: Cue) -> str:
    lines = [srt_text(line) for line in cue.lines]
    if cue.speaker:
        lines[0] = f"{srt_text(cue.speaker)}: {lines[0]}"
    return "\n".join(lines)


def cue_text_vtt(cue: Cue) -> str:
    lines = [vtt_text(line) for line in cue.lines]
    if cue.speaker:
        lines[0] = f"<v {vtt_text(cue.speaker)}>{lines[0]}"
    return "\n".join(lines)


def to_srt(cues: Sequence[Cue]) -> str:
    return "\n".join(
        f"{i}\n{timestamp(c.start, ',')} --> {timestamp(c.end, ',')}\n{cue_text_srt(c)}\n"
        for i, c in enumerate(cues, 1)
    )


def to_vtt(cues: Sequence[Cue]) -> str:
    return "WEBVTT\n\n" + "\n".join(
        f"{timestamp(c.start, '.')} --> {timestamp(c.end, '.')}\n{cue_text_vtt(c)}\n" for c in cues
    )


def render(fmt: str, segments: Sequence[Mapping[str, Any]], profile: Profile) -> str:
    """The segments' subtitles as `fmt` (srt or vtt) by `profile`."""
    cues = build(segments, profile)
    return to_srt(cues) if fmt == "srt" else to_vtt(cues)
