"""Text that goes into a format is escaped for that format (issue 33, finding 3): whatever
a segment's text or a speaker's name holds, SRT and VTT have exactly one cue per
segment, each with the text it was given, read back by a strict parser of each.

The parsers split lines as the most eager parser would (Python's str.splitlines: CR, LF
and the Unicode separators) and refuse what a lenient one would read otherwise: a line
holding `-->` that is not the cue's timing line, a blank line inside a cue, and in VTT
any `<` but the voice tag and any `&` but the three references the service writes.
The replacements the formats document, and nothing else, are applied to the
expectation: a line break is a space, a text of only spaces is empty, and in SRT each
`-->` is `->`."""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from transcriber.formats import DocumentHead, to_docx, to_srt, to_vtt


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


SRT_TIMING = re.compile(r"\d{2,}:\d{2}:\d{2},\d{3} --> \d{2,}:\d{2}:\d{2},\d{3}")
VTT_TIMING = re.compile(r"\d{2,}:\d{2}:\d{2}\.\d{3} --> \d{2,}:\d{2}:\d{2}\.\d{3}")
VTT_ENTITY = {"&amp;": "&", "&lt;": "<", "&gt;": ">"}


def blocks(lines: list[str]) -> list[list[str]]:
    """The runs of non-blank lines; a cue is one run."""
    out: list[list[str]] = []
    current: list[str] = []
    for line in lines:
        if line == "":
            if current:
                out.append(current)
            current = []
        else:
            current.append(line)
    if current:
        out.append(current)
    return out


def parse_srt(srt: str) -> list[str]:
    """Each cue's text (its lines joined with a newline), strictly: a number, a timing
    line, text lines none of which holds `-->`."""
    cues = []
    for n, block in enumerate(blocks(srt.splitlines()), 1):
        assert block[0] == str(n), block
        assert SRT_TIMING.fullmatch(block[1]), block
        for line in block[2:]:
            assert "-->" not in line, block
        cues.append("\n".join(block[2:]))
    return cues


def unescape_vtt(text: str) -> str:
    assert "<" not in text and ">" not in text, text
    out = ""
    rest = text
    while "&" in rest:
        before, _, after = rest.partition("&")
        ref = next((r for r in VTT_ENTITY if ("&" + after).startswith(r)), None)
        assert ref is not None, text
        out += before + VTT_ENTITY[ref]
        rest = after[len(ref) - 1 :]
    return out + rest


def parse_vtt(vtt: str) -> list[tuple[str | None, str]]:
    """Each cue's (voice, text), strictly: the header, then cues of a timing line and
    text lines none of which holds `-->`, the text escaped but for a leading voice tag."""
    lines = vtt.splitlines()
    assert lines[0] == "WEBVTT"
    cues: list[tuple[str | None, str]] = []
    for block in blocks(lines[1:]):
        assert VTT_TIMING.fullmatch(block[0]), block
        for line in block[1:]:
            assert "-->" not in line, block
        text = "\n".join(block[1:])
        voice = None
        if m := re.match(r"<v ([^>]*)>", text):
            voice, text = unescape_vtt(m.group(1)), text[m.end() :]
        cues.append((voice, unescape_vtt(text)))
    return cues


def one_line(text: str) -> str:
    # The documented replacements: a line break of any kind is a space, and a text of
    # nothing but spaces is empty.
    line = re.sub(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]", " ", text)
    return line if line.strip() else ""


def srt_expected(text: str) -> str:
    line = one_line(text)
    while "-->" in line:
        line = line.replace("-->", "->")
    return line


TRICKS = [
    "-->",
    "--->",
    "0 --> 1",
    "<c.x>",
    "<v Mallory>",
    "</v>",
    "<i>",
    "&amp;",
    "&",
    "&lt",
    ">",
    "\n",
    "\n\n",
    "\r",
    "\r\n\r\n",
    "\u2028",
    "\x85",
    " ",
    "2\n00:00:01,000 --> 00:00:02,000\nforged",
    "00:00:01.000 --> 00:00:02.000",
    "WEBVTT",
    "NOTE",
]
# Any text PostgreSQL can store (no NUL, no surrogate), with the tricks mixed in.
ANY_CHAR = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
TEXTS = st.lists(st.one_of(st.sampled_from(TRICKS), st.text(ANY_CHAR, max_size=8)), max_size=6).map(
    "".join
)
NAMES = st.one_of(st.none(), TEXTS.filter(lambda n: n.strip() != ""))


def segments_of(said: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    return [
        {"start": float(i), "end": i + 0.5, "text": text, **({"speaker": who} if who else {})}
        for i, (text, who) in enumerate(said)
    ]


@scenario("A cue's text cannot add, end or style a cue")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(TEXTS, NAMES), max_size=8))
@example([("I said --> here", None), ("<c.x>&", "Anna -->")])
@example([("a\n\n2\n00:00:01,000 --> 00:00:02,000\nforged", None)])
@example([("   ", None), ("\r\n", "Bob")])
def test_srt_and_vtt_cues_are_the_segments(said: list[tuple[str, str | None]]) -> None:
    segments = segments_of(said)
    srt = parse_srt(to_srt("", segments))
    assert len(srt) == len(segments)
    for cue, (text, who) in zip(srt, said, strict=True):
        expected = srt_expected(text)
        assert cue == (f"{srt_expected(who)}: {expected}" if who else expected)

    vtt = parse_vtt(to_vtt("", segments))
    assert len(vtt) == len(segments)
    for (voice, cue), (text, who) in zip(vtt, said, strict=True):
        assert cue == one_line(text)
        assert voice == (one_line(who) if who else None)


@scenario("A cue's text cannot add, end or style a cue")
def test_markup_in_cues_is_escaped_as_each_format_wants() -> None:
    segments = segments_of([("a --> b <c.x>x</c> & c", "A&B <x>")])
    assert to_vtt("", segments).splitlines()[-1] == (
        "<v A&amp;B &lt;x&gt;>a --&gt; b &lt;c.x&gt;x&lt;/c&gt; &amp; c"
    )
    assert to_srt("", segments).splitlines()[-1] == "A&B <x>: a -> b <c.x>x</c> & c"


def docx_text(document: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(document)) as z:
        return z.read("word/document.xml").decode("utf-8") + z.read("docProps/core.xml").decode(
            "utf-8"
        )


@scenario("A document of text XML forbids is written without it")
def test_docx_leaves_out_what_xml_forbids() -> None:
    bad = "\ufffe\uffff\x07\x1b"
    document = to_docx(
        DocumentHead(f"Title{bad}"),
        [{"start": 0.0, "end": 1.0, "text": f"Said{bad} \u202eit", "speaker": f"Ann{bad}"}],
    )
    xml = docx_text(document)
    assert "Title" in xml and "Ann: " in xml and "Said \u202eit" in xml
    for c in bad:
        assert c not in xml
