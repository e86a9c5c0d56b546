"""Chaos at scale, a command and not part of any test run: `just chaos-scale`, or
`python -m tests.chaos.scale [DURATION] [RECORDS] [KILLS] [SEED]`.

One run of the harness (tests/chaos/harness.py) with at least 1,000 records and 20
SIGKILLs spread over the chaos, three workers held by SIGSTOP past their lease one
after the other, a PostgreSQL restart, a poison recording and slow-but-alive steps.
It passes only if nothing was lost (every record at the final milestone or stopped
with a reason, none left claimed), each milestone was reached once, every late write a
frozen worker sent was refused and none landed (and no refused token ever reached a
milestone), the poison stopped `worker_lost` within its attempts, and no PostgreSQL
was left running.
Prints the harness's report and the figures; exits 1 on any violation.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tests.chaos.harness import parse_duration, run

MIN_RECORDS = 1000
MIN_KILLS = 20
FREEZES = 3


def check(report: dict[str, Any], records: int, kills: int) -> list[str]:
    """What the scale run adds to the harness's own checks (its violations)."""
    problems: list[str] = list(report["violations"])
    if report["records"] != records:
        problems.append(f"{report['records']} records in the database, {records} fed")
    if report["kills"] < kills:
        problems.append(f"only {report['kills']} SIGKILLs")
    if report["freezes"] != FREEZES:
        problems.append(f"{report['freezes']} workers frozen past the lease, not {FREEZES}")
    if report["freeze_writes_landed"] or not report["freeze_writes_refused"]:
        problems.append(
            f"frozen workers' late writes: {report['freeze_writes_refused']} refused, "
            f"{report['freeze_writes_landed']} landed"
        )
    if report["poison_stopped_worker_lost"] != 1:
        problems.append("the poison recording did not stop worker_lost")
    return problems


def main(argv: list[str]) -> int:
    duration = parse_duration(argv[0]) if argv else 300.0
    records = int(argv[1]) if len(argv) > 1 else MIN_RECORDS
    kills = int(argv[2]) if len(argv) > 2 else MIN_KILLS + 2
    seed = int(argv[3]) if len(argv) > 3 else None
    began = time.monotonic()
    report = run(duration, records, seed, kills=kills, freezes=FREEZES, settle_s=180.0)
    problems = check(report, records, min(kills, MIN_KILLS))
    figures = {
        k: report[k]
        for k in (
            "records",
            "transcribed",
            "ended_stopped",
            "kills",
            "freezes",
            "frozen_s",
            "freeze_writes_refused",
            "freeze_writes_landed",
            "restarts",
            "stale_writes_refused",
            "milestones_reached",
            "worker_deaths",
            "poison_stopped_worker_lost",
            "slow_steps_done",
            "slow_renewals",
            "workers_started",
            "postgres_left",
            "run_s",
            "seed",
        )
    }
    print("chaos at scale:", figures, f"wall {time.monotonic() - began:.0f} s")
    for p in problems:
        print("VIOLATION:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
