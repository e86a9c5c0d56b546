"""`transcriber bench`: the pipeline's throughput, wake-up latency and claim plan, measured
the way /work/shared/bench/peers/bench.py measures procrastinate and pgqueuer.

One PostgreSQL server: a fresh embedded one in a temporary folder, or the admin URL in
TRANSCRIBER_BENCH_DATABASE_URL (databases `transcriber_bench_<pid>_<phase>` are created
there and dropped afterwards). Every phase gets its own fresh, migrated database.

drain  N records are accepted with one statement (`accept_many`), then ANALYZE (unless
       --no-analyze). A Pipeline with W workers and no-op steps runs them through both
       milestones; the clock runs from the pipeline's start (the pool is already open) to
       the 2N-th successful commit. Throughput is stage transitions per second: each
       record makes two (received → normalized → transcribed). Checked afterwards from
       the database: N records at `transcribed`, 2N `milestone_reached` events, no other
       outcome. Claim latency is timed around the queue's trips that claim: claim+read
       when a worker asks for work, commit+claim+read when it just finished a step (the
       trio → asyncio bridge and the pool included); the claim alone is timed in plans.
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

import asyncio
import contextlib
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import trio
import trio_asyncio

from actors import Job, Step, StepTable
from transcriber.db import embedded
from transcriber.db.database import SERVER_SETTINGS, Database, open_database
from transcriber.db.migrations import migrate
from transcriber.db.named_sql import load_queries
from transcriber.milestones import TRANSCRIBED
from transcriber.owners import add_owner
from transcriber.pipeline.pg_queue import PgQueue, Saved
from transcriber.pipeline.runner import Pipeline
from transcriber.pipeline.step_table import step_table

ENV_URL = "TRANSCRIBER_BENCH_DATABASE_URL"
PROJECT_DIR = Path(__file__).resolve().parents[2]

PAUSE_MS = (20.0, 100.0)
SETTLE_S = 1.0
DRAIN_TIMEOUT_S = 600.0
SAMPLE_TIMEOUT_S = 30.0
PLAN_CLAIMS = 200
FINISHED_ROWS = 1_000_000
FINISHED_ELIGIBLE = 1_000
BURST_ROWS = 5_000
CLAIM_INDEX = "recordings_claimable"


def say(line: str) -> None:
    print(line, flush=True)


def note(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(sorted_xs: list[float], p: float) -> float:
    """Nearest-rank percentile (the same as the peers' bench)."""
    return sorted_xs[max(0, math.ceil(p / 100 * len(sorted_xs)) - 1)]


def summary_ms(values_s: list[float]) -> dict[str, float]:
    xs = sorted(v * 1e3 for v in values_s)
    if not xs:
        return {"n": 0}
    return {
        "n": len(xs),
        "p50_ms": percentile(xs, 50),
        "p90_ms": percentile(xs, 90),
        "p99_ms": percentile(xs, 99),
        "max_ms": xs[-1],
        "min_ms": xs[0],
        "mean_ms": statistics.fmean(xs),
    }


def with_database(url: str, name: str) -> str:
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(url)._replace(path="/" + name))


