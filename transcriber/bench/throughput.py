"""`transcriber bench`: the pipeline's throughput, wake-up latency and claim plan, measured
the way /work/shared/bench/peers/bench.py measures procrastinate and pgqueuer.

One PostgreSQL server: a fresh embedded one in a temporary folder, or the admin URL in
TRANSCRIBER_BENCH_DATABASE_URL (databases `transcriber_bench_<pid>_<phase>` are created
there and dropped afterwards). Every phase gets its own fresh, migrated database.

drain  N records are accepted with one statement (`accept_many`), then ANALYZE (unless
       --no-analyze) and a CHECKPOINT (so the timed one falls in no drain). A Pipeline
       with W workers and no-op steps runs them through both milestones; the clock runs
       from the pipeline's start (the pool is already open) to the 2N-th successful
       commit. Throughput is stage transitions per second: each record makes two
       (received → normalized → transcribed). Checked afterwards from the database: N
       records at `transcribed`, 2N `milestone_reached` events, no other outcome. Claim
       latency is timed around the queue's trips that claim: claim+read when a worker
       asks for work, commit+claim+read when it just finished a step (the trio → asyncio
       bridge and the pool included); the claim alone is timed in plans.
wake   The pipeline idle, the queue empty: S times a pause of 20–100 ms, then
       t0 = time.monotonic() just before `accept` (it commits the record and NOTIFYs),
       t1 = time.monotonic() on the first line of the normalize step for that record.
       The next sample waits until the record is transcribed. Run twice: the producer
       in this process (same trio loop as the workers), then in a child process (plain
       asyncio + asyncpg, as the peers' producer and workers are in separate processes).
plans  The claim's plan and latency (a) with 1,000,000 finished records + 1,000 eligible
       after VACUUM ANALYZE, (b) with a burst of 5,000 eligible into a table ANALYZEd
       while empty (autovacuum off on it, so nothing re-analyses it mid-run).

Output: one line per metric on stdout and a final JSON line; the JSON also goes to
/tmp/transcriber-bench-<time>.json.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import trio
import trio_asyncio

from transcriber.bench.claim_plans import (
    CLAIM_INDEX,
    burst_after_empty_analyze,
    finished_history,
    plan_phase,
)
from transcriber.bench.drain_and_wake import pipeline_phase
from transcriber.bench.fresh_databases import Server
from transcriber.bench.instruments import note
from transcriber.bench.scaleout import scaleout_phase


def say(line: str) -> None:
    print(line, flush=True)


async def _run(
    server: Server,
    records: int,
    workers: int,
    samples: int,
    analyze: bool,
    plans: bool,
    processes: int,
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "postgres": server.source,
        "args": {
            "records": records,
            "workers": workers,
            "samples": samples,
            "analyze": analyze,
            "plans": plans,
            "processes": processes,
        },
    }
    async with trio_asyncio.open_loop():
        try:
            report.update(await pipeline_phase(server, records, workers, samples, analyze))
            if processes > 1:
                # The same harness with one process of all the workers: the ratio compares
                # like with like (a child process each, the same poll), not the drain above.
                report["scaleout_one"] = await scaleout_phase(server, records, workers, 1, analyze)
                report["scaleout"] = await scaleout_phase(
                    server, records, workers, processes, analyze
                )
            if plans:
                report["plan_finished_history"] = await plan_phase(
                    server, "finished", finished_history
                )
                report["plan_burst"] = await plan_phase(server, "burst", burst_after_empty_analyze)
        finally:
            await server.drop_databases()
    return report


def _print_report(r: dict[str, Any]) -> None:
    d = r["drain"]
    say(
        f"server        {r['postgres']} PostgreSQL {r['server'].get('server_version')} "
        f"fsync={r['server'].get('fsync')} synchronous_commit="
        f"{r['server'].get('synchronous_commit')} cpus={r['cpus']}"
    )
    say(
        f"drain         {d['transitions_per_s']:.0f} transitions/s "
        f"({d['records_per_s']:.0f} records/s, {d['transitions']} transitions in "
        f"{d['seconds']:.2f}s, N={d['records']} W={d['workers']} "
        f"analyze={'yes' if d['analyze'] else 'no'} pool={d['pool']})"
    )
    say(
        f"drain cpu     this process {d['process_cpu_s']:.2f}s of {d['seconds']:.2f}s = "
        f"{d['process_cpu_ms_per_transition']:.2f} ms per transition"
    )
    if d.get("server_cpu_s") is not None:
        say(
            f"server cpu    PostgreSQL {d['server_cpu_s']:.2f}s of {d['seconds']:.2f}s = "
            f"{d['server_cpu_ms_per_transition']:.2f} ms per transition"
        )
    say(
        f"verified      {d['verified']} (milestones {d['milestones']}, journal {d['journal']}, "
        f"lost commits {d['lost_commits']})"
    )
    for key, label in (("claim", "claim+read (drain)"), ("commit_then_claim", "commit+claim+read")):
        c = d[key]
        if c.get("n"):
            say(
                f"{label:<19} p50 {c['p50_ms']:.2f} ms  p99 {c['p99_ms']:.2f} ms  max "
                f"{c['max_ms']:.2f} ms over {c['n']} trips"
            )
    say(f"empty claims  {d['empty_claims']}")
    if d.get("trips"):
        say(
            f"shared trips  {d['trips']} trips, {d['asks_per_trip']:.1f} asks per trip "
            f"(at most {d['trips_at_once']} out at once)"
        )
    for key, label in (
        ("wake_in_process", "wake (same process producer)"),
        ("wake_child_producer", "wake (child process producer)"),
    ):
        if key not in r:
            continue
        w = r[key]
        say(
            f"{label:<31} p50 {w['p50_ms']:.2f} ms  p99 {w['p99_ms']:.2f} ms  max "
            f"{w['max_ms']:.2f} ms over {w['n']} samples"
        )
    for key in ("scaleout_one", "scaleout"):
        if key not in r:
            continue
        so = r[key]
        server_ms = so["server_cpu_ms_per_transition"]
        asks = [round(c["asks"] / max(1, c["trips"]), 1) for c in so["children"]]
        say(
            f"scale-out     {so['transitions_per_s']:.0f} transitions/s with {so['processes']} "
            f"worker processes x {so['workers_per_process']} workers (commits per process "
            f"{so['commits_per_process']}, asks per trip {asks}, verified {so['verified']}); "
            f"PostgreSQL {'n/a' if server_ms is None else f'{server_ms:.2f}'} ms, worker "
            f"processes {so['client_cpu_ms_per_transition']:.2f} ms per transition"
        )
    if "scaleout_one" in r and "scaleout" in r:
        ratio = r["scaleout"]["transitions_per_s"] / r["scaleout_one"]["transitions_per_s"]
        say(f"scale-out     {r['scaleout']['processes']} processes drain at {ratio:.2f}x one")
    for key in ("plan_finished_history", "plan_burst"):
        if key not in r:
            continue
        p = r[key]
        say(
            f"plan {key[5:]:<16} index {','.join(p['plan']['indexes']) or 'NONE'} "
            f"(uses {CLAIM_INDEX}: {p['uses_claim_index']}; generic plan: "
            f"{','.join(p['plan']['generic_indexes']) or 'none'}; seq scans "
            f"{p['plan']['seq_scans'] or 'none'}) execution "
            f"{p['plan']['execution_ms']:.2f} ms; claim p50 {p['claims']['p50_ms']:.2f} ms "
            f"p99 {p['claims']['p99_ms']:.2f} ms [{p['condition']}]"
        )


def main(
    records: int = 5000,
    workers: int = 8,
    samples: int = 200,
    analyze: bool = True,
    plans: bool = True,
    processes: int = 2,
) -> int:
    """Run the benchmark; 0 when every check held (targets are reported, not enforced)."""
    server = Server()
    note(f"starting PostgreSQL ({server.source})")
    server.start()
    started = time.monotonic()
    try:
        report = trio.run(_run, server, records, workers, samples, analyze, plans, processes)
    finally:
        server.stop()
    report["wall_s"] = time.monotonic() - started
    _print_report(report)
    compact = dict(report)
    for key in ("wake_in_process", "wake_child_producer"):
        if key in compact:
            compact[key] = {k: v for k, v in report[key].items() if k != "latencies_ms"}
    for key in ("plan_finished_history", "plan_burst"):
        if key in compact:
            compact[key] = {
                **compact[key],
                "plan": {k: v for k, v in compact[key]["plan"].items() if "text" not in k},
            }
    out = Path(f"/tmp/transcriber-bench-{time.strftime('%Y%m%d-%H%M%S')}.json")
    out.write_text(json.dumps(report, indent=1, default=str))
    say(json.dumps(compact, default=str))
    note(f"wrote {out}")
    ok = report["drain"]["verified"] and report["verified_after_wake"]
    ok = ok and report.get("scaleout", {}).get("verified", True)
    ok = ok and report.get("scaleout_one", {}).get("verified", True)
    for key in ("plan_finished_history", "plan_burst"):
        if key in report:
            ok = ok and report[key]["uses_claim_index"]
    return 0 if ok else 1
