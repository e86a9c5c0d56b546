"""Every call of a named query passes exactly the parameters its text uses; every query
is called from somewhere; every name called exists.

Read from the code with `ast`, no database: a call names its query by a string literal,
in one of these forms (the argument count after it is what the query gets as $1…$N):

- `<db>.fetch("q", a, b)` (also fetchrow, fetchval, execute, and the queue's _fetchrow and
  _fetchval): two parameters.
- `<con>.fetch(<db>.sql("q"), a, b)` or `<con>.fetch(queries["q"], a, b)`: two; also
  where a variable of the same function holds `<db>.sql("q")`.
- `Saved("q", (a, b))`: three; the queue runs it with the record's id first
  (PgQueue._save_on splices `(id, *saved.args)`).

transcriber/ is checked strictly: a `*args` in such a call must be listed in STARRED with
the count it passes, a `.sql("q")` read outside a call in SQL_TEXT_READS, and each entry of
both lists must still be found. tests/ is checked where a call can be counted (its names
must exist); what it cannot count it leaves alone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import attrs

from transcriber.db.named_sql import BENCH_AREAS, load_queries

ROOT = Path(__file__).resolve().parents[2]

BY_NAME = frozenset(
    {"fetch", "fetchrow", "fetchval", "execute", "fetch_within", "_fetchrow", "_fetchval"}
)
"""Methods that take a query's name first (Database's and the queue's wrappers of them;
`fetch_within`'s bound is a keyword, not a parameter of the query)."""
ON_CONNECTION = frozenset({"fetch", "fetchrow", "fetchval", "execute"})
"""asyncpg's methods, given a query's text first."""

STARRED: dict[tuple[str, str], int] = {
    # The claim's first three parameters (milestones, lease bases, lease per second of
    # audio), built from the step table in PgQueue.__attrs_post_init__.
    ("transcriber/pipeline/pg_queue.py", "self._claim_args"): 3,
    # The first and last id an id prefix names (ops_screen.id_range).
    ("transcriber/pipeline/ops_screen.py", "id_range(wanted.search or '')"): 2,
}
"""`*x` arguments of query calls in transcriber/, by file and expression: how many
parameters each passes."""

BY_TABLE: dict[tuple[str, str], int] = {
    # `storage migrate` switches each column by the query its COLUMNS table names:
    # db.fetchval(query, id, local ref, object ref).
    ("transcriber/storage/to_object_store.py", "storage_switch_source"): 3,
    ("transcriber/storage/to_object_store.py", "storage_switch_audio"): 3,
}
"""Queries of transcriber/ called by a name held in a variable, by file and query: how many
parameters that call passes. The file must still name the query (as a string literal)."""

SQL_TEXT_READS: frozenset[tuple[str, str]] = frozenset()
"""`<db>.sql("q")` in transcriber/ whose text is used otherwise than as the first argument
of a call (then its arguments cannot be counted here): by file and query."""

_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_PARAM = re.compile(r"\$(\d+)")


@attrs.frozen
class Call:
    file: str
    line: int
    query: str
    args: int | None
    """Parameters passed; None: not countable here."""
    starred: tuple[str, ...] = ()
    """The `*x` expressions among them."""

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.query}"


def _literal_name(node: ast.expr) -> str | None:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _NAME.fullmatch(node.value)
    ):
        return node.value
    return None


