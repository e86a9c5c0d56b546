"""What the watched folders' tests share: the quiet period they run with, and a clock
they set by hand."""

from __future__ import annotations

import attrs

QUIET_S = 1.0
"""The tests' quiet period: a file unchanged this long (by the Clock) is taken."""


@attrs.define
class Clock:
    """The scan's clock, moved by the test."""

    t: float = 0.0

    def __call__(self) -> float:
        return self.t
