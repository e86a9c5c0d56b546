"""Capability `storage` (openspec/specs/storage/spec.md) on a real PostgreSQL."""

from __future__ import annotations

import ast
import datetime as dt
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
import trio
import trio_asyncio

from tests.helpers.postgres import scratch_database
from tests.helpers.sql_text import code_only
from transcriber.db.database import Database, open_database
from transcriber.db.migrations import migrate
from transcriber.db.named_sql import BENCH_AREAS, load_queries, schema_text
from transcriber.milestones import NORMALIZED, TRANSCRIBED
from transcriber.pipeline import operator
from transcriber.pipeline.pg_queue import PgQueue, Saved
from transcriber.pipeline.step_table import step_table

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = (ROOT / "transcriber", ROOT / "actors")

QUEUE_COLUMNS = frozenset(
    {
        "milestone",
        "milestone_entered_at",
        "claim_token",
        "lease_expires_at",
        "attempts",
        "retry_at",
        "stopped_at",
        "stop_reason",
        "stop_error",
        "progress",
    }
)
QUEUE_QUERIES = frozenset(
    {
        "claim",
        "claim_read",
        "commit",
        "fail",
        "stop",
        "progress",
        "renew",
        "release",
        "release_claims",
        "resume",
    }
)
LIVE_QUERIES = frozenset({"live_start", "live_end"})
"""A live session's record made at `live`, the milestone no step claims, and moved to
`received` when the session ends, fenced by the session's own lease (sql/live.sql)."""
LIVE_COLUMNS = ("milestone", "milestone_entered_at")
LIVE_MODULE = "transcriber/live/sessions.py"
OWNER_EDITABLE = frozenset({"title", "summary", "topics"})
OWNER_EDIT_QUERY = "edit_owner_fields"

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
"""The sql/ folder itself, read without the loader."""
QUEUE_MODULE = "transcriber/pipeline/pg_queue.py"
OPERATOR_MODULE = "transcriber/pipeline/operator.py"
# A person's resume is the operator's domain action, not a worker's: it alone runs from
# the operator's module, and from nowhere else.
OPERATOR_QUERIES = frozenset({"resume"})
BENCH_MODULE = "transcriber/bench/claim_plans.py"
# The benchmarks that seed such histories: the claim plans, and the operator's screen's cost.
BENCH_SEEDERS = frozenset({BENCH_MODULE, "transcriber/bench/ops_screen_cost.py"})
# The benchmark seeds a long history of finished records straight at the final
# milestone; such queries are named so, and only the benchmark may run them.
BENCH_SEED_PREFIX = "bench_"
# The benchmark reads the claim's text to EXPLAIN ANALYZE it inside a transaction it
# rolls back: it plans the statement, it leaves nothing written.
EXPLAINED_ELSEWHERE = frozenset({("claim", BENCH_MODULE, "sql")})

# Methods of transcriber.db.Database that take a query name as their first argument.
_BY_NAME = frozenset({"fetch", "fetchrow", "fetchval", "execute", "sql", "_fetchrow", "_fetchval"})


# ---------------------------------------------------------------------------------
# Reading SQL: which columns of which table a statement writes
# ---------------------------------------------------------------------------------


def _set_list(sql: str, start: int) -> list[str]:
    """The assignments of a SET clause starting at `start`, split at top-level commas.
    The clause ends at FROM/WHERE/RETURNING at its own depth, or where its enclosing
    parenthesis (a CTE) closes."""
    items, depth, begin, i = [], 0, start, start
    end_word = re.compile(r"(?i)(FROM|WHERE|RETURNING)\b")
    while i < len(sql):
        c = sql[i]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and c == ",":
            items.append(sql[begin:i])
            begin = i + 1
        elif (
            depth == 0
            and not (sql[i - 1].isalnum() or sql[i - 1] == "_")
            and end_word.match(sql, i)
        ):
            break
        i += 1
    items.append(sql[begin:i])
    return items


