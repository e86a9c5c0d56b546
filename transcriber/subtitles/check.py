"""A subtitle file checked against a profile: every rule each cue breaks, with the
cue's number. The files are read leniently (a byte-order mark, CRLF, missing or wrong
cue numbers, `.` or `,` before the milliseconds, hours left out, VTT's header, notes,
styles and cue settings) but a cue is what players take for one: a timing line, then
text up to a blank line.

What a reader sees is what is counted: tags (`<i>`, VTT's `<v Name>`, `{\\an8}`) are
not shown, VTT's character references are one character each, and an SRT speaker's
`Name: ` is shown. The reading speed is the cue's characters (line breaks not counted)
over its time.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import attrs

from transcriber.subtitles.profiles import Profile

TIME = r"(?:(\d+):)?(\d{1,2}):(\d{1,2})[.,](\d{1,3})"
TIMING = re.compile(rf"^\s*{TIME}\s*-->\s*{TIME}")
TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")
TOLERANCE_S = 0.0005
"""Times in a file are whole milliseconds: a limit met to the millisecond is met."""

RULES = ("line_length", "line_count", "min_duration", "max_duration", "gap", "reading_speed")


class NotSubtitles(ValueError):
    """The text has no cue a player would show."""


@attrs.frozen
class ParsedCue:
    number: int
    start: float
    end: float
    lines: tuple[str, ...]
    """The lines as shown: tags out, character references resolved."""


@attrs.frozen
class Broken:
    cue: int
    rule: str
    detail: str

    def as_dict(self) -> dict[str, object]:
        return {"cue": self.cue, "rule": self.rule, "detail": self.detail}


def _seconds(h: str | None, m: str, s: str, ms: str) -> float:
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000


def shown(line: str, vtt: bool) -> str:
    text = TAG.sub("", line)
    return html.unescape(text) if vtt else text


def parse(text: str) -> list[ParsedCue]:
    """The cues of an SRT or VTT file's text, numbered from 1 in the file's order; a
    block without a timing line (VTT's header, NOTE, STYLE, REGION) is not a cue."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    vtt = text.startswith("WEBVTT")
    cues: list[ParsedCue] = []
    for block in re.split(r"\n[ \t]*\n", text):
        lines = block.strip("\n").split("\n")
        at = next((i for i, line in enumerate(lines) if TIMING.match(line)), None)
        if at is None or at > 1:
            continue
        m = TIMING.match(lines[at])
        assert m is not None
        g = m.groups()
        shown_lines = tuple(s for s in (shown(x, vtt).strip() for x in lines[at + 1 :]) if s)
        cues.append(ParsedCue(len(cues) + 1, _seconds(*g[:4]), _seconds(*g[4:]), shown_lines))
    if not cues and text.strip():
        raise NotSubtitles("no cue found: not an SRT or VTT file")
    return cues


def check(cues: Sequence[ParsedCue], profile: Profile) -> list[Broken]:
    """Every rule of `profile` each cue breaks, in cue order."""
    out: list[Broken] = []
    for i, c in enumerate(cues):
        n = c.number
        for k, line in enumerate(c.lines, 1):
            if len(line) > profile.max_chars:
                out.append(
                    Broken(n, "line_length", f"line {k} has {len(line)} characters, "
                           f"at most {profile.max_chars}")
                )  # fmt: skip
        if len(c.lines) > profile.max_lines:
            out.append(
                Broken(n, "line_count", f"{len(c.lines)} lines, at most {profile.max_lines}")
            )
        d = c.end - c.start
        if d < profile.min_duration_s - TOLERANCE_S:
            out.append(
                Broken(n, "min_duration", f"{d:.3f} s, at least {profile.min_duration_s:.3f} s")
            )
        if d > profile.max_duration_s + TOLERANCE_S:
            out.append(
                Broken(n, "max_duration", f"{d:.3f} s, at most {profile.max_duration_s:.3f} s")
            )
        if i + 1 < len(cues):
            gap = cues[i + 1].start - c.end
            if gap < profile.min_gap_s - TOLERANCE_S:
                out.append(
                    Broken(n, "gap", f"{gap:.3f} s to the next cue, at least "
                           f"{profile.min_gap_s:.3f} s")
                )  # fmt: skip
        chars = sum(len(line) for line in c.lines)
        if profile.max_cps and chars:
            cps = chars / d if d > 0 else float("inf")
            if cps > profile.max_cps + 0.05:
                out.append(
                    Broken(n, "reading_speed", f"{cps:.1f} characters a second, at most "
                           f"{profile.max_cps:g}")
                )  # fmt: skip
    return out


def report(cues: Sequence[ParsedCue], profile: Profile) -> dict[str, object]:
    """The checker's report as data: the profile, how many cues, each broken rule, and
    how many cues break each rule."""
    broken = check(cues, profile)
    counts = {rule: len({b.cue for b in broken if b.rule == rule}) for rule in RULES}
    return {
        "profile": profile.name,
        "cues": len(cues),
        "ok": not broken,
        "counts": counts,
        "broken": [b.as_dict() for b in broken],
    }
