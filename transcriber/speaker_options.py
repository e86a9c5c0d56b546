"""The `speakers` option of a record: whether and how its speakers are told apart.

    off     no diarization (the transcript is one anonymous voice)
    auto    found by the voices, 1 to 8
    N       exactly N speakers (1..20)
    A-B     between A and B speakers

Chosen on upload (the API's form field, the page, `--speakers`), else the service's
TRANSCRIBER_SPEAKERS.
"""

from __future__ import annotations

import attrs

MAX_SPEAKERS = 20
AUTO_MAX = 8


class BadSpeakers(ValueError):
    """Not a speakers option; the message says what is."""


@attrs.frozen
class SpeakersOption:
    min_count: int = 1
    max_count: int = AUTO_MAX
    off: bool = False

    @property
    def text(self) -> str:
        if self.off:
            return "off"
        if (self.min_count, self.max_count) == (1, AUTO_MAX):
            return "auto"
        if self.min_count == self.max_count:
            return str(self.min_count)
        return f"{self.min_count}-{self.max_count}"

    @classmethod
    def parse(cls, text: str) -> SpeakersOption:
        value = text.strip().lower()
        if value == "off":
            return cls(off=True)
        if value == "auto":
            return cls()
        low, sep, high = value.partition("-")
        try:
            lo = int(low)
            hi = int(high) if sep else lo
        except ValueError:
            raise BadSpeakers(
                f"speakers must be off, auto, a count or a range such as 2-4, not {text!r}"
            ) from None
        if not 1 <= lo <= hi <= MAX_SPEAKERS:
            raise BadSpeakers(
                f"speakers must be from 1 to {MAX_SPEAKERS}, the range low to high, not {text!r}"
            )
        return cls(lo, hi)
