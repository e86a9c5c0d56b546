"""Transcript renderings: plain text, SRT, VTT and JSON from the stored segments."""

from __future__ import annotations

import json
import re

import pytest

from transcriber.formats import FORMATS, render, timestamp, to_json, to_srt, to_text, to_vtt


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("audio", title)


SEGMENTS = [
    {"start": 0.0, "end": 2.96, "text": "The quarterly meeting started early."},
    {"start": 3725.5, "end": 3727.25, "text": "Sales grew faster than expected."},
]
TEXT = "The quarterly meeting started early. Sales grew faster than expected."


@pytest.mark.parametrize(
    ("seconds", "srt", "vtt"),
    [
        (0.0, "00:00:00,000", "00:00:00.000"),
        (2.96, "00:00:02,960", "00:00:02.960"),
        (59.9996, "00:01:00,000", "00:01:00.000"),  # rounding carries into the minute
        (3599.9996, "01:00:00,000", "01:00:00.000"),  # and into the hour
        (3725.5, "01:02:05,500", "01:02:05.500"),
        (36000.001, "10:00:00,001", "10:00:00.001"),
        (360000.0, "100:00:00,000", "100:00:00.000"),  # hours grow past two digits
        (-0.02, "00:00:00,000", "00:00:00.000"),  # never negative
    ],
)
def test_timestamps(seconds: float, srt: str, vtt: str) -> None:
    assert timestamp(seconds, ",") == srt
    assert timestamp(seconds, ".") == vtt


@scenario("SRT and VTT timestamps are correct past one hour")
def test_srt_and_vtt_past_one_hour() -> None:
    assert to_srt(TEXT, SEGMENTS) == (
        "1\n"
        "00:00:00,000 --> 00:00:02,960\n"
        "The quarterly meeting started early.\n"
        "\n"
        "2\n"
        "01:02:05,500 --> 01:02:07,250\n"
        "Sales grew faster than expected.\n"
    )
    assert to_vtt(TEXT, SEGMENTS) == (
        "WEBVTT\n"
        "\n"
        "00:00:00.000 --> 00:00:02.960\n"
        "The quarterly meeting started early.\n"
        "\n"
        "01:02:05.500 --> 01:02:07.250\n"
        "Sales grew faster than expected.\n"
    )


def test_srt_uses_commas_and_vtt_dots_only() -> None:
    times = re.compile(r"\d\d:\d\d:\d\d[,.]\d{3}")
    assert all("," in t for t in times.findall(to_srt(TEXT, SEGMENTS)))
    assert all("." in t for t in times.findall(to_vtt(TEXT, SEGMENTS)))


@scenario("JSON holds the text, the segments and the details")
def test_json_holds_text_segments_and_details() -> None:
    doc = json.loads(
        to_json(TEXT, SEGMENTS, language="en", model="whisper-base", duration_s=3727.3)
    )
    assert doc == {
        "language": "en",
        "model": "whisper-base",
        "duration_s": 3727.3,
        "text": TEXT,
        "segments": SEGMENTS,
    }


def test_json_keeps_non_latin_text_readable() -> None:
    out = to_json("Сегодня мы обсудили план.", [])
    assert "Сегодня" in out and json.loads(out)["text"] == "Сегодня мы обсудили план."


def test_plain_text_is_the_text_with_one_newline() -> None:
    assert to_text("  " + TEXT + "\n\n", SEGMENTS) == TEXT + "\n"


def test_no_segments() -> None:
    assert to_srt("", []) == ""
    assert to_vtt("", []) == "WEBVTT\n\n"
    assert json.loads(to_json("", [])) == {"text": "", "segments": []}


def test_render_dispatches_and_refuses_unknown_formats() -> None:
    assert FORMATS == ("txt", "srt", "vtt", "json")
    assert render("srt", TEXT, SEGMENTS) == to_srt(TEXT, SEGMENTS)
    assert render("vtt", TEXT, SEGMENTS) == to_vtt(TEXT, SEGMENTS)
    assert render("txt", TEXT, SEGMENTS) == to_text(TEXT, SEGMENTS)
    assert json.loads(render("json", TEXT, SEGMENTS, id="x"))["id"] == "x"
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        render("pdf", TEXT, SEGMENTS)


def test_paragraphs_break_at_speakers_pauses_and_length() -> None:
    from transcriber.formats import PARAGRAPH_MAX_S, Paragraph, paragraphs

    segs = [
        {"start": 0.0, "end": 1.0, "text": "One."},
        {"start": 1.2, "end": 2.0, "text": " Two. "},
        {"start": 2.0, "end": 2.5, "text": "   "},  # empty: left out
        {"start": 5.0, "end": 6.0, "text": "After a pause."},
        {"start": 6.0, "end": 7.0, "text": "Ann speaks.", "speaker": "Ann"},
        {"start": 7.0, "end": 8.0, "text": "Still Ann.", "speaker": "Ann"},
        {"start": 7.0 + PARAGRAPH_MAX_S, "end": 68.0, "text": "Long on.", "speaker": "Ann"},
    ]
    assert paragraphs(segs) == [
        Paragraph(0.0, None, "One. Two."),
        Paragraph(5.0, None, "After a pause."),
        Paragraph(6.0, "Ann", "Ann speaks. Still Ann."),
        Paragraph(67.0, "Ann", "Long on."),
    ]


def test_markdown_keeps_markup_as_text() -> None:
    from transcriber.formats import DocumentHead, to_markdown

    md = to_markdown(
        DocumentHead("*Not* a # heading"), [{"start": 0, "end": 1, "text": "# 1. _x_"}]
    )
    assert md == "# \\*Not\\* a \\# heading\n\n**[0:00]** \\# 1. \\_x\\_\n"
    # An owner's correction with line breaks of its own starts no line: no rule, no
    # setext heading, no list, no code block.
    corrected = "one\n---\r\n1. two\u2028    three\x85- four"
    md = to_markdown(DocumentHead("T\n==="), [{"start": 0, "end": 1, "text": corrected}])
    assert md == "# T ===\n\n**[0:00]** one --- 1. two three - four\n"
