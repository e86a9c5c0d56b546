"""A transcript's renderings, all built from the stored segments: the plain and
subtitle formats (txt, srt, vtt, json) and the documents (Markdown, DOCX) with a
heading, the date and duration, and paragraphs with their timecodes and speakers.

Segments that carry a `speaker` (a diarized record's, transcriber.audio.speakers.assign)
show it: the text as paragraphs per speaker, SRT cues prefixed with the name, VTT voice
tags, in JSON each speaker's total speaking time, and in the documents a paragraph
where the speaker changes, named. Without speakers a document's paragraph ends at a
pause (PARAGRAPH_PAUSE_S) or when it has run PARAGRAPH_MAX_S, so a long recording reads
as paragraphs, not as a list of sentences.

Text goes into each format escaped for it, whoever wrote it: a subtitle cue's text is
one line without `-->` (VTT's `&`, `<`, `>` as character references), Markdown's markup
characters are backslashed, DOCX leaves out what XML forbids, JSON holds it as data.

DOCX is written with python-docx: the one maintained library that writes real Word
files (styles, runs, core properties) from Python without a converter process (pandoc,
LibreOffice) or a template to ship; its only dependency is lxml.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

FORMATS = ("txt", "srt", "vtt", "json")
DOCUMENTS = ("md", "docx")
PARAGRAPH_PAUSE_S = 2.0
PARAGRAPH_MAX_S = 60.0


def timestamp(seconds: float, decimal: str) -> str:
    """HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (VTT); hours grow past 99 if they must."""
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def diarized(segments: Sequence[dict[str, Any]]) -> bool:
    return any(s.get("speaker") for s in segments)


def speakers_of(
    segments: Sequence[dict[str, Any]], labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Each speaker in order of first speech, with their total speaking time (seconds);
    with `labels` (the found label by shown name) also the label the owner renames."""
    total: dict[str, float] = {}
    for s in segments:
        if s.get("speaker"):
            total[s["speaker"]] = total.get(s["speaker"], 0.0) + s["end"] - s["start"]
    return [
        {
            "name": k,
            **({"label": labels[k]} if labels and k in labels else {}),
            "speaking_s": round(v, 3),
        }
        for k, v in total.items()
    ]


def to_text(text: str, segments: Sequence[dict[str, Any]]) -> str:
    if not diarized(segments):
        return text.strip() + "\n"
    paragraphs: list[tuple[str | None, list[str]]] = []
    for s in segments:
        if not s["text"].strip():
            continue
        if paragraphs and paragraphs[-1][0] == s.get("speaker"):
            paragraphs[-1][1].append(s["text"].strip())
        else:
            paragraphs.append((s.get("speaker"), [s["text"].strip()]))
    return (
        "\n\n".join(
            f"{who}: {' '.join(said)}" if who else " ".join(said) for who, said in paragraphs
        )
        + "\n"
    )


# --- subtitles --------------------------------------------------------------------------
#
# A cue is its timing line, then its text up to a blank line; a line holding `-->` is a
# timing line to every parser, and in VTT `<` opens a tag and `&` a character reference.
# So whatever a segment's text or a speaker's name holds (the recognizer's text, the
# owner's corrections and names, stored before any of today's checks), each cue's text
# is one line, `-->` never appears in it, and VTT's markup characters are escaped.
# These are the cues of the `segments` profile; transcriber.subtitles builds the other
# profiles' cues of a few lines, each line through these same functions.

LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
"""Every line break a subtitle parser might split on (CR and LF, the ones Python's
str.splitlines knows besides): each becomes a space in a cue."""


def cue_line(text: str) -> str:
    """`text` as one line of a cue: each line break a space, and a text of nothing but
    spaces empty (a line of spaces is blank to many SRT parsers, and would end the cue)."""
    line = LINE_BREAK.sub(" ", text)
    return line if line.strip() else ""


def srt_text(text: str) -> str:
    """A cue's text for SRT, which has no escapes: one line, and each `-->` written
    `->` (again until none is left, so `--->` cannot leave one behind). `->` is the same
    arrow in plain ASCII, which every player's font has; the JSON and the documents keep
    the text as it is. `<` and `&` stay: SRT's few tags (`<i>`, `<b>`, `<font>`) style a
    cue, but cannot add or end one."""
    line = cue_line(text)
    while "-->" in line:
        line = line.replace("-->", "->")
    return line


def vtt_text(text: str) -> str:
    """A cue's text (or a voice tag's name) for VTT: one line, and `&`, `<`, `>` as the
    character references WebVTT defines (`&amp;`, `&lt;`, `&gt;`): no tag can open, and
    with `>` escaped no `-->` is left."""
    return cue_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _said(s: dict[str, Any]) -> str:
    text = srt_text(str(s["text"]))
    return f"{srt_text(s['speaker'])}: {text}" if s.get("speaker") else text


def _voice(s: dict[str, Any]) -> str:
    # A cue's voice tag names who speaks it, escaped as the text is (`>` would end it).
    text = vtt_text(str(s["text"]))
    return f"<v {vtt_text(s['speaker'])}>{text}" if s.get("speaker") else text


def to_srt(text: str, segments: Sequence[dict[str, Any]]) -> str:
    cues = [
        f"{i}\n{timestamp(s['start'], ',')} --> {timestamp(s['end'], ',')}\n{_said(s)}\n"
        for i, s in enumerate(segments, 1)
    ]
    return "\n".join(cues)


