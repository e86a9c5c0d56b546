"""Route handlers and commands call domain functions, never queries: no module under
transcriber/http or transcriber/cli runs a named query (`fetch`, `fetchrow`, `fetchval`,
`execute`) or reads a query's text (`.sql(...)`). The owner's archive is in
transcriber.records and transcriber.owners, the operator's actions in
transcriber.pipeline.operator."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND_AND_ROUTE_CODE = (ROOT / "transcriber" / "http", ROOT / "transcriber" / "cli")
QUERY_CALLS = frozenset({"fetch", "fetchrow", "fetchval", "execute", "sql"})


def query_calls(source: str, name: str) -> list[str]:
    """Where `source` calls a method that runs a named query or reads its text."""
    return [
        f"{name}:{node.lineno} .{node.func.attr}()"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in QUERY_CALLS
    ]


def test_routes_and_commands_call_no_query() -> None:
    modules = sorted(p for folder in COMMAND_AND_ROUTE_CODE for p in folder.rglob("*.py"))
    assert len(modules) > 20  # the folders are where this test thinks they are
    found = [
        call
        for path in modules
        for call in query_calls(path.read_text(), str(path.relative_to(ROOT)))
    ]
    assert found == [], "call a domain function (transcriber.records, owners, pipeline.operator)"


def test_a_query_in_a_route_is_caught() -> None:
    route = (
        "async def card(db, rid):\n"
        '    row = await db.fetchrow("recording", rid)\n'
        '    return db.sql("recording"), await db.pinned().execute("x")\n'
    )
    assert query_calls(route, "route.py") == [
        "route.py:2 .fetchrow()",
        "route.py:3 .sql()",
        "route.py:3 .execute()",
    ]
    assert query_calls("async def f(db):\n    await check_database(db)\n", "ok.py") == []
