"""A transcript's renderings, all built from the stored segments."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

FORMATS = ("txt", "srt", "vtt", "json")


def timestamp(seconds: float, decimal: str) -> str:
    """HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm (VTT); hours grow past 99 if they must."""
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def to_text(text: str, segments: Sequence[dict[str, Any]]) -> str:
    return text.strip() + "\n"


def to_srt(text: str, segments: Sequence[dict[str, Any]]) -> str:
    cues = [
        f"{i}\n{timestamp(s['start'], ',')} --> {timestamp(s['end'], ',')}\n{s['text']}\n"
        for i, s in enumerate(segments, 1)
    ]
    return "\n".join(cues)


def to_vtt(text: str, segments: Sequence[dict[str, Any]]) -> str:
    cues = [
        f"{timestamp(s['start'], '.')} --> {timestamp(s['end'], '.')}\n{s['text']}\n"
        for s in segments
    ]
    return "WEBVTT\n\n" + "\n".join(cues)


def to_json(text: str, segments: Sequence[dict[str, Any]], **extra: Any) -> str:
    return (
        json.dumps(
            {**extra, "text": text, "segments": list(segments)}, ensure_ascii=False, indent=2
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
