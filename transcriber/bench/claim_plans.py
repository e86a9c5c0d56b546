"""The claim's plan and latency over a long finished history and after a burst into a
table analyzed while empty."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from actors import StepTable
from transcriber.bench.fresh_databases import Server, fresh_db
from transcriber.bench.instruments import Probe, note, summary_ms
from transcriber.db.database import Database
from transcriber.db.named_sql import BENCH_AREAS, load_queries
from transcriber.pipeline.pg_queue import PgQueue

PLAN_CLAIMS = 200
FINISHED_ROWS = 1_000_000
FINISHED_ELIGIBLE = 1_000
BURST_ROWS = 5_000
CLAIM_INDEX = "recordings_claimable"


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
        if isinstance(v, uuid.UUID):  # typed: an array of quoted text is no uuid[]
            return f"'{v}'::uuid"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        if isinstance(v, int):
            return str(v)
        return repr(float(v))

    return ", ".join(lit(a) for a in args)


async def claim_statement(con: asyncpg.Connection) -> str:
    """The statement inside claim_next, its parameters numbered, with the function's
    settings applied to the current transaction: what EXPLAIN must look at, since the
    plan of a function call shows only the call. (Read by the bench's own query, so any
    connection will do, not only a bench database's.)"""
    row = await con.fetchrow(load_queries(BENCH_AREAS)["claim_function"])
    # The PL/pgSQL body is one `RETURN QUERY <statement>;`.
    found = re.search(r"BEGIN RETURN QUERY(.*?);\s*END", row["prosrc"], re.S)
    sql = found.group(1) if found else row["prosrc"]
    for i, (name, type_) in enumerate(zip(row["names"], row["types"], strict=True), 1):
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
            claim = await claim_statement(con)
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
    # The seeding of a million rows and the EXPLAIN ANALYZE run on the setup's own
    # connection and bound (minutes on a loaded machine, past the service's 30 s); the
    # claims timed here run under the service's bound, as a worker's do.
    async with fresh_db(server, phase, 2) as (db, setup_db, owner_id):
        condition = await setup(setup_db, owner_id)
        steps = Probe().steps()
        plan = await explain_claim(setup_db, claim_args(steps))
        queue = PgQueue(db, steps)
        times = []
        for _ in range(PLAN_CLAIMS):
            t = time.perf_counter()
            claim = await queue.claim()
            times.append(time.perf_counter() - t)
            assert claim is not None, "the claim found no eligible record"
        res: dict[str, Any] = {
            "condition": condition,
            "plan": plan,
            "uses_claim_index": CLAIM_INDEX in plan["indexes"],
            "claims": summary_ms(times),
        }
    note(f"plan {phase} ({condition}):\n  " + "\n  ".join(plan["text"]))
    note(f"plan {phase}: indexes {plan['indexes']}, claim p50 {res['claims']['p50_ms']:.2f} ms")
    return res


async def finished_history(db: Database, owner_id: int) -> str:
    await db.execute("bench_insert_finished", owner_id, FINISHED_ROWS)
    await db.fetchrow("accept_many", owner_id, FINISHED_ELIGIBLE)
    await db.execute("bench_vacuum_analyze")
    return f"{FINISHED_ROWS:,} finished + {FINISHED_ELIGIBLE:,} eligible, VACUUM ANALYZE"


async def burst_after_empty_analyze(db: Database, owner_id: int) -> str:
    await db.execute("bench_autovacuum_off")
    await db.execute("bench_analyze")
    await db.fetchrow("accept_many", owner_id, BURST_ROWS)
    return f"{BURST_ROWS:,} eligible into a table ANALYZEd while empty, not re-analyzed"
