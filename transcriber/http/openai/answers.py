"""What an OpenAI client asked for, checked (`AudioRequest`), and the answer in the
shape it asked for (`answer`): OpenAI's json, text, srt, vtt, verbose_json or
diarized_json, made from what the record keeps. `routes` has the routes."""

from __future__ import annotations

import math
from typing import Any

import attrs
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from transcriber.audio.speakers import Turn, assign, label
from transcriber.formats import to_srt, to_text, to_vtt
from transcriber.languages import language_name
from transcriber.options import RecognitionOptions


@attrs.frozen
class AudioRequest:
    """What an OpenAI client asked for, checked."""

    task: str
    model: str
    language: str | None
    options: RecognitionOptions
    response_format: str
    granularities: frozenset[str]
    known: tuple[tuple[str, bytes], ...] = ()
    """Known speakers' names and reference clips (diarized_json names found speakers so)."""
    voices: list[tuple[str, Any]] = attrs.field(factory=list, eq=False)
    """Their voices (`speakers.reference_voices`), once taken."""
    stream: bool = False
    """The answer as OpenAI's server-sent events (`streamed`), not one body."""


def verbose(c: dict[str, Any], t: Any, asked: AudioRequest) -> dict[str, Any]:
    """OpenAI's verbose_json, from what the record keeps. What it does not keep
    (tokens, log probabilities, the temperature used) is null, not made up; `model`
    is the recognizer that made the transcript, whatever the request named."""
    segments = t["segments"]
    body: dict[str, Any] = {
        "task": asked.task,
        "language": language_name(t["language"]),
        "duration": c["duration_s"],
        "text": t["text"],
        "model": t["model"],
    }
    if not asked.granularities or "segment" in asked.granularities:
        body["segments"] = [
            {
                "id": i,
                "seek": None,
                "start": s["start"],
                "end": s["end"],
                "text": s["text"],
                "tokens": None,
                "temperature": None,
                "avg_logprob": None,
                "compression_ratio": None,
                "no_speech_prob": None,
            }
            for i, s in enumerate(segments)
        ]
    if "word" in asked.granularities:
        body["words"] = [
            {"word": w["word"].strip(), "start": w["start"], "end": w["end"]}
            for s in segments
            for w in s.get("words") or ()
        ]
    body["usage"] = usage(c)
    return body


class _Labels:
    """OpenAI labels speakers A, B, … in order of first speech, as the record's are;
    a known speaker (by the record's label) by their name instead."""

    def __init__(self, known: dict[str, str]) -> None:
        self.of = dict(known)
        self.letters = 0

    def __call__(self, speaker: str | None) -> str:
        key = speaker or "?"
        if key not in self.of:
            n = self.letters
            self.of[key] = chr(ord("A") + n) if n < 26 else f"S{n + 1}"
            self.letters += 1
        return self.of[key]


def diarized(c: dict[str, Any], t: Any, known: dict[int, str] | None = None) -> dict[str, Any]:
    """OpenAI's diarized_json (TranscriptionDiarized): segments of one speaker each, with
    `type`, `id`, `start`, `end`, `text` and `speaker` — a known speaker's name
    (`known`, by found speaker) or else a letter."""
    segments = t["segments"]
    if t.get("turns") is not None:
        segments = assign(segments, [Turn(*turn) for turn in t["turns"]])
    names = _Labels({label(n): name for n, name in (known or {}).items()})
    return {
        "task": "transcribe",
        "duration": c["duration_s"] or 0.0,
        "text": t["text"],
        "segments": [
            {
                "type": "transcript.text.segment",
                "id": f"seg_{i}",
                "start": s["start"],
                "end": s["end"],
                "text": s["text"],
                "speaker": names(s.get("speaker")),
            }
            for i, s in enumerate(segments)
        ],
        "usage": usage(c),
    }


def usage(c: dict[str, Any]) -> dict[str, Any]:
    return {"type": "duration", "seconds": math.ceil(c["duration_s"] or 0)}


def answer(
    c: dict[str, Any],
    t: Any,
    asked: AudioRequest,
    headers: dict[str, str],
    known: dict[int, str] | None = None,
) -> Response:
    text, segments = t["text"], t["segments"]
    fmt = asked.response_format
    if fmt == "json":
        return JSONResponse({"text": text, "usage": usage(c)}, headers=headers)
    if fmt == "verbose_json":
        return JSONResponse(verbose(c, t, asked), headers=headers)
    if fmt == "diarized_json":
        return JSONResponse(diarized(c, t, known), headers=headers)
    if fmt == "text":
        return PlainTextResponse(to_text(text, segments), headers=headers)
    if fmt == "srt":
        return PlainTextResponse(to_srt(text, segments), headers=headers)
    return PlainTextResponse(to_vtt(text, segments), headers=headers, media_type="text/vtt")
