"""A transcript's renderings, all built from the stored segments. Segments that carry a
`speaker` (a diarized record's, transcriber.audio.speakers.assign) show it: the text as
paragraphs per speaker, SRT cues prefixed with the name, VTT voice tags, and in JSON each
speaker's total speaking time."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

FORMATS = ("txt", "srt", "vtt", "json")


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


def _said(s: dict[str, Any]) -> str:
    return f"{s['speaker']}: {s['text']}" if s.get("speaker") else s["text"]


def _voice(s: dict[str, Any]) -> str:
    # A cue's voice tag names who speaks it; `>` and `&` would end or break the tag.
    if not s.get("speaker"):
        return str(s["text"])
    name = s["speaker"].replace("&", "&amp;").replace(">", "&gt;")
    return f"<v {name}>{s['text']}"


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