def _targets(assignment: str) -> set[str]:
    target = assignment.split("=", 1)[0].strip().strip("()")
    return {t.strip().lower() for t in target.split(",") if t.strip()}


def _add(into: dict[str, set[str]], table: str, cols: set[str]) -> None:
    into.setdefault(table.lower(), set()).update(cols)


_INSERT = re.compile(r"(?i)\bINSERT\s+INTO\s+(\w+)(?:\s+(?:AS\s+)?\w+)?\s*\(([^)]*)\)")


def assigned_columns(sql: str) -> dict[str, set[str]]:
    """Table → columns that `sql` assigns with UPDATE … SET or ON CONFLICT DO UPDATE SET."""
    code = code_only(sql)
    assigned: dict[str, set[str]] = {}
    for m in re.finditer(
        r"(?i)\bUPDATE\s+(?:ONLY\s+)?(\w+)(?:\s+(?:AS\s+)?(?!SET\b)\w+)?"
        r"\s+SET\b",
        code,
    ):
        for item in _set_list(code, m.end()):
            _add(assigned, m.group(1), _targets(item))
    for m in _INSERT.finditer(code):
        upsert = re.compile(r"(?i)\bDO\s+UPDATE\s+SET\b").search(code, m.end())
        if upsert:
            for item in _set_list(code, upsert.end()):
                _add(assigned, m.group(1), _targets(item))
    return assigned


def inserted_columns(sql: str) -> dict[str, set[str]]:
    """Table → columns named in the column lists of `sql`'s INSERTs."""
    inserted: dict[str, set[str]] = {}
    for m in _INSERT.finditer(code_only(sql)):
        _add(inserted, m.group(1), {c.strip().lower() for c in m.group(2).split(",") if c.strip()})
    return inserted


def test_the_sql_reader_sees_nested_assignments() -> None:
    # The queue queries are full of CASE, coalesce(…) and make_interval(secs => …);
    # the reader must neither miss an assignment nor take `secs` for a column.
    sql = """
    -- name: x  (the step's UPDATE journal SET kind = 'x' is a comment, not a write)
    WITH done AS (
        UPDATE recordings r
           SET attempts = attempts + 1, note = 'a, b = c',
               retry_at = CASE WHEN attempts + 1 >= $3 THEN NULL
                               ELSE now() + make_interval(secs => $4) END,
               (stopped_at, stop_reason) = (now(), 'x')
          FROM other WHERE r.id = $1
        RETURNING id
    )
    INSERT INTO journal AS j (recording_id, kind) SELECT id, 'k' FROM done
    ON CONFLICT (recording_id) DO UPDATE SET detail = excluded.detail
    """
    assert assigned_columns(sql) == {
        "recordings": {"attempts", "note", "retry_at", "stopped_at", "stop_reason"},
        "journal": {"detail"},
    }
    assert inserted_columns(sql) == {"journal": {"recording_id", "kind"}}


def _python_files() -> list[Path]:
    return [p for d in CODE_DIRS for p in sorted(d.rglob("*.py"))]


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ---------------------------------------------------------------------------------
# Every recording has an owner
# ---------------------------------------------------------------------------------


@pytest.mark.scenario("storage", "A recording without an owner is refused")
async def test_recording_without_owner_is_refused(db: Database, owner_id: int) -> None:
    with pytest.raises(asyncpg.NotNullViolationError) as no_owner:
        await db.run(lambda con: con.execute("INSERT INTO recordings (filename) VALUES ('a.wav')"))
    assert no_owner.value.column_name == "owner_id"

    unknown = owner_id + 1000
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await db.run(
            lambda con: con.execute(
                "INSERT INTO recordings (owner_id, filename) VALUES ($1, 'a.wav')", unknown
            )
        )
    assert await db.run(lambda con: con.fetchval("SELECT count(*) FROM recordings")) == 0


