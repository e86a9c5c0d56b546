"""Backoff pauses stay in [½, 1] × min(cap, base × 2^attempts)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from actors import Backoff

# Base and cap of a realistic table: the cap is at most 2^20 bases (a 1 s base caps
# before 12 days). Beyond 2^30 bases the bound does not hold: `delay` clamps the
# exponent at 30 so that 2^attempts cannot overflow a float.
bases = st.floats(min_value=1e-3, max_value=1e4)


@given(
    attempts=st.integers(min_value=0, max_value=10_000),
    seed=st.integers(),
    base=bases,
    cap_bases=st.floats(min_value=1.0, max_value=2.0**20),
)
def test_delay_stays_within_the_jittered_ceiling(attempts, seed, base, cap_bases):
    backoff = Backoff(base_s=base, cap_s=base * cap_bases)
    ceiling = min(backoff.cap_s, base * 2.0 ** min(attempts, 1000))
    delay = backoff.delay(attempts, random.Random(seed))
    assert 0.5 * ceiling <= delay <= ceiling


def test_delay_doubles_until_the_cap():
    # The upper ends of the jitter range, from a generator that always draws 1.0.
    class Top(random.Random):
        def random(self) -> float:
            return 1.0

    backoff = Backoff(base_s=5.0, cap_s=600.0)
    assert [backoff.delay(n, Top()) for n in range(9)] == [
        5.0,
        10.0,
        20.0,
        40.0,
        80.0,
        160.0,
        320.0,
        600.0,
        600.0,
    ]
