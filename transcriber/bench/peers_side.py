"""The peers' side of `transcriber bench --peers`: procrastinate and pgqueuer drained and
woken exactly as /work/shared/bench/peers/bench.py does (its classes, its worker
process, its producer calls), on the server of this bench, with the server's and the
worker process's CPU sampled from /proc around the drain.

Runs in the peers' virtualenv (their packages, none of ours): imports only the standard
library, server_cpu.py and the peers' bench.py from its folder. Parameters as JSON on
stdin, one JSON result per system on stdout.

drain  as bench.py: N jobs enqueued, ANALYZE, then (as ours) a CHECKPOINT, the worker
       process started; the clock from the worker's start (connections open) to the N-th
       execution. Server CPU and the worker process's CPU are sampled when the worker
       reports its start and again once the queue's table shows all N finished (the
       acks included: the peers batch theirs, and a transition of ours is counted when
       committed).
wake   as bench.py: idle, a 20–100 ms pause, one job enqueued; t0 before the enqueue,
       t1 on the first line of the job function.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import random
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from transcriber.bench.server_cpu import process_cpu_s, server_cpu_s


async def _bench_system(peers: Any, name: str, p: dict[str, Any], ctx: Any) -> dict[str, Any]:
    import asyncpg

    cls = peers.SYSTEMS[name]
    n, w, samples = p["n"], p["w"], p["samples"]
    pgdata = Path(p["pgdata"])
    dsn = await peers.fresh_database(p["admin_url"], f"peers_{name}")
    system = cls()
    await system.open(dsn)
    check = await asyncpg.connect(dsn)
    res: dict[str, Any] = {"system": name, "version": version(name), "N": n, "W": w}
    shared = peers.Shared(ctx, samples)
    proc = None

    async def table_shows(done: int) -> bool:
        return bool(await cls.table_state(check) == (done, 0))

    try:
        s0 = server_cpu_s(pgdata)
        await system.enqueue_many(n)
        s1 = server_cpu_s(pgdata)
        assert await cls.table_state(check) == (0, n)
        if p["analyze"]:
            await check.execute("ANALYZE")
        await check.execute("CHECKPOINT")  # as ours: sql/bench.sql bench_checkpoint
        loop_name = cls.native_loop
        proc = ctx.Process(
            target=peers.worker_process,
            args=(name, dsn, w, loop_name, shared),
            daemon=True,
        )
        proc.start()
        # The worker's start, as the clock's: sampled as soon as it shows.
        while shared.t_start.value == 0.0:
            if not proc.is_alive():
                raise RuntimeError(f"{name} worker exited ({proc.exitcode})")
            await asyncio.sleep(0.0005)
        server_start = server_cpu_s(pgdata)
        client_start = process_cpu_s(proc.pid)
        await peers.wait_until(lambda: shared.executed.value >= n, proc, 600, "drain", poll=0.005)
        t_exec = shared.t_last.value
        await peers.wait_until(lambda: table_shows(n), proc, 60, "drain acks", poll=0.005)
        server_end = server_cpu_s(pgdata)
        client_end = process_cpu_s(proc.pid)
        drain_s = t_exec - shared.t_start.value
        if shared.executed.value != n:
            raise RuntimeError(f"job function ran {shared.executed.value} times for {n} jobs")
        res["drain"] = {
            "seconds": drain_s,
            "jobs_per_s": n / drain_s,
            "server_cpu_s": server_end - server_start,
            "server_cpu_ms_per_job": (server_end - server_start) * 1e3 / n,
            "client_cpu_s": client_end - client_start,
            "client_cpu_ms_per_job": (client_end - client_start) * 1e3 / n,
            "enqueue_server_cpu_ms_per_job": (s1 - s0) * 1e3 / n,
        }

        await asyncio.sleep(1.0)
        rng = random.Random(1)
        lat = []
        for i in range(samples):
            await asyncio.sleep(rng.uniform(20, 100) / 1e3)
            t0 = time.monotonic()
            await system.enqueue_one(i)
            await peers.wait_until(lambda i=i: shared.wake[i] > 0.0, proc, 60, "wake", poll=0.001)
            lat.append((shared.wake[i] - t0) * 1e3)
            await peers.wait_until(lambda i=i: table_shows(n + i + 1), proc, 60, "ack", poll=0.01)
        xs = sorted(lat)
        res["wake"] = {
            "n": len(xs),
            "p50_ms": peers.percentile(xs, 50),
            "p90_ms": peers.percentile(xs, 90),
            "p99_ms": peers.percentile(xs, 99),
            "max_ms": xs[-1],
        }
    finally:
        if proc is not None:
            proc.terminate()
            await asyncio.get_running_loop().run_in_executor(None, proc.join, 30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        await check.close()
        await system.close()
    return res


def main() -> None:
    """Entry: JSON parameters on stdin (admin_url, pgdata, n, w, samples, analyze,
    systems, bench_dir); one JSON line per system on stdout."""
    import multiprocessing

    p = json.loads(sys.stdin.read())
    sys.path.insert(0, p["bench_dir"])
    # The peers' bench.py as the module `bench`, importable so by the spawned workers.
    peers = importlib.import_module("bench")

    ctx = multiprocessing.get_context("spawn")
    for name in p["systems"]:
        try:
            res = peers.run_loop(
                peers.SYSTEMS[name].native_loop, _bench_system(peers, name, p, ctx)
            )
        except Exception as e:  # report it, go on with the other system
            res = {"system": name, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(res), flush=True)