@pytest.mark.scenario("storage", "A recording without an owner is refused")
async def test_owner_with_recordings_cannot_be_deleted(db: Database, owner_id: int) -> None:
    rid = await db.fetchval("accept", owner_id, "a.wav", 1, "/x", None, None, None)
    with pytest.raises(asyncpg.ForeignKeyViolationError):
        await db.run(lambda con: con.execute("DELETE FROM owners WHERE id = $1", owner_id))
    assert (await db.fetchrow("recording", rid))["owner_id"] == owner_id


# ---------------------------------------------------------------------------------
# Queue columns are a closed set written in one place
# ---------------------------------------------------------------------------------


def claim_function_body() -> str:
    """The statement of claim_next (its last definition in sql/), which the `claim` and
    `commit` queries call: a function only to carry its planner setting and keep its
    plan, so its writes count as the claim's."""
    return re.findall(
        r"CREATE FUNCTION claim_next.*?AS \$claim\$(.*?)\$claim\$;", schema_text(), re.S
    )[-1]


@pytest.mark.scenario("storage", "Only the queue queries write queue columns")
def test_only_queue_queries_write_queue_columns() -> None:
    sql = load_queries(BENCH_AREAS)
    # claim_next writes queue columns for whoever calls it: only queue queries may.
    callers = {n for n, q in sql.items() if "claim_next(" in code_only(q)}
    assert callers == {"claim", "claim_read", "commit"}, callers
    sql["claim"] = sql["claim_read"] = claim_function_body()
    missing = QUEUE_QUERIES - set(sql)
    assert not missing, f"queue queries not in sql/: {sorted(missing)}"
    assigned = {
        n: assigned_columns(q).get("recordings", set()) & QUEUE_COLUMNS for n, q in sql.items()
    }
    inserted = {
        n: inserted_columns(q).get("recordings", set()) & QUEUE_COLUMNS for n, q in sql.items()
    }
    # Each queue query assigns queue columns, which also shows the reader finds them.
    idle = sorted(n for n in QUEUE_QUERIES if not assigned[n])
    assert not idle, f"queue queries that assign no queue column: {idle}"

    offenders = {
        n: sorted(cols)
        for n, cols in assigned.items()
        if cols and n not in QUEUE_QUERIES and not (n in LIVE_QUERIES and cols <= {*LIVE_COLUMNS})
    }
    offenders |= {
        n: sorted(cols)
        for n, cols in inserted.items()
        if cols
        and not n.startswith(BENCH_SEED_PREFIX)
        and not (n in LIVE_QUERIES and cols <= {*LIVE_COLUMNS})
    }
    assert not offenders, f"queries other than the queue's write queue columns: {offenders}"
    # A live session's two may only set its milestone, and only from `live`.
    assert "'live')" in re.sub(r"--[^\n]*", "", sql["live_start"])
    assert "r.milestone = 'live'" in re.sub(r"--[^\n]*", "", sql["live_end"])
    assert set(_query_callers(set(LIVE_QUERIES))) == set(LIVE_QUERIES)
    assert {f for w in _query_callers(set(LIVE_QUERIES)).values() for f, _ in w} == {LIVE_MODULE}


def _query_callers(names: set[str]) -> dict[str, set[tuple[str, str]]]:
    """Query name → (file, method) of every `x.<method>("<name>", …)` in the code."""
    callers: dict[str, set[tuple[str, str]]] = {}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _BY_NAME
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in names
            ):
                callers.setdefault(node.args[0].value, set()).add((_rel(path), node.func.attr))
    return callers


