"""What the operator's screen's queries cost over a long history: 1 M finished records
(a week of them, with the journal each leaves), 1,000 stopped and 1,000 waiting; each
query of the screen run under EXPLAIN (ANALYZE, BUFFERS) with the arguments the screen
passes. `python -m transcriber.bench.ops_screen_cost [ROWS]` prints a table and the
plans' top lines (TRANSCRIBER_BENCH_DATABASE_URL or an embedded server, as the other
benches)."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
import uuid
from typing import Any

import trio
import trio_asyncio

from transcriber.bench.fresh_databases import Server, fresh_db
from transcriber.db.database import Database
from transcriber.pipeline.ops_screen import REACHED

FINISHED_ROWS = 1_000_000
STOPPED_ROWS = 1_000
WAITING_ROWS = 1_000
WEEK_S = 7 * 86400
SLOW_MS = 20.0


def screen_queries(owner: str, stopped_id: uuid.UUID) -> list[tuple[str, str, tuple[Any, ...]]]:
    """(label, query name, arguments) as the screen runs them."""
    hour, day = dt.timedelta(hours=1), dt.timedelta(days=1)
    minute, half = dt.timedelta(minutes=1), dt.timedelta(minutes=30)
    return [
        ("glance table (operator.sql status)", "status", ()),
        ("audio waiting", "ops_audio_waiting", ()),
        ("reached, hour by minute", "ops_reached", (hour, minute, REACHED)),
        ("reached, day by 30 min", "ops_reached", (day, half, REACHED)),
        ("stops, hour by minute", "ops_stops", (hour, minute)),
        ("stops, day by 30 min", "ops_stops", (day, half)),
        ("stopped, all", "ops_stopped", (None, None, None, None, None, 1000, None)),
        (
            "stopped, reason+owner+age",
            "ops_stopped",
            ("too_long", "normalized", owner, 3600.0, None, 1000, None),
        ),
        ("stopped, file search", "ops_stopped", (None, None, None, None, "stopped-17", 1000, None)),
        ("search by id", "ops_search", (str(stopped_id), 100, stopped_id)),
        ("search by owner", "ops_search", (owner, 100, None)),
        ("search by file name", "ops_search", ("done-4242", 100, None)),
        ("search by common file part", "ops_search", ("done-", 100, None)),
        ("one record", "ops_record", (stopped_id,)),
        ("its journal", "ops_journal", (stopped_id, 5000)),
        ("daemons", "daemons_list", (dt.timedelta(days=1),)),
    ]


async def explain(db: Database, name: str, args: tuple[Any, ...]) -> dict[str, Any]:
    sql = db.sql(name)

    async def work(con: Any) -> Any:
        return await con.fetchval("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, *args)

    found = await db.run(work)
    plan = (json.loads(found) if isinstance(found, str) else found)[0]
    top = plan["Plan"]
    return {
        "ms": plan["Execution Time"],
        "top": top["Node Type"],
        "rows": top.get("Actual Rows"),
        "buffers": top.get("Shared Hit Blocks", 0) + top.get("Shared Read Blocks", 0),
    }


async def plan_text(db: Database, name: str, args: tuple[Any, ...]) -> list[str]:
    sql = "EXPLAIN (ANALYZE, BUFFERS) " + db.sql(name)

    async def work(con: Any) -> list[str]:
        return [r[0] for r in await con.fetch(sql, *args)]

    return await db.run(work)


async def measure(rows: int) -> list[tuple[str, dict[str, Any]]]:
    server = Server()
    server.start()
    try:
        # The seeding runs on the setup connection, not under the service's statement
        # bound; the screen's queries are measured under it, as the screen runs them.
        async with fresh_db(server, "ops_screen", 2) as (db, setup, owner_id):
            t = time.perf_counter()
            await setup.execute("bench_ops_history", owner_id, rows, WEEK_S / rows)
            await setup.execute("bench_ops_stopped", owner_id, STOPPED_ROWS)
            await setup.fetchrow("accept_many", owner_id, WAITING_ROWS)
            await setup.execute("bench_vacuum_analyze")
            await setup.execute("bench_vacuum_journal")  # as autovacuum does an append-only
            await setup.execute("bench_analyze")
            print(f"seeded {rows:,} finished in {time.perf_counter() - t:.0f} s", file=sys.stderr)
            stopped_id = (await db.fetch("stopped", "too_long"))[0]["id"]
            results = []
            for label, name, args in screen_queries("bench", stopped_id):
                await explain(db, name, args)  # warm: the screen runs them every 5 s
                cost = await explain(db, name, args)
                results.append((label, cost))
                if cost["ms"] > SLOW_MS:  # say why: its plan
                    lines = await plan_text(db, name, args)
                    print(f"-- {label}:", *lines, sep="\n  ", file=sys.stderr)
            return results
    finally:
        await server.drop_databases()
        server.stop()


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else FINISHED_ROWS

    async def run() -> list[tuple[str, dict[str, Any]]]:
        async with trio_asyncio.open_loop():
            return await measure(rows)

    results = trio.run(run)
    print(f"{'query':<28} {'ms':>9} {'rows':>7} {'buffers':>8}  top node")
    for label, r in results:
        print(f"{label:<28} {r['ms']:>9.2f} {r['rows']:>7} {r['buffers']:>8}  {r['top']}")


if __name__ == "__main__":
    main()