def _sql_of(node: ast.expr) -> str | None:
    """The query named by `<db>.sql("q")` or `queries["q"]`, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "sql"
        and len(node.args) == 1
    ):
        return _literal_name(node.args[0])
    if isinstance(node, ast.Subscript) and (
        (isinstance(node.value, ast.Name) and node.value.id == "queries")
        or (
            isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id == "load_queries"
        )
    ):
        return _literal_name(node.slice)
    return None


def _call(
    file: str, line: int, query: str, args: list[ast.expr], strict: bool, first: int = 0
) -> Call:
    """A call passing `args` (plus `first` the caller adds) to `query`."""
    n: int | None = first
    starred = tuple(ast.unparse(a.value) for a in args if isinstance(a, ast.Starred))
    for a in args:
        if not isinstance(a, ast.Starred):
            n = None if n is None else n + 1
        elif (file, ast.unparse(a.value)) in STARRED:
            n = None if n is None else n + STARRED[file, ast.unparse(a.value)]
        elif strict:
            raise AssertionError(
                f"{file}:{line}: *{ast.unparse(a.value)} passed to {query}: list it in STARRED"
            )
        else:
            n = None
    return Call(file, line, query, n, starred)


def _held_texts(tree: ast.AST) -> dict[tuple[int, str], ast.expr]:
    """`x = <db>.sql("q")` (or `x, y = <db>.sql("q"), …`): by the enclosing function and
    the variable, the `.sql("q")` node it holds."""
    held: dict[tuple[int, str], ast.expr] = {}
    for scope in ast.walk(tree):
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(scope):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0], node.value
            pairs = (
                zip(target.elts, value.elts, strict=True)
                if isinstance(target, ast.Tuple)
                and isinstance(value, ast.Tuple)
                and len(target.elts) == len(value.elts)
                else [(target, value)]
            )
            for name, text in pairs:
                if isinstance(name, ast.Name) and _sql_of(text):
                    held[id(scope), name.id] = text
    return held


def _scopes(tree: ast.AST) -> dict[int, int]:
    """Each node's innermost enclosing function (lambdas see their function's names)."""
    inside: dict[int, int] = {}

    def visit(node: ast.AST, scope: int) -> None:
        for child in ast.iter_child_nodes(node):
            inside[id(child)] = scope
            visit(
                child,
                id(child) if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope,
            )

    visit(tree, id(tree))
    return inside


def calls_in(path: Path, strict: bool, root: Path = ROOT) -> Iterator[Call]:
    """The query calls of one file, named by its path under `root`."""
    file = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(), filename=file)
    held, scope_of = _held_texts(tree), _scopes(tree)
    counted_sql: set[int] = set()  # the .sql("q") nodes whose call is counted
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first, rest = node.args[0], node.args[1:]
        func = node.func
        if isinstance(first, ast.Name) and (scope_of[id(node)], first.id) in held:
            first = held[scope_of[id(node)], first.id]  # the text a variable holds
        if isinstance(func, ast.Attribute) and func.attr in BY_NAME and (q := _literal_name(first)):
            yield _call(file, node.lineno, q, rest, strict)
        elif (
            isinstance(func, ast.Attribute) and func.attr in ON_CONNECTION and (q := _sql_of(first))
        ):
            counted_sql.add(id(first))
            yield _call(file, node.lineno, q, rest, strict)
        elif isinstance(func, ast.Name) and func.id == "Saved" and (q := _literal_name(first)):
            saved = node.args[1] if len(node.args) > 1 else ast.Tuple(elts=[])
            if isinstance(saved, ast.Tuple):
                yield _call(file, node.lineno, q, saved.elts, strict, first=1)  # the id
            elif strict:
                raise AssertionError(f"{file}:{node.lineno}: Saved's arguments are not a tuple")
            else:
                yield Call(file, node.lineno, q, None)
    for node in ast.walk(tree):
        if id(node) not in counted_sql and isinstance(node, ast.Call) and (q := _sql_of(node)):
            yield Call(file, node.lineno, q, None)


def all_calls(folder: str, strict: bool) -> list[Call]:
    found = [
        c
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != Path(__file__).resolve()
        for c in calls_in(path, strict)
    ]
    return sorted(found, key=lambda c: (c.file, c.line))


def by_table() -> list[Call]:
    """BY_TABLE's calls, each where its file names the query."""
    found = []
    for (file, query), n in BY_TABLE.items():
        text = (ROOT / file).read_text()
        assert f'"{query}"' in text, f"{file} no longer names {query}: update BY_TABLE"
        found.append(Call(file, text[: text.index(f'"{query}"')].count("\n") + 1, query, n))
    return found


