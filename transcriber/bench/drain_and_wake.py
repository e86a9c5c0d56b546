"""The drain (N records through W workers of no-op steps) and the wake-up latency of an
idle pipeline, its producer in this process or in a child process."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import trio

from transcriber.bench import plain_asyncio
from transcriber.bench.fresh_databases import Server, fresh_db
from transcriber.bench.instruments import Probe, TimedQueue, counts, note, summary_ms
from transcriber.db.database import SERVER_SETTINGS, Database
from transcriber.db.named_sql import BENCH_AREAS, load_queries
from transcriber.milestones import TRANSCRIBED
from transcriber.pipeline.runner import Pipeline

PROJECT_DIR = Path(__file__).resolve().parents[2]

PAUSE_MS = (20.0, 100.0)
SETTLE_S = 1.0
DRAIN_TIMEOUT_S = 600.0
SAMPLE_TIMEOUT_S = 30.0


async def pipeline_phase(
    server: Server, records: int, workers: int, samples: int, analyze: bool
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    # One connection per worker, one for this bench's own queries, one spare; the
    # LISTEN connection is separate (db.listen opens its own).
    pool = workers + 2
    async with fresh_db(server, "pipeline", pool) as (db, setup, owner_id):
        res["server"] = {r["name"]: r["setting"] for r in await db.fetch("bench_server_settings")}
        probe = Probe()
        pipeline = Pipeline(db, probe.steps(), workers=workers)
        # The workers are built in Pipeline.run from `self.queue`, so a queue replaced
        # before run is the one they use.
        queue = TimedQueue(pipeline.queue, target_commits=2 * records)
        pipeline.queue = queue  # type: ignore[assignment]

        row = await setup.fetchrow("accept_many", owner_id, records)
        assert row is not None and row["accepted"] == records, row
        if analyze:
            await setup.execute("bench_analyze")
        await setup.execute("bench_checkpoint")
        note(
            f"drain: {records} records accepted{', analyzed' if analyze else ''}; "
            f"starting {workers} workers"
        )

        async with trio.open_nursery() as nursery:
            t_start = time.perf_counter()
            cpu_start = time.process_time()
            server_cpu_start = server.cpu_s()
            await nursery.start(pipeline.run)
            with trio.fail_after(DRAIN_TIMEOUT_S):
                await queue.reached.wait()
            assert queue.t_target is not None
            drain_s = queue.t_target - t_start
            # This process's CPU (every thread) over the drain: with the workers on one
            # trio thread, near drain_s means the process, not the server, is the limit.
            cpu_s = time.process_time() - cpu_start
            server_cpu_end = server.cpu_s()
            server_cpu_s = (
                None
                if server_cpu_start is None or server_cpu_end is None
                else server_cpu_end - server_cpu_start
            )
            drain_claims = list(queue.claim_s)
            drain_chained = list(queue.chained_s)
            lost = queue.lost_commits
            pg_queue = queue.inner
            trips, trip_asks = pg_queue.trips, pg_queue.trip_asks

            ms = counts(await db.fetch("bench_milestones"), "milestone")
            kinds = counts(await db.fetch("bench_journal_kinds"), "kind")
            verified = (
                ms == {TRANSCRIBED: records}
                and kinds.get("milestone_reached") == 2 * records
                and set(kinds) == {"accepted", "milestone_reached"}
                and lost == 0
            )
            res["drain"] = {
                "records": records,
                "workers": workers,
                "analyze": analyze,
                "pool": pool,
                "seconds": drain_s,
                "transitions": 2 * records,
                "transitions_per_s": 2 * records / drain_s,
                "records_per_s": records / drain_s,
                "process_cpu_s": cpu_s,
                "process_cpu_ms_per_transition": cpu_s * 1e3 / (2 * records),
                # Every process of the server (backends, walwriter, autovacuum...), from
                # /proc: what one PostgreSQL spends to carry this drain.
                "server_cpu_s": server_cpu_s,
                "server_cpu_ms_per_transition": (
                    None if server_cpu_s is None else server_cpu_s * 1e3 / (2 * records)
                ),
                "claim": summary_ms(drain_claims),
                "commit_then_claim": summary_ms(drain_chained),
                "empty_claims": queue.empty_claims,
                "lost_commits": lost,
                "trips": trips,
                "asks_per_trip": trip_asks / trips if trips else None,
                "trips_at_once": pg_queue.trips_at_once,
                "milestones": ms,
                "journal": kinds,
                "verified": verified,
            }
            note(
                f"drain: {drain_s:.2f}s = {2 * records / drain_s:.0f} transitions/s, "
                f"verified={verified}"
            )

            if samples > 0:
                await trio.sleep(SETTLE_S)
                await _until_idle(pipeline, workers)
                res["wake_in_process"] = await _wake_in_process(
                    db, owner_id, queue, probe, samples, pipeline, workers
                )
                note(f"wake (producer in process): p50 {res['wake_in_process']['p50_ms']:.2f} ms")
                await _until_idle(pipeline, workers)
                res["wake_child_producer"] = await _wake_child_producer(
                    db.url, owner_id, queue, probe, samples
                )
                note(
                    f"wake (producer in a child process): "
                    f"p50 {res['wake_child_producer']['p50_ms']:.2f} ms"
                )

            finished = await pipeline.drain(5.0)
            res["pipeline_drained_in_grace"] = finished
            nursery.cancel_scope.cancel()

        ms = counts(await db.fetch("bench_milestones"), "milestone")
        kinds = counts(await db.fetch("bench_journal_kinds"), "kind")
        total = records + 2 * max(samples, 0)
        res["verified_after_wake"] = (
            ms == {TRANSCRIBED: total} and kinds.get("milestone_reached") == 2 * total
        )
    return res


async def _until_idle(pipeline: Pipeline, workers: int) -> None:
    """Every worker parked on the wake-up: the queue was empty at its last claim."""
    with trio.fail_after(30):
        # Polled: the wake-up counts its sleepers but signals nobody when they park.
        while pipeline.wakeup.waiting < workers:  # noqa: ASYNC110
            await trio.sleep(0.01)


async def _wake_in_process(
    db: Database,
    owner_id: int,
    queue: TimedQueue,
    probe: Probe,
    samples: int,
    pipeline: Pipeline,
    workers: int,
) -> dict[str, Any]:
    rng = random.Random(1)
    lat: list[float] = []
    for i in range(samples):
        await trio.sleep(rng.uniform(*PAUSE_MS) / 1e3)
        t0 = time.monotonic()
        row = await db.fetchrow("accept", owner_id, f"wake-{i}", None, None, None, None, None)
        assert row is not None
        with trio.fail_after(SAMPLE_TIMEOUT_S):
            await queue.final(row["id"]).wait()
        lat.append(probe.t1[row["id"]] - t0)
    return {
        "producer": "same process and trio loop as the workers",
        **summary_ms(lat),
        "latencies_ms": [x * 1e3 for x in lat],
    }


async def _wake_child_producer(
    url: str, owner_id: int, queue: TimedQueue, probe: Probe, samples: int
) -> dict[str, Any]:
    params = {"url": url, "owner_id": owner_id, "samples": samples, "seed": 2}
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(PROJECT_DIR)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        ),
    )
    done = await trio.run_process(
        [
            sys.executable,
            "-c",
            "from transcriber.bench.drain_and_wake import producer_child; producer_child()",
        ],
        stdin=json.dumps(params).encode(),
        capture_stdout=True,
        cwd=str(PROJECT_DIR),
        env=env,
    )
    sent = json.loads(done.stdout)
    lat = []
    for rid, t0 in sent:
        lat.append(probe.t1[uuid.UUID(rid)] - t0)
    return {
        "producer": "child process (asyncio + asyncpg, own connection); "
        "t0 and t1 both time.monotonic()",
        **summary_ms(lat),
        "latencies_ms": [x * 1e3 for x in lat],
    }


def producer_child() -> None:
    """Entry of the child producer: parameters as JSON on stdin, [[id, t0], ...] on stdout."""
    params = json.loads(sys.stdin.read())
    sent = plain_asyncio.run(_produce(**params))
    sys.stdout.write(json.dumps(sent))


async def _produce(url: str, owner_id: int, samples: int, seed: int) -> list[list[Any]]:
    queries = load_queries(BENCH_AREAS)
    con = await asyncpg.connect(url, server_settings=SERVER_SETTINGS)
    try:
        rng = random.Random(seed)
        sent = []
        for i in range(samples):
            await asyncio.sleep(rng.uniform(*PAUSE_MS) / 1e3)
            t0 = time.monotonic()
            rid = await con.fetchval(
                queries["accept"], owner_id, f"wake-child-{i}", None, None, None, None, None
            )
            deadline = time.monotonic() + SAMPLE_TIMEOUT_S
            # Polled like the peers' bench polls its tables: it paces the samples only,
            # t1 is taken inside the step.
            while await con.fetchval(queries["bench_milestone_of"], rid) != TRANSCRIBED:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"wake sample {i} ({rid}) not transcribed")
                await asyncio.sleep(0.01)
            sent.append([str(rid), t0])
        return sent
    finally:
        await con.close()