@pytest.mark.scenario("storage", "Only the queue queries write queue columns")
def test_queue_queries_are_called_only_from_the_queue_module() -> None:
    sql = load_queries(BENCH_AREAS)
    seeders = {
        n
        for n, q in sql.items()
        if n.startswith(BENCH_SEED_PREFIX)
        and inserted_columns(q).get("recordings", set()) & QUEUE_COLUMNS
    }
    callers = _query_callers(set(QUEUE_QUERIES) | seeders)
    never = sorted(
        n
        for n in QUEUE_QUERIES
        if not any(
            file == (OPERATOR_MODULE if n in OPERATOR_QUERIES else QUEUE_MODULE)
            for file, _ in callers.get(n, ())
        )
    )
    assert not never, f"queue queries never called from {QUEUE_MODULE}: {never}"

    def allowed(name: str, where: tuple[str, str]) -> bool:
        if name in seeders:
            return where[0] in BENCH_SEEDERS
        if name in OPERATOR_QUERIES:
            return where[0] == OPERATOR_MODULE
        return where[0] == QUEUE_MODULE or (name, *where) in EXPLAINED_ELSEWHERE

    elsewhere = {n: sorted(w for w in found if not allowed(n, w)) for n, found in callers.items()}
    elsewhere = {n: w for n, w in elsewhere.items() if w}
    assert not elsewhere, f"queue queries used outside {QUEUE_MODULE}: {elsewhere}"


@pytest.mark.scenario("storage", "Only the queue queries write queue columns")
def test_no_python_code_writes_recordings_with_its_own_sql() -> None:
    write = re.compile(
        r"(?i)\b(UPDATE\s+(?:ONLY\s+)?recordings|INSERT\s+INTO\s+recordings"
        r"|DELETE\s+FROM\s+recordings|TRUNCATE\s+(?:TABLE\s+)?recordings)\b"
    )
    found = [
        f"{_rel(p)}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0)}"
        for p in _python_files()
        for text in [p.read_text()]
        for m in write.finditer(text)
    ]
    assert not found, "SQL writing recordings outside sql/:\n" + "\n".join(found)


@pytest.mark.scenario("storage", "The pipeline never writes owner fields")
def test_no_query_but_the_owner_edit_writes_owner_fields() -> None:
    # Intake inserts the owner and the title the owner gave; only assignments count
    # here, since an assignment is an overwrite of the owner's word.
    assigned = {
        name: assigned_columns(sql).get("recordings", set())
        for name, sql in load_queries(BENCH_AREAS).items()
    }
    assert assigned[OWNER_EDIT_QUERY] == OWNER_EDITABLE
    owner_fields = OWNER_EDITABLE | {"owner_id"}
    bad = {
        name: sorted(cols & owner_fields)
        for name, cols in assigned.items()
        if name != OWNER_EDIT_QUERY and cols & owner_fields
    }
    assert not bad, f"queries that overwrite owner fields: {bad}"


@pytest.mark.scenario("storage", "The pipeline never writes owner fields")
async def test_the_queue_leaves_owner_fields_alone(db: Database, owner_id: int) -> None:
    async def never_run(job, progress):
        raise AssertionError("the queue is driven by hand here")

    steps = step_table(normalize=never_run, recognize=never_run)
    t0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    queue = PgQueue(db, steps, now=t0)
    rid = await db.fetchval("accept", owner_id, "a.wav", 1, "/x", None, "Title", None)
    await db.fetchval(OWNER_EDIT_QUERY, owner_id, rid, None, "Summary", ["topic"], {"by": "alice"})
    before = await db.fetchrow("recording", rid)

    async def claimed():
        claim = await queue.claim()
        assert claim is not None and claim.id == rid
        job = await queue.read(claim)
        assert job is not None
        return job, steps[job.milestone]

    job, step = await claimed()
    assert await queue.progress(job, 0.5)
    assert (await queue.fail(job, step, "boom"))[0] == "retry"
    queue.now = t0 + dt.timedelta(hours=1)  # past the retry pause
    job, step = await claimed()
    assert await queue.stop(job, "test", "parked")
    await operator.resume(queue.db, rid, by="test", now=queue.now, patience_s=queue.patience_s)
    job, step = await claimed()
    assert await queue.commit(job, step, Saved("save_normalized", ("/a.flac", 1.0)))
    job, step = await claimed()
    assert job.milestone == NORMALIZED
    assert await queue.commit(job, step, Saved("save_transcript", ("text", [], "en", "m")))

    after = await db.fetchrow("recording", rid)
    assert after["milestone"] == TRANSCRIBED
    fields = ("owner_id", "title", "summary", "topics")
    assert (
        {f: after[f] for f in fields}
        == {f: before[f] for f in fields}
        == {"owner_id": owner_id, "title": "Title", "summary": "Summary", "topics": ["topic"]}
    )