def parameters(sql: str) -> set[int]:
    """The $N a query's text uses (comments left out)."""
    return {int(n) for n in _PARAM.findall(re.sub(r"--[^\n]*", "", sql))}


def mismatches(calls: list[Call], queries: dict[str, str]) -> list[str]:
    wrong = []
    for c in calls:
        if c.args is None or c.query not in queries:
            continue
        used = parameters(queries[c.query])
        if used != set(range(1, c.args + 1)):
            wrong.append(f"{c}: passes {c.args}, the query uses {sorted(used)}")
    return wrong


QUERIES = load_queries(BENCH_AREAS)
SERVICE = all_calls("transcriber", strict=True) + by_table()


def test_every_query_uses_its_parameters_without_gaps() -> None:
    gaps = {
        name: sorted(used)
        for name, sql in QUERIES.items()
        if (used := parameters(sql)) and used != set(range(1, max(used) + 1))
    }
    assert not gaps, f"queries that skip a parameter: {gaps}"


def test_every_call_passes_what_its_query_uses() -> None:
    assert len([c for c in SERVICE if c.args is not None]) > 60, "the walk finds the calls"
    wrong = mismatches(SERVICE + all_calls("tests", strict=False), QUERIES)
    assert not wrong, "calls that pass other parameters than their query uses:\n" + "\n".join(wrong)


def test_every_called_name_is_a_query() -> None:
    calls = SERVICE + all_calls("tests", strict=False)
    unknown = sorted(str(c) for c in calls if c.query not in QUERIES)
    assert not unknown, f"calls of queries that do not exist: {unknown}"


def test_every_query_is_called_from_the_code() -> None:
    dead = sorted(set(QUERIES) - {c.query for c in SERVICE})
    assert not dead, f"queries nothing in transcriber/ calls: {dead}"


def test_bench_queries_are_called_only_from_the_benches() -> None:
    bench_only = set(QUERIES) - set(load_queries())
    assert bench_only, "the bench area has queries of its own"
    outside = sorted(
        str(c)
        for c in SERVICE
        if c.query in bench_only and not c.file.startswith("transcriber/bench/")
    )
    assert not outside, f"bench queries called by the service: {outside}"


def test_the_reviewed_lists_are_current() -> None:
    starred = {(c.file, s) for c in SERVICE for s in c.starred}
    assert set(STARRED) == starred, f"*args passed to queries in transcriber/: {sorted(starred)}"
    reads = {(c.file, c.query) for c in SERVICE if c.args is None}
    assert reads == SQL_TEXT_READS, f"query texts read outside a call: {sorted(reads)}"


def test_a_wrong_count_is_found(tmp_path: Path) -> None:
    (tmp_path / "wrong.py").write_text(
        "async def f(db, con, sql, rows):\n"
        '    await db.fetchval("owner_add", "ann", b"hash", 1)\n'
        '    await con.fetch(db.sql("owner_by_name"))\n'
        '    held, other = db.sql("owner_revoke"), 1\n'
        "    await db.run(lambda con: con.fetchval(held, 'ann', other))\n"
        '    return Saved("save_normalized", ("/a.flac",))\n'
    )
    calls = sorted(
        calls_in(tmp_path / "wrong.py", strict=True, root=tmp_path), key=lambda c: c.line
    )
    assert mismatches(calls, QUERIES) == [
        "wrong.py:2 owner_add: passes 3, the query uses [1, 2]",
        "wrong.py:3 owner_by_name: passes 0, the query uses [1]",
        "wrong.py:5 owner_revoke: passes 2, the query uses [1]",
        "wrong.py:6 save_normalized: passes 2, the query uses [1, 2, 3]",
    ]
