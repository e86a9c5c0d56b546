"""Leases and run limits: their lengths, and the settings refused up front."""

from __future__ import annotations

import pytest

from actors import Lease, RunLimit


def test_lease_and_run_limit_grow_with_the_audio() -> None:
    assert Lease(30.0, per_audio_s=2.0).seconds(10.0) == 50.0
    assert Lease(30.0).seconds(None) == 30.0
    assert RunLimit(900.0, per_audio_s=10.0).seconds(60.0) == 1500.0


def test_renewals_come_a_third_of_the_lease_apart_unless_set() -> None:
    assert Lease(30.0).renew_every_s == 10.0
    assert Lease(30.0, renew_s=5.0).renew_every_s == 5.0


@pytest.mark.parametrize(
    ("base_s", "renew_s"), [(30.0, 30.0), (30.0, 45.0), (30.0, 0.0), (0.0, None), (-1.0, None)]
)
def test_a_lease_that_renewals_cannot_keep_is_refused(base_s: float, renew_s: float | None) -> None:
    """TRANSCRIBER_RENEW_S at or past TRANSCRIBER_LEASE_S (or no lease at all) would
    lose every slow step's record: refused with a clear error when the table is made."""
    with pytest.raises(ValueError, match="lease"):
        Lease(base_s, renew_s=renew_s)
