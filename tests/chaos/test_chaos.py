"""Jepsen-style: real worker processes, killed, frozen past their lease, a database
restart and resumes while steps run, a recording that kills its worker and steps slower
than their lease — and nothing is lost, nothing done twice, every stale write is
refused and journaled, the poison stops `worker_lost`, the slow steps keep their claim."""

from __future__ import annotations

import time

import pytest

from tests.chaos.checker import HAPPENED
from tests.chaos.harness import run


@pytest.mark.scenario("pipeline", "A record whose holders keep dying stops with worker_lost")
def test_chaos_loses_nothing(chaos_duration_s: float, chaos_seed: int | None) -> None:
    began = time.monotonic()
    report = run(chaos_duration_s, seed=chaos_seed)
    assert report["violations"] == [], report
    assert report["postgres_left"] == []  # also after its mid-run restart
    assert report["ok"]
    # Every record came to rest: at the final milestone or stopped with a reason.
    assert report["unsettled_at_end"] == 0
    assert report["transcribed"] + sum(report["ended_stopped"].values()) == report["records"]
    # Some records end stopped (the `stop-*` ones surely do).
    assert report["ended_stopped"].get("chaos_always_stop", 0) > 0
    # The chaos really happened.
    for name in HAPPENED:
        assert report[name] > 0, (name, report)
    # The poison recording used up its attempts killing worker processes (a holder the
    # harness killed first counts too: the checker wants exactly the step's attempts and
    # the stopping claim), then stopped worker_lost.
    assert report["poison_stopped_worker_lost"] == 1
    assert report["ended_stopped"].get("worker_lost", 0) >= 1
    assert set(report["exit_codes"].values()) == {0}
    # Bounded: the chaos itself plus settling (the server start is outside run_s).
    assert time.monotonic() - began < chaos_duration_s + 75