def to_vtt(text: str, segments: Sequence[dict[str, Any]]) -> str:
    cues = [
        f"{timestamp(s['start'], '.')} --> {timestamp(s['end'], '.')}\n{_voice(s)}\n"
        for s in segments
    ]
    return "WEBVTT\n\n" + "\n".join(cues)


def to_json(
    text: str,
    segments: Sequence[dict[str, Any]],
    labels: Mapping[str, str] | None = None,
    **extra: Any,
) -> str:
    speakers = {"speakers": speakers_of(segments, labels)} if diarized(segments) else {}
    return (
        json.dumps(
            {**extra, **speakers, "text": text, "segments": list(segments)},
            ensure_ascii=False,
            indent=2,
        )
        + "\n"
    )


def render(fmt: str, text: str, segments: Sequence[dict[str, Any]], **extra: Any) -> str:
    if fmt == "txt":
        return to_text(text, segments)
    if fmt == "srt":
        return to_srt(text, segments)
    if fmt == "vtt":
        return to_vtt(text, segments)
    if fmt == "json":
        return to_json(text, segments, **extra)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


# --- documents -------------------------------------------------------------------------


@attrs.frozen
class DocumentHead:
    """What a document says before its text; `words`, how its line of facts names the
    duration and the language (English, for the API; the page gives its reader's)."""

    title: str
    created_at: dt.datetime | None = None
    duration_s: float | None = None
    language: str | None = None
    words: tuple[str, str] = ("duration", "language")


@attrs.frozen
class Paragraph:
    start: float
    speaker: str | None
    text: str


def paragraphs(segments: Sequence[dict[str, Any]]) -> list[Paragraph]:
    """The segments gathered into paragraphs: a new one where the speaker changes, and
    (within one speaker, or without speakers) after a pause of PARAGRAPH_PAUSE_S or once
    it has run PARAGRAPH_MAX_S. Empty segments are left out."""
    out: list[Paragraph] = []
    start = end = 0.0
    speaker: str | None = None
    words: list[str] = []
    for s in segments:
        text = str(s.get("text", "")).strip()
        if not text:
            continue
        who = s.get("speaker") or None
        begins = float(s.get("start", 0.0))
        if words and (
            who != speaker or begins - end >= PARAGRAPH_PAUSE_S or begins - start >= PARAGRAPH_MAX_S
        ):
            out.append(Paragraph(start, speaker, " ".join(words)))
            words = []
        if not words:
            start, speaker = begins, who
        words.append(text)
        end = float(s.get("end", begins))
    if words:
        out.append(Paragraph(start, speaker, " ".join(words)))
    return out


def timecode(seconds: float) -> str:
    """m:ss, or h:mm:ss past an hour: where a paragraph starts."""
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def head_line(head: DocumentHead) -> str:
    parts = []
    if head.created_at is not None:
        parts.append(head.created_at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))
    if head.duration_s is not None:
        parts.append(f"{head.words[0]} {timecode(head.duration_s)}")
    if head.language:
        parts.append(f"{head.words[1]} {head.language}")
    return " · ".join(parts)


MD_LINE_BREAKS = re.compile(r"[ \t]*[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+[ \t]*")
"""Line breaks inside a text (an owner's correction may hold them): each paragraph is one
line, so a break would start a line of the text's own, where `---` is a rule (or makes
the line above a heading), `1.` or `-` a list and four spaces code."""


def _md_escape(text: str) -> str:
    # Text that would read as Markdown markup (a leading #, list markers, emphasis) stays
    # text: its own line breaks are spaces (MD_LINE_BREAKS), so it never starts a line.
    text = MD_LINE_BREAKS.sub(" ", text)
    for c in "\\`*_[]<>#|":
        text = text.replace(c, "\\" + c)
    return text


def to_markdown(head: DocumentHead, segments: Sequence[dict[str, Any]]) -> str:
    lines = [f"# {_md_escape(head.title)}", ""]
    if line := head_line(head):
        lines += [f"*{line}*", ""]
    for p in paragraphs(segments):
        who = f" **{_md_escape(p.speaker)}:**" if p.speaker else ""
        lines += [f"**[{timecode(p.start)}]**{who} {_md_escape(p.text)}", ""]
    return "\n".join(lines).rstrip() + "\n"


XML_FORBIDDEN = re.compile(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""What XML 1.0 may not hold (its `Char` production): C0 controls but tab and line
breaks, surrogates, U+FFFE and U+FFFF."""


def xml_text(text: str) -> str:
    """`text` without the characters XML 1.0 forbids. Owner fields refuse them
    (transcriber.records.owner_text), but a text stored before that, or the recognizer's,
    may hold one, and lxml refuses to write it: the document leaves it out rather than
    fail."""
    return XML_FORBIDDEN.sub("", text)


def to_docx(head: DocumentHead, segments: Sequence[dict[str, Any]]) -> bytes:
    """A Word document: the title as its heading (and core property), the date,
    duration and language under it, then a paragraph per `paragraphs` with its
    timecode (and speaker) in bold. Every text goes through `xml_text`."""
    import docx  # python-docx; imported here, so the rest of the service never loads lxml

    document = docx.Document()
    title = xml_text(head.title)
    document.core_properties.title = title
    if head.created_at is not None:
        document.core_properties.created = head.created_at
    document.add_heading(title, level=1)
    if line := head_line(head):
        document.add_paragraph().add_run(xml_text(line)).italic = True
    for p in paragraphs(segments):
        para = document.add_paragraph()
        para.add_run(f"[{timecode(p.start)}] ").bold = True
        if p.speaker:
            para.add_run(f"{xml_text(p.speaker)}: ").bold = True
        para.add_run(xml_text(p.text))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
