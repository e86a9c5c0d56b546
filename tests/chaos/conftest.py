"""`just chaos --duration 10m`: how long the chaos lasts (90, 90s, 10m, 1h)."""

from __future__ import annotations

import pytest

from tests.chaos.harness import parse_duration

DEFAULT_S = 45.0  # bounded for CI: the whole test stays well under 2 minutes


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--duration",
        action="store",
        default=None,
        help="chaos duration, e.g. 90s or 10m (default 45s)",
    )
    parser.addoption(
        "--chaos-seed",
        action="store",
        type=int,
        default=None,
        help="seed of the chaos run (default: random, printed in the report)",
    )


@pytest.fixture
def chaos_duration_s(request: pytest.FixtureRequest) -> float:
    text = request.config.getoption("--duration")
    return DEFAULT_S if text is None else parse_duration(text)


@pytest.fixture
def chaos_seed(request: pytest.FixtureRequest) -> int | None:
    return request.config.getoption("--chaos-seed")
