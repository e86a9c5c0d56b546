"""How a recording is to be recognized, chosen when it is accepted and stored with it
(`recordings.options`, sql/0006_recognition_options.sql)."""

from __future__ import annotations

from typing import Any

import attrs

from transcriber.speaker_options import BadSpeakers, SpeakersOption

TASKS = ("transcribe", "translate", "align")
"""Whisper's tasks (the speech's own language as text, or English text from any), and
the owner's own text timed to the speech (transcriber.audio.alignment)."""

VOCABULARY_TERMS_MAX = 50
VOCABULARY_TERM_MAX = 60
"""Characters of one term: a name or a phrase, not a text."""
VOCABULARY_CHARS_MAX = 600
"""Characters of all the terms together: faster-whisper reads at most 223 tokens of its
hotwords (a fifth of a token per character is about what names take), and a remote
recognizer reads them as its prompt, of which Whisper keeps the last 224 tokens."""
ALIGN_TEXT_MAX = 200_000
"""Characters of a text to align: about four hours of speech at 150 words a minute, the
longest recording the service takes by default (TRANSCRIBER_MAX_DURATION_S)."""


class BadOptions(ValueError):
    """Options no recognizer could use; the message says which and why."""


def _terms(value: Any) -> Any:
    """A list of terms (as JSON has it) held as a tuple; anything else as given, for the
    check to refuse."""
    return tuple(value) if isinstance(value, list) else value


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
    vocabulary: tuple[str, ...] | None = attrs.field(default=None, converter=_terms)
    """Names and terms the recognizer is to hear (faster-whisper's hotwords, a remote
    recognizer's prompt); None: the service's TRANSCRIBER_VOCABULARY."""
    text: str | None = None
    """The owner's text to time word by word (task `align`); with no other task."""

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

        check_vocabulary(self.vocabulary)
        if (self.task == "align") != (self.text is not None):
            raise BadOptions("task align needs the text to align, and only align takes one")
        # As given, which may be anything: stored options come here.
        text: object = self.text
        if text is not None and (not isinstance(text, str) or not text.strip() or "\x00" in text):
            raise BadOptions("the text to align must be text with words in it")
        if self.text is not None and len(self.text) > ALIGN_TEXT_MAX:
            raise BadOptions(f"the text to align is longer than {ALIGN_TEXT_MAX} characters")

    def vocabulary_or(self, default: tuple[str, ...]) -> RecognitionOptions:
        """These options with `default` as their vocabulary when they ask none."""
        if self.vocabulary is not None or not default:
            return self
        return attrs.evolve(self, vocabulary=default)

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
        if self.vocabulary is not None:
            out["vocabulary"] = list(self.vocabulary)
        if self.text is not None:
            out["text"] = self.text
        return out

    @classmethod
    def from_json(cls, stored: dict[str, Any] | None) -> RecognitionOptions:
        stored = stored or {}
        unknown = set(stored) - {"task", "prompt", "temperature", "speakers", "vocabulary", "text"}
        if unknown:
            raise BadOptions(f"unknown recognition options: {', '.join(sorted(unknown))}")
        return cls(
            task=stored.get("task") or "transcribe",
            prompt=stored.get("prompt") or None,
            temperature=stored.get("temperature"),
            speakers=stored.get("speakers"),
            vocabulary=stored.get("vocabulary"),
            text=stored.get("text"),
        )


def check_vocabulary(terms: object) -> None:
    """BadOptions unless `terms` is None or a list of at most VOCABULARY_TERMS_MAX
    one-line terms of at most VOCABULARY_TERM_MAX characters, VOCABULARY_CHARS_MAX in
    all."""
    if terms is None:
        return
    if not isinstance(terms, (list, tuple)) or not all(isinstance(t, str) for t in terms):
        raise BadOptions("vocabulary must be a list of terms")
    if len(terms) > VOCABULARY_TERMS_MAX:
        raise BadOptions(f"vocabulary has more than {VOCABULARY_TERMS_MAX} terms")
    for t in terms:
        if not t.strip() or t != t.strip() or any(not c.isprintable() for c in t):
            raise BadOptions(
                f"vocabulary term {t[:VOCABULARY_TERM_MAX]!r} is empty or not one line"
            )
        if len(t) > VOCABULARY_TERM_MAX:
            raise BadOptions(
                f"vocabulary term {t[:20]!r}… is longer than {VOCABULARY_TERM_MAX} characters"
            )
    if sum(len(t) for t in terms) > VOCABULARY_CHARS_MAX:
        raise BadOptions(f"vocabulary is longer than {VOCABULARY_CHARS_MAX} characters in all")


def parse_vocabulary(value: str | None) -> tuple[str, ...] | None:
    """Terms as an owner writes them in one field: separated by commas or new lines;
    None when there are none. Checked by `check_vocabulary`."""
    if value is None:
        return None
    terms = tuple(t.strip() for t in value.replace("\n", ",").split(",") if t.strip())
    check_vocabulary(terms)
    return terms or None