# ---------------------------------------------------------------------------------
# Migrations are tracked and applied once
# ---------------------------------------------------------------------------------


def _migration_files() -> list[tuple[int, str]]:
    # Read from the folder itself, not through the loader, so a loader that skips a
    # file shows as a missing row.
    found = []
    for path in sorted(SQL_DIR.glob("*.sql")):
        m = re.fullmatch(r"(\d{4})_(\w+)\.sql", path.name)
        if m:
            found.append((int(m.group(1)), m.group(2)))
    assert found, f"no migrations in {SQL_DIR}"
    return found


async def _applied(db: Database) -> list[tuple[int, str]]:
    rows = await db.run(
        lambda con: con.fetch("SELECT version, name FROM schema_migrations ORDER BY version")
    )
    return [(r["version"], r["name"]) for r in rows]


@pytest.fixture
async def empty_db_url(pg_admin_url: str, aio_loop: None) -> AsyncIterator[str]:
    async with scratch_database(pg_admin_url) as url:
        yield url


@pytest.mark.scenario("storage", "Migrating twice applies nothing the second time")
async def test_empty_database_migrates_once(empty_db_url: str) -> None:
    files = _migration_files()
    async with open_database(empty_db_url, min_size=1, max_size=2) as db:
        assert await migrate(db) == [f"{v:04d}_{n}" for v, n in files]
        assert await migrate(db) == []
        assert await _applied(db) == files


@pytest.mark.scenario("storage", "Migrating twice applies nothing the second time")
async def test_migrated_database_migrates_to_nothing(db: Database) -> None:
    before = await db.run(lambda con: con.fetch("SELECT * FROM schema_migrations"))
    assert await migrate(db) == []
    assert await _applied(db) == _migration_files()
    assert await db.run(lambda con: con.fetch("SELECT * FROM schema_migrations")) == before


_MIGRATE_IN_A_PROCESS = """
import sys, trio, trio_asyncio
from transcriber.db.database import open_database
from transcriber.db.migrations import migrate

async def main():
    async with trio_asyncio.open_loop():
        async with open_database(sys.argv[1], min_size=1, max_size=1) as db:
            print(",".join(await migrate(db)))

trio.run(main)
"""


