"""How a recording is to be recognized, chosen when it is accepted and stored with it
(`recordings.options`, sql/0006_recognition_options.sql)."""

from __future__ import annotations

from typing import Any

import attrs

from transcriber.speaker_options import BadSpeakers, SpeakersOption

TASKS = ("transcribe", "translate")
"""Whisper's tasks: the speech's own language as text, or English text from any."""


class BadOptions(ValueError):
    """Options no recognizer could use; the message says which and why."""


@attrs.frozen
class RecognitionOptions:
    task: str = "transcribe"
    prompt: str | None = None
    """Text the model takes as coming before the audio: names, spelling, style."""
    temperature: float | None = None
    """Sampling temperature, 0..1; None: the recognizer's own (greedy with fallback)."""
    speakers: str | None = None
    """Who spoke: off, auto, N or A-B (transcriber.speaker_options), as given; None: the
    service's TRANSCRIBER_SPEAKERS when the record is diarized."""

    def __attrs_post_init__(self) -> None:
        if self.task not in TASKS:
            raise BadOptions(f"task must be one of {', '.join(TASKS)}, not {self.task!r}")
        if self.prompt is not None and not isinstance(self.prompt, str):
            raise BadOptions("prompt must be text")
        # As given, which may be anything: stored options and API input come here.
        temperature: object = self.temperature
        if temperature is not None and (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not 0 <= temperature <= 1
        ):
            raise BadOptions(f"temperature must be a number from 0 to 1, not {self.temperature!r}")
        if self.speakers is not None:
            try:
                SpeakersOption.parse(self.speakers)
            except (BadSpeakers, AttributeError):
                raise BadOptions(
                    "speakers must be off, auto, a count or a range such as 2-4, "
                    f"not {self.speakers!r}"
                ) from None

    def speakers_or(self, default: str) -> SpeakersOption:
        """The speakers option to diarize with: the record's own, else `default`."""
        return SpeakersOption.parse(self.speakers or default)

    def to_json(self) -> dict[str, Any]:
        """As stored: the task always, the prompt and temperature when given."""
        out: dict[str, Any] = {"task": self.task}
        if self.prompt:
            out["prompt"] = self.prompt
        if self.temperature is not None:
            out["temperature"] = float(self.temperature)
        if self.speakers is not None:
            out["speakers"] = SpeakersOption.parse(self.speakers).text
        return out

    @classmethod
    def from_json(cls, stored: dict[str, Any] | None) -> RecognitionOptions:
        stored = stored or {}
        unknown = set(stored) - {"task", "prompt", "temperature", "speakers"}
        if unknown:
            raise BadOptions(f"unknown recognition options: {', '.join(sorted(unknown))}")
        return cls(
            task=stored.get("task") or "transcribe",
            prompt=stored.get("prompt") or None,
            temperature=stored.get("temperature"),
            speakers=stored.get("speakers"),
        )