# --------------------------------------------------------------------------------------
# The server and its fresh databases
# --------------------------------------------------------------------------------------
class Server:
    """The admin URL of the server under test, and the databases made on it."""

    def __init__(self) -> None:
        self.admin_url = os.environ.get(ENV_URL) or ""
        self.source = ENV_URL if self.admin_url else "embedded"
        self._handle: Any = None
        self._home: Path | None = None
        self._made: list[str] = []

    def start(self) -> None:
        if self.admin_url:
            return
        self._home = Path(tempfile.mkdtemp(prefix="transcriber-bench-pg-"))
        self._handle = embedded.start(self._home, cleanup_mode="delete")
        self.admin_url = self._handle.get_uri()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cleanup()
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)

    async def _admin(self, *statements: str) -> None:
        con = await trio_asyncio.aio_as_trio(asyncpg.connect)(self.admin_url)
        try:
            for sql in statements:
                await trio_asyncio.aio_as_trio(con.execute)(sql)
        finally:
            await trio_asyncio.aio_as_trio(con.close)()

    async def fresh_database(self, phase: str) -> str:
        # Database names cannot be query parameters; this one is made here, never typed.
        name = f"transcriber_bench_{os.getpid()}_{phase}"
        await self._admin(
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'
        )
        self._made.append(name)
        return with_database(self.admin_url, name)

    async def drop_databases(self) -> None:
        with trio.CancelScope(shield=True):
            await self._admin(*(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)' for n in self._made))
            self._made.clear()


@contextlib.asynccontextmanager
async def fresh_db(server: Server, phase: str, pool: int) -> AsyncIterator[tuple[Database, int]]:
    """A migrated database with one owner; the pool's connections are opened up front,
    so no timed phase pays for connecting."""
    url = await server.fresh_database(phase)
    async with open_database(url, min_size=pool, max_size=pool) as db:
        await migrate(db)
        owner = await add_owner(db, "bench")
        yield db, owner.id


# --------------------------------------------------------------------------------------
# Instruments: the queue with its claim timed and commits counted; no-op steps with a probe
# --------------------------------------------------------------------------------------
class TimedQueue:
    """Wraps the Pipeline's PgQueue: times every claim, counts successful commits, and
    signals when a record reaches the final milestone. Everything else delegates."""

    def __init__(self, inner: PgQueue, target_commits: int):
        self.inner = inner
        self.claim_s: list[float] = []
        """Claim + read in one trip, when a worker asks for work."""
        self.chained_s: list[float] = []
        """Commit + claim + read in one trip, when a worker finished a step."""
        self.empty_claims = 0
        self.commits = 0
        self.lost_commits = 0
        self.target_commits = target_commits
        self.t_target: float | None = None
        self.reached = trio.Event()
        self._final: dict[Any, trio.Event] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def final(self, record_id: Any) -> trio.Event:
        """Set once `record_id` is committed at the final milestone (either side may ask
        first: the commit can land before the producer's own call returns)."""
        return self._final.setdefault(record_id, trio.Event())

    async def next_job(self) -> Job | None:
        t = time.perf_counter()
        job = await self.inner.next_job()
        self._timed(t, job)
        return job

    async def commit(self, job: Job, step: Step, result: Saved | None) -> bool:
        ok = await self.inner.commit(job, step, result)
        self._count(ok, job, step)
        return ok

    async def commit_then_next(
        self, job: Job, step: Step, result: Saved | None
    ) -> tuple[bool, Job | None]:
        t = time.perf_counter()
        ok, following = await self.inner.commit_then_next(job, step, result)
        self._count(ok, job, step)
        self._timed(t, following, self.chained_s)
        return ok, following

    def _timed(self, t: float, job: Job | None, into: list[float] | None = None) -> None:
        if job is None:
            self.empty_claims += 1
        else:
            (self.claim_s if into is None else into).append(time.perf_counter() - t)

    def _count(self, ok: bool, job: Job, step: Step) -> None:
        if not ok:
            self.lost_commits += 1
            return
        self.commits += 1
        if self.commits == self.target_commits:
            self.t_target = time.perf_counter()
            self.reached.set()
        if step.next_milestone == TRANSCRIBED:
            self.final(job.claim.id).set()


class Probe:
    """No-op steps; normalize notes when it first ran for each record."""

    def __init__(self) -> None:
        self.t1: dict[Any, float] = {}

    async def normalize(self, job: Job, progress: Any) -> None:
        t1 = time.monotonic()
        self.t1.setdefault(job.claim.id, t1)

    async def recognize(self, job: Job, progress: Any) -> None:
        return None

    def steps(self) -> StepTable:
        return step_table(normalize=self.normalize, recognize=self.recognize)


def claim_args(steps: StepTable) -> tuple[Any, ...]:
    """The claim's parameters as PgQueue passes them for one worker ($4 now: NULL, the
    server's clock; $5: one record's token; $6: none excluded)."""
    s = list(steps.steps.values())
    return (
        [x.milestone for x in s],
        [x.lease.base_s for x in s],
        [x.lease.per_audio_s for x in s],
        None,
        [uuid.uuid4()],
        [],
    )


def counts(rows: list[asyncpg.Record], key: str) -> dict[str, int]:
    return {r[key]: r["n"] for r in rows}


# --------------------------------------------------------------------------------------
# Drain and wake-up
# --------------------------------------------------------------------------------------
async def pipeline_phase(
    server: Server, records: int, workers: int, samples: int, analyze: bool
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    # One connection per worker, one for this bench's own queries, one spare; the
    # LISTEN connection is separate (db.listen opens its own).
    pool = workers + 2
    async with fresh_db(server, "pipeline", pool) as (db, owner_id):
        res["server"] = {r["name"]: r["setting"] for r in await db.fetch("bench_server_settings")}
        probe = Probe()
        pipeline = Pipeline(db, probe.steps(), workers=workers)
        # The workers are built in Pipeline.run from `self.queue`, so a queue replaced
        # before run is the one they use.
        queue = TimedQueue(pipeline.queue, target_commits=2 * records)
        pipeline.queue = queue  # type: ignore[assignment]

        row = await db.fetchrow("accept_many", owner_id, records)
        assert row is not None and row["accepted"] == records, row
        if analyze:
            await db.execute("bench_analyze")
        note(
            f"drain: {records} records accepted{', analyzed' if analyze else ''}; "
            f"starting {workers} workers"
        )

        async with trio.open_nursery() as nursery:
            t_start = time.perf_counter()
            cpu_start = time.process_time()
            await nursery.start(pipeline.run)
            with trio.fail_after(DRAIN_TIMEOUT_S):
                await queue.reached.wait()
            assert queue.t_target is not None
            drain_s = queue.t_target - t_start
            # This process's CPU (every thread) over the drain: with the workers on one
            # trio thread, near drain_s means the process, not the server, is the limit.
            cpu_s = time.process_time() - cpu_start
            drain_claims = list(queue.claim_s)
            drain_chained = list(queue.chained_s)
            lost = queue.lost_commits
            pg_queue = pipeline.queue.inner
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
        while pipeline.wakeup.waiting < workers:
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
            "from transcriber.bench.throughput import producer_child; producer_child()",
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
    sent = asyncio.run(_produce(**params))
    sys.stdout.write(json.dumps(sent))


async def _produce(url: str, owner_id: int, samples: int, seed: int) -> list[list[Any]]:
    queries = load_queries()
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


# --------------------------------------------------------------------------------------
# The claim's plan
# --------------------------------------------------------------------------------------
_INDEX_IN_TEXT = re.compile(r"Index (?:Only )?Scan(?: Backward)? (?:using|on) (\w+)")


def _plan_nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found += _plan_nodes(child)
    return found


def _literals(args: tuple[Any, ...]) -> str:
    """The claim's arguments as SQL literals: EXPLAIN EXECUTE takes no bound parameters.
    They come from the step table in code, never from input."""

    def lit(v: Any) -> str:
        if v is None:
            return "NULL"
        if isinstance(v, list):
            return "ARRAY[" + ", ".join(lit(x) for x in v) + "]" if v else "'{}'"
        if isinstance(v, (str, uuid.UUID)):
            return "'" + str(v).replace("'", "''") + "'"
        if isinstance(v, int):
            return str(v)
        return repr(float(v))

    return ", ".join(lit(a) for a in args)


async def claim_statement(db: Database, con: asyncpg.Connection) -> str:
    """The statement inside claim_next, its parameters numbered, with the function's
    settings applied to the current transaction: what EXPLAIN must look at, since the
    plan of a function call shows only the call."""
    row = await con.fetchrow(db.sql("claim_function"))
    # The PL/pgSQL body is one `RETURN QUERY <statement>;`.
    found = re.search(r"BEGIN RETURN QUERY(.*?);\s*END", row["prosrc"], re.S)
    sql = found.group(1) if found else row["prosrc"]
    for i, (name, type_) in enumerate(zip(row["names"], row["types"]), 1):
        sql = re.sub(rf"\b{name}\b", f"${i}::{type_}", sql)
    for setting in row["proconfig"] or []:
        name, _, value = setting.partition("=")
        await con.execute("SELECT set_config($1, $2, true)", name, value)
    return sql


async def explain_claim(db: Database, args: tuple[Any, ...]) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of the claim's statement, in a transaction that is
    rolled back, so nothing stays claimed."""

    async def work(con: asyncpg.Connection) -> dict[str, Any]:
        tr = con.transaction()
        await tr.start()
        try:
            claim = await claim_statement(db, con)
            lines = [r[0] for r in await con.fetch("EXPLAIN (ANALYZE, BUFFERS) " + claim, *args)]
            doc = await con.fetchval("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + claim, *args)
            # The plan a prepared statement falls back to after five executions, which is
            # what a long-lived pooled connection runs: forced here, so it is seen.
            await con.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await con.execute("PREPARE bench_claim AS " + claim)
            try:
                generic = [
                    r[0]
                    for r in await con.fetch(
                        f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_claim({_literals(args)})"
                    )
                ]
            finally:
                await con.execute("DEALLOCATE bench_claim")
        finally:
            await tr.rollback()
        return {"text": lines, "json": doc, "generic_text": generic}

    out = await db.run(work)
    doc = out.pop("json")
    if isinstance(doc, str):
        doc = json.loads(doc)
    top = doc[0]
    nodes = _plan_nodes(top["Plan"])
    out["indexes"] = sorted({n["Index Name"] for n in nodes if "Index Name" in n})
    out["seq_scans"] = sorted(
        {n["Relation Name"] for n in nodes if n["Node Type"] == "Seq Scan" and "Relation Name" in n}
    )
    out["execution_ms"] = top.get("Execution Time")
    out["planning_ms"] = top.get("Planning Time")
    out["generic_indexes"] = sorted(
        {m.group(1) for line in out["generic_text"] if (m := _INDEX_IN_TEXT.search(line))}
    )
    return out


async def plan_phase(
    server: Server, phase: str, setup: Callable[[Database, int], Awaitable[str]]
) -> dict[str, Any]:
    async with fresh_db(server, phase, 2) as (db, owner_id):
        condition = await setup(db, owner_id)
        steps = Probe().steps()
        plan = await explain_claim(db, claim_args(steps))
        queue = PgQueue(db, steps)
        times = []
        for _ in range(PLAN_CLAIMS):
            t = time.perf_counter()
            claim = await queue.claim()
            times.append(time.perf_counter() - t)
            assert claim is not None, "the claim found no eligible record"
        res = {
            "condition": condition,
            "plan": plan,
            "uses_claim_index": CLAIM_INDEX in plan["indexes"],
            "claims": summary_ms(times),
        }
    note(f"plan {phase} ({condition}):\n  " + "\n  ".join(plan["text"]))
    note(f"plan {phase}: indexes {plan['indexes']}, claim p50 {res['claims']['p50_ms']:.2f} ms")
    return res


async def _finished_history(db: Database, owner_id: int) -> str:
    await db.execute("bench_insert_finished", owner_id, FINISHED_ROWS)
    await db.fetchrow("accept_many", owner_id, FINISHED_ELIGIBLE)
    await db.execute("bench_vacuum_analyze")
    return f"{FINISHED_ROWS:,} finished + {FINISHED_ELIGIBLE:,} eligible, VACUUM ANALYZE"


async def _burst_after_empty_analyze(db: Database, owner_id: int) -> str:
    await db.execute("bench_autovacuum_off")
    await db.execute("bench_analyze")
    await db.fetchrow("accept_many", owner_id, BURST_ROWS)
    return f"{BURST_ROWS:,} eligible into a table ANALYZEd while empty, not re-analyzed"


# --------------------------------------------------------------------------------------
# Scale-out: the same drain by several worker processes (daemons) on one database
# --------------------------------------------------------------------------------------
CHILD = """
import sys
from transcriber.bench.throughput import drain_child
drain_child(sys.argv[1], int(sys.argv[2]))
"""


def drain_child(url: str, workers: int) -> None:
    """One worker process: a Pipeline of no-op steps; prints `ready`, starts on a `go`
    line, and on SIGTERM drains and prints how many commits it made."""
    import signal

    async def main() -> None:
        async with trio_asyncio.open_loop():
            async with open_database(url, min_size=workers + 1, max_size=workers + 2) as db:
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
                    json.dumps({"commits": queue.commits, "lost": queue.lost_commits}), flush=True
                )

    trio.run(main)


async def scaleout_phase(
    server: Server, records: int, workers: int, processes: int, analyze: bool
) -> dict[str, Any]:
    per = max(1, workers // processes)
    async with fresh_db(server, "scaleout", 2) as (db, owner_id):
        await db.fetchrow("accept_many", owner_id, records)
        if analyze:
            await db.execute("bench_analyze")
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
            for p in procs:
                await p.stdin.send_all(b"go\n")
            # Polled from here: the children only know their own share.
            while (
                counts(await db.fetch("bench_milestones"), "milestone").get(TRANSCRIBED, 0)
                < records
            ):
                await trio.sleep(0.01)
            seconds = time.perf_counter() - t0
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
        "commits_per_process": [d["commits"] for d in done],
        "lost_commits": sum(d["lost"] for d in done),
        "journal": kinds,
        "verified": verified,
    }


async def _line(proc: trio.Process) -> str:
    """One line of a child's stdout (the children print a line at a time)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = await proc.stdout.receive_some(1)
        if not chunk:
            raise RuntimeError("a worker process ended early")
        data += chunk
    return data.decode().strip()


# --------------------------------------------------------------------------------------
# The whole run
# --------------------------------------------------------------------------------------
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
                report["scaleout"] = await scaleout_phase(
                    server, records, workers, processes, analyze
                )
            if plans:
                report["plan_finished_history"] = await plan_phase(
                    server, "finished", _finished_history
                )
                report["plan_burst"] = await plan_phase(server, "burst", _burst_after_empty_analyze)
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
    if "scaleout" in r:
        so = r["scaleout"]
        say(
            f"scale-out     {so['transitions_per_s']:.0f} transitions/s with {so['processes']} "
            f"worker processes x {so['workers_per_process']} workers (commits per process "
            f"{so['commits_per_process']}, verified {so['verified']})"
        )
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
    compact = {k: v for k, v in report.items()}
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
    for key in ("plan_finished_history", "plan_burst"):
        if key in report:
            ok = ok and report[key]["uses_claim_index"]
    return 0 if ok else 1