@pytest.mark.scenario("storage", "Two processes migrate at once")
async def test_two_processes_migrate_at_once(empty_db_url: str) -> None:
    files = _migration_files()
    results: list[trio.CompletedProcess[bytes]] = []

    async def migrate_in_a_process() -> None:
        results.append(
            await trio.run_process(
                [sys.executable, "-c", _MIGRATE_IN_A_PROCESS, empty_db_url],
                cwd=ROOT,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        )

    # The test takes the migration lock first and lets go only once both processes
    # wait on it, so they are certain to meet at the lock rather than one after the other.
    gate = await trio_asyncio.aio_as_trio(asyncpg.connect)(empty_db_url)
    try:
        gate_tx = gate.transaction()
        await trio_asyncio.aio_as_trio(gate_tx.start)()
        await trio_asyncio.aio_as_trio(gate.execute)(load_queries()["migrations_lock"])
        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(migrate_in_a_process)
                nursery.start_soon(migrate_in_a_process)
                while (
                    await trio_asyncio.aio_as_trio(gate.fetchval)(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                        " AND NOT granted AND database = (SELECT oid FROM pg_database"
                        " WHERE datname = current_database())"
                    )
                    < 2
                ):
                    assert len(results) == 0, (
                        "a process ended before reaching the lock: "
                        + results[0].stderr.decode(errors="replace")
                    )
                    await trio.sleep(0.02)  # polling for a state, not waiting out a race
                await trio_asyncio.aio_as_trio(gate_tx.commit)()
    finally:
        with trio.CancelScope(shield=True):
            await trio_asyncio.aio_as_trio(gate.close)()

    for r in results:
        assert r.returncode == 0, r.stderr.decode(errors="replace")
    outputs = sorted(r.stdout.decode().strip() for r in results)
    assert outputs == ["", ",".join(f"{v:04d}_{n}" for v, n in files)]
    async with open_database(empty_db_url, min_size=1, max_size=1) as db:
        assert await _applied(db) == files


# ---------------------------------------------------------------------------------
# The journal is append-only and each milestone is reached once
# ---------------------------------------------------------------------------------

_APPEND = (
    "INSERT INTO journal (recording_id, origin, kind, milestone) VALUES ($1, 'pipeline', $2, $3)"
)


@pytest.mark.scenario("storage", "A second arrival at a milestone is refused")
async def test_second_milestone_reached_is_refused(db: Database, owner_id: int) -> None:
    async def never_run(job, progress):
        raise AssertionError("the queue is driven by hand here")

    queue = PgQueue(db, step_table(normalize=never_run, recognize=never_run))
    rid = await db.fetchval("accept", owner_id, "a.wav", 1, "/x", None, None, None)
    other = await db.fetchval("accept", owner_id, "b.wav", 1, "/y", None, None, None)
    claim = await queue.claim()
    assert claim is not None and claim.id == rid
    job = await queue.read(claim)
    assert job is not None
    assert await queue.commit(job, queue.steps[job.milestone], None)

    with pytest.raises(asyncpg.UniqueViolationError) as again:
        await db.run(lambda con: con.execute(_APPEND, rid, "milestone_reached", NORMALIZED))
    assert again.value.constraint_name == "journal_milestone_once"

    await db.run(lambda con: con.execute(_APPEND, rid, "lease_lost", NORMALIZED))
    await db.run(lambda con: con.execute(_APPEND, rid, "lease_lost", NORMALIZED))
    await db.run(lambda con: con.execute(_APPEND, other, "milestone_reached", NORMALIZED))
    reached = await db.run(
        lambda con: con.fetch(
            "SELECT recording_id FROM journal WHERE kind = 'milestone_reached'"
            " AND milestone = $1 ORDER BY id",
            NORMALIZED,
        )
    )
    assert [r["recording_id"] for r in reached] == [rid, other]


@pytest.mark.scenario("storage", "No query rewrites the journal")
def test_no_query_or_code_rewrites_the_journal() -> None:
    rewrite = re.compile(
        r"(?i)\b(UPDATE\s+(?:ONLY\s+)?journal|DELETE\s+FROM\s+(?:ONLY\s+)?journal"
        r"|TRUNCATE\s+(?:TABLE\s+)?(?:ONLY\s+)?journal)\b"
    )
    found = [
        f"sql/ {name}: {m.group(0)}"
        for name, sql in load_queries(BENCH_AREAS).items()
        for m in rewrite.finditer(code_only(sql))
    ]
    found += [
        f"{_rel(p)}: {m.group(0)}" for p in _python_files() for m in rewrite.finditer(p.read_text())
    ]
    assert not found, "journal rows rewritten:\n" + "\n".join(found)
    # The journal is written at all, and only by inserts: the check above is not idle.
    inserters = [
        n for n, q in load_queries(BENCH_AREAS).items() if "journal" in inserted_columns(q)
    ]
    assert {"accept", "commit", "fail", "stop", "resume"} <= set(inserters)
