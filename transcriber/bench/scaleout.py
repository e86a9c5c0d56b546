"""Scale-out: the same drain by several worker processes on one database; the child
process each runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any

import trio
import trio_asyncio

from transcriber.bench.fresh_databases import Server, fresh_db
from transcriber.bench.instruments import Probe, TimedQueue, counts, note
from transcriber.bench.server_cpu import process_cpu_s
from transcriber.db.database import open_database
from transcriber.db.named_sql import BENCH_AREAS
from transcriber.pipeline.runner import Pipeline

CHILD = """
import sys
from transcriber.bench.scaleout import drain_child
drain_child(sys.argv[1], int(sys.argv[2]))
"""


def drain_child(url: str, workers: int) -> None:
    """One worker process: a Pipeline of no-op steps; prints `ready`, starts on a `go`
    line, and on SIGTERM drains and prints how many commits it made."""
    import signal

    async def main() -> None:
        async with trio_asyncio.open_loop():
            async with open_database(
                url, min_size=workers + 1, max_size=workers + 2, extra_areas=BENCH_AREAS
            ) as db:
                pipeline = Pipeline(db, Probe().steps(), workers=workers)
                queue = TimedQueue(pipeline.queue, target_commits=0)
                pipeline.queue = queue  # type: ignore[assignment]
                with trio.open_signal_receiver(signal.SIGTERM) as signals:
                    print("ready", flush=True)
                    await trio.to_thread.run_sync(sys.stdin.readline)
                    async with trio.open_nursery() as nursery:
                        await nursery.start(pipeline.run)
                        async for _ in signals:
                            break
                        await pipeline.drain(5.0)
                        nursery.cancel_scope.cancel()
                print(
                    json.dumps(
                        {
                            "commits": queue.commits,
                            "lost": queue.lost_commits,
                            "trips": queue.inner.trips,
                            "asks": queue.inner.trip_asks,
                            "empty_claims": queue.empty_claims,
                        }
                    ),
                    flush=True,
                )

    trio.run(main)


async def scaleout_phase(
    server: Server, records: int, workers: int, processes: int, analyze: bool
) -> dict[str, Any]:
    per = max(1, workers // processes)
    async with fresh_db(server, "scaleout", 2) as (db, setup, owner_id):
        await setup.fetchrow("accept_many", owner_id, records)
        if analyze:
            await setup.execute("bench_analyze")
        await setup.execute("bench_checkpoint")
        note(f"scale-out: {records} records, {processes} processes x {per} workers")
        procs = [
            await trio.lowlevel.open_process(
                [sys.executable, "-c", CHILD, db.url, str(per)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            for _ in range(processes)
        ]
        try:
            for p in procs:  # connected and waiting
                assert (await _line(p)) == "ready"
            t0 = time.perf_counter()
            server_cpu_start = server.cpu_s()
            client_cpu_start = sum(process_cpu_s(p.pid) for p in procs)
            for p in procs:
                assert p.stdin is not None
                await p.stdin.send_all(b"go\n")
            # Polled from here (a count in the database, nothing to wait on): the
            # children only know their own share.
            while await db.fetchval("bench_any_unfinished"):  # noqa: ASYNC110
                await trio.sleep(0.01)
            seconds = time.perf_counter() - t0
            # What the drain cost the server and the worker processes (as the one-process
            # drain reports them): whether batching or the cores are the limit.
            server_cpu_end = server.cpu_s()
            client_cpu_s = sum(process_cpu_s(p.pid) for p in procs) - client_cpu_start
            for p in procs:
                p.send_signal(signal.SIGTERM)
            done = [json.loads(await _line(p)) for p in procs]
            for p in procs:
                await p.wait()
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
        kinds = counts(await db.fetch("bench_journal_kinds"), "kind")
        verified = (
            kinds.get("milestone_reached") == 2 * records
            and sum(d["commits"] for d in done) == 2 * records
            and all(d["commits"] > 0 for d in done)
        )
    note(f"scale-out: {2 * records / seconds:.0f} transitions/s, verified={verified}")
    return {
        "processes": processes,
        "workers_per_process": per,
        "records": records,
        "seconds": seconds,
        "transitions_per_s": 2 * records / seconds,
        "server_cpu_ms_per_transition": (
            None
            if server_cpu_start is None or server_cpu_end is None
            else (server_cpu_end - server_cpu_start) * 1e3 / (2 * records)
        ),
        "client_cpu_ms_per_transition": client_cpu_s * 1e3 / (2 * records),
        "commits_per_process": [d["commits"] for d in done],
        "children": done,
        "lost_commits": sum(d["lost"] for d in done),
        "journal": kinds,
        "verified": verified,
    }


async def _line(proc: trio.Process) -> str:
    """One line of a child's stdout (the children print a line at a time)."""
    data = b""
    while not data.endswith(b"\n"):
        assert proc.stdout is not None
        chunk = await proc.stdout.receive_some(1)
        if not chunk:
            raise RuntimeError("a worker process ended early")
        data += chunk
    return data.decode().strip()
