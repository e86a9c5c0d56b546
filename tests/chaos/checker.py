"""The chaos run's checker (tests/chaos/harness.py): after the run, it reads the
database and the journal, and every broken invariant is a violation."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from tests.chaos.worker import MAX_ATTEMPTS, chaos_steps
from transcriber.db.database import Database
from transcriber.milestones import RECEIVED, TRANSCRIBED

HAPPENED = (
    "kills",
    "freezes",
    "restarts",
    "stale_writes_refused",
    "retries",
    "stops",
    "resumes",
    "freeze_writes_refused",
    "worker_deaths",
    "poison_stopped_worker_lost",
    "slow_steps_first_attempt",
    "slow_renewals",
)
"""What the report counts that must not be zero: the chaos really happened."""


async def check(
    db: Database,
    counts: Counter[str],
    resumed: set[str],
    freeze_tokens: list[str],
    names: dict[str, str],
) -> dict[str, Any]:
    """Read the database and the journal; every broken invariant is a violation."""
    recs = await db.run(
        lambda con: con.fetch(
            "SELECT id::text AS id, milestone, stopped_at, stop_reason, claim_token::text AS token,"
            " lease_expires_at, attempts, now() AS now FROM recordings"
        )
    )
    events = await db.run(
        lambda con: con.fetch(
            "SELECT id, recording_id::text AS rid, origin, kind, milestone,"
            " claim_token::text AS token, detail FROM journal ORDER BY id"
        )
    )
    violations: list[str] = []
    kinds = Counter(e["kind"] for e in events)
    # The milestones the workers' steps pass through, in order (not every milestone the
    # service knows: the chaos workers have no diarization step).
    path, steps = [RECEIVED], chaos_steps().steps
    while path[-1] in steps:
        path.append(steps[path[-1]].next_milestone)
    order = {m: i for i, m in enumerate(path)}

    accepted = Counter(e["rid"] for e in events if e["kind"] == "accepted")
    reached = Counter(
        (e["rid"], e["milestone"]) for e in events if e["kind"] == "milestone_reached"
    )
    reached_tokens = {(e["rid"], e["token"]) for e in events if e["kind"] == "milestone_reached"}
    ended_stopped = Counter()
    for r in recs:
        rid = r["id"]
        if accepted[rid] != 1:
            violations.append(f"{rid}: accepted {accepted[rid]} times")
        if r["stopped_at"] is None:
            if r["milestone"] != TRANSCRIBED:
                violations.append(f"{rid}: at {r['milestone']}, not stopped (stuck)")
            if r["token"] is not None:
                violations.append(f"{rid}: still claimed (lease to {r['lease_expires_at']})")
        else:
            if not r["stop_reason"]:
                violations.append(f"{rid}: stopped without a reason")
            ended_stopped[r["stop_reason"]] += 1
        want = {m for m in path[1:] if order[m] <= order[r["milestone"]]}
        got = {m for (x, m) in reached if x == rid}
        if got != want:
            violations.append(f"{rid}: at {r['milestone']} but reached {sorted(got)}")
    for key, n in reached.items():
        if n != 1:
            violations.append(f"{key}: milestone reached {n} times")

    lease_lost = [e for e in events if e["kind"] == "lease_lost"]
    for e in lease_lost:
        if e["token"] is None:
            violations.append(f"lease_lost {e['id']} without a token")
        elif (e["rid"], e["token"]) in reached_tokens:
            violations.append(
                f"lease_lost {e['id']}: token {e['token']} also reached a milestone of {e['rid']}"
            )
    refused_by_write = Counter(
        json.loads(e["detail"]).get("write")
        if isinstance(e["detail"], str)
        else e["detail"].get("write")
        for e in lease_lost
    )
    lost_tokens = {e["token"] for e in lease_lost}
    freeze_refused = sum(1 for t in freeze_tokens if t in lost_tokens)
    # A frozen worker's step was open when it was stopped and another worker held the
    # record before it went on: any write of its token that landed came after that.
    # (A frozen worker may also write nothing: its own clock tells it the lease is over.)
    landed_kinds = {"milestone_reached", "attempt_failed", "stopped", "released"}
    freeze_landed = sum(
        1
        for t in freeze_tokens
        if any(e["token"] == t and e["kind"] in landed_kinds for e in events)
    )
    if freeze_landed:
        violations.append(f"{freeze_landed} frozen workers' late writes landed")

    human_resumed = {e["rid"] for e in events if e["kind"] == "resumed" and e["origin"] == "human"}
    for e in events:
        if e["kind"] == "resumed" and e["origin"] != "human":
            violations.append(f"resumed event {e['id']} with origin {e['origin']}")
    for rid in resumed - human_resumed:
        violations.append(f"{rid}: resumed without a human `resumed` event")

    # The poison recording: stopped `worker_lost` once its attempts were used up by
    # the processes it killed, and never run again after that.
    poison = [r for r in recs if names.get(r["id"], "").startswith("poison-")]
    for r in poison:
        if r["stop_reason"] != "worker_lost":
            violations.append(
                f"{r['id']} (poison): ended {r['milestone']}, "
                f"stopped {r['stop_reason']!r}, not worker_lost"
            )
        elif r["attempts"] != MAX_ATTEMPTS + 1:  # the stopping claim is one more
            violations.append(
                f"{r['id']} (poison): {r['attempts']} claims, "
                f"not {MAX_ATTEMPTS} attempts and the stopping claim"
            )
    # Slow-but-alive steps: their renewals kept them; each reached its milestones once
    # (checked above), most on their first attempt (a kill may still cut one short).
    slow_ids = {r["id"] for r in recs if names.get(r["id"], "").startswith("slow-")}
    slow_reached = [e for e in events if e["kind"] == "milestone_reached" and e["rid"] in slow_ids]
    detail = [
        json.loads(e["detail"]) if isinstance(e["detail"], str) else e["detail"]
        for e in slow_reached
    ]
    renewals = sum(d.get("renewals", 0) for d in detail)
    for r in recs:
        if r["id"] in slow_ids and r["milestone"] != TRANSCRIBED:
            violations.append(f"{r['id']} (slow): ended at {r['milestone']} ({r['stop_reason']})")

    report: dict[str, Any] = {
        "records": len(recs),
        "transcribed": sum(1 for r in recs if r["stopped_at"] is None),
        "ended_stopped": dict(ended_stopped),
        "kills": counts["kills"],
        "freezes": counts["freezes"],
        "frozen_s": counts["frozen_s"],
        "restarts": counts["restarts"],
        "stale_writes_refused": len(lease_lost),
        "stale_writes_by_write": dict(refused_by_write),
        "freeze_writes_refused": freeze_refused,
        "freeze_writes_landed": freeze_landed,
        "freezes_not_taken_over": counts["freezes_not_taken_over"],
        "retries": kinds["attempt_failed"],
        "stops": kinds["stopped"],
        "resumes": kinds["resumed"],
        "resumed_records": len(resumed),
        "milestones_reached": kinds["milestone_reached"],
        "released": kinds["released"],
        "worker_deaths": counts["worker_deaths"],
        "poison_stopped_worker_lost": sum(1 for r in poison if r["stop_reason"] == "worker_lost"),
        "slow_steps_done": len(slow_reached),
        "slow_steps_first_attempt": sum(1 for d in detail if d.get("attempt") == 1),
        "slow_renewals": renewals,
    }
    for name in HAPPENED:
        if not report[name]:
            violations.append(f"no {name}: the chaos did not happen")
    report["violations"] = violations
    report["ok"] = not violations
    return report
