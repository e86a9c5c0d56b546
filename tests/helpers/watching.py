"""What the watched folders' tests share: their spec capability, the quiet period they
run with, and a clock they set by hand."""

from __future__ import annotations

import attrs
import pytest

QUIET_S = 1.0
"""The tests' quiet period: a file unchanged this long (by the Clock) is taken."""


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("watch", title)


@attrs.define
class Clock:
    """The scan's clock, moved by the test."""

    t: float = 0.0

    def __call__(self) -> float:
        return self.t
