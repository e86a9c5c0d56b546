"""`transcriber bench --peers`: this queue, pgqueuer and procrastinate on one server in
one session, round after round, and one table of the medians.

Each round runs our drain and wake-up (drain_and_wake.py), then the peers' (their own
bench's classes, run by peers_side.py in their virtualenv), back to back on the same
embedded server; the table gives each figure's median over the rounds and its ratio to
pgqueuer's. Ours count stage transitions (a record makes two, each a claim and a
fenced, journaled commit), theirs jobs (one claim and one completion each): per
transition against per job. Our wake-up is the child-process producer's, as theirs
enqueue from another process than the worker's.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import trio
import trio_asyncio

from transcriber.bench.drain_and_wake import PROJECT_DIR, pipeline_phase
from transcriber.bench.fresh_databases import Server
from transcriber.bench.instruments import note

PEERS_PYTHON = Path(
    os.environ.get("TRANSCRIBER_PEERS_PYTHON", "/root/.cache/transcriber-peers/venv/bin/python")
)
PEERS_BENCH = Path(os.environ.get("TRANSCRIBER_PEERS_BENCH", "/work/shared/bench/peers"))
PEERS = ("pgqueuer", "procrastinate")
CHILD = "from transcriber.bench.peers_side import main; main()"


async def _peers_round(
    server: Server, records: int, workers: int, samples: int, analyze: bool
) -> dict[str, dict[str, Any]]:
    params = {
        "admin_url": server.admin_url,
        "pgdata": str(server.pgdata),
        "n": records,
        "w": workers,
        "samples": samples,
        "analyze": analyze,
        "systems": list(PEERS),
        "bench_dir": str(PEERS_BENCH),
    }
    # Only the project on the path: nothing of our virtualenv's packages in theirs.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(PROJECT_DIR)
    done = await trio.run_process(
        [str(PEERS_PYTHON), "-c", CHILD],
        stdin=json.dumps(params).encode(),
        capture_stdout=True,
        env=env,
        cwd=str(PROJECT_DIR),
    )
    out = {}
    for line in done.stdout.decode().splitlines():
        res = json.loads(line)
        out[res["system"]] = res
        if "error" in res:
            raise RuntimeError(f"{res['system']}: {res['error']}")
        note(
            f"{res['system']}: drain {res['drain']['jobs_per_s']:.0f} jobs/s, server "
            f"{res['drain']['server_cpu_ms_per_job']:.3f} ms/job, wake p50 "
            f"{res['wake']['p50_ms']:.2f} ms"
        )
    return out


def _ours(r: dict[str, Any]) -> dict[str, float]:
    d = r["drain"]
    return {
        "rate": d["transitions_per_s"],
        "wake_p50_ms": r["wake_child_producer"]["p50_ms"],
        "server_ms": d["server_cpu_ms_per_transition"],
        "client_ms": d["process_cpu_ms_per_transition"],
    }


def _theirs(r: dict[str, Any]) -> dict[str, float]:
    d = r["drain"]
    return {
        "rate": d["jobs_per_s"],
        "wake_p50_ms": r["wake"]["p50_ms"],
        "server_ms": d["server_cpu_ms_per_job"],
        "client_ms": d["client_cpu_ms_per_job"],
    }


async def _rounds(
    server: Server, records: int, workers: int, samples: int, analyze: bool, rounds: int
) -> list[dict[str, dict[str, float]]]:
    out = []
    async with trio_asyncio.open_loop():
        try:
            for i in range(rounds):
                note(f"round {i + 1} of {rounds}: transcriber")
                ours = await pipeline_phase(server, records, workers, samples, analyze)
                if not (ours["drain"]["verified"] and ours["verified_after_wake"]):
                    raise RuntimeError("transcriber's drain did not verify")
                await server.drop_databases()
                note(f"round {i + 1} of {rounds}: peers")
                theirs = await _peers_round(server, records, workers, samples, analyze)
                row = {"transcriber": _ours(ours)}
                row.update({name: _theirs(theirs[name]) for name in PEERS})
                out.append(row)
        finally:
            await server.drop_databases()
    return out


COLUMNS = (
    ("rate", "drain /s", "{:.0f}"),
    ("wake_p50_ms", "wake p50 ms", "{:.2f}"),
    ("server_ms", "server CPU ms", "{:.3f}"),
    ("client_ms", "client CPU ms", "{:.3f}"),
)


def table(rows: list[dict[str, dict[str, float]]]) -> list[str]:
    """The medians over the rounds, each with its ratio to pgqueuer's, then every
    round's figures."""
    systems = list(rows[0])
    med = {s: {k: statistics.median(r[s][k] for r in rows) for k, _, _ in COLUMNS} for s in systems}
    lines = [
        f"median of {len(rows)} rounds; transcriber per transition (2 a record), peers per job",
        f"{'system':<14}" + "".join(f"{label:>24}" for _, label, _ in COLUMNS),
    ]
    base = med["pgqueuer"]
    for s in systems:
        cells = []
        for k, _, fmt in COLUMNS:
            v = med[s][k]
            cells.append(f"{fmt.format(v)} ({v / base[k]:.2f}x pgq)")
        lines.append(f"{s:<14}" + "".join(f"{c:>24}" for c in cells))
    for i, r in enumerate(rows, 1):
        lines.append(
            f"round {i}: "
            + "; ".join(
                f"{s} " + " ".join(fmt.format(r[s][k]) for k, _, fmt in COLUMNS) for s in systems
            )
        )
    return lines


def main(records: int, workers: int, samples: int, analyze: bool, rounds: int) -> int:
    if not PEERS_PYTHON.exists():
        note(f"no peers' virtualenv at {PEERS_PYTHON}: bash {PEERS_BENCH}/setup.sh")
        return 2
    server = Server()
    if server.source != "embedded":
        note("--peers samples the server's processes: it needs the embedded server")
        return 2
    server.start()
    try:
        rows = trio.run(_rounds, server, records, workers, samples, analyze, rounds)
    finally:
        server.stop()
    for line in table(rows):
        print(line, flush=True)
    out = Path(f"/tmp/transcriber-bench-peers-{time.strftime('%Y%m%d-%H%M%S')}.json")
    out.write_text(json.dumps(rows, indent=1))
    note(f"wrote {out}")
    return 0
