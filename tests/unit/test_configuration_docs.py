"""docs/configuration.md names every `TRANSCRIBER_*` variable the shipped code reads, and
nothing the code does not read; every relative link of README.md and docs/ leads to a
file (and a heading, where it names one) that exists.

The variables are found with `ast` over `actors/` and `transcriber/`, not by running
anything: a whole string literal that is a name (`os.environ.get("TRANSCRIBER_X")`,
typer's `envvar="TRANSCRIBER_X"`, a module constant), and names assembled from the
prefix — `f"TRANSCRIBER_{name}"` or `"TRANSCRIBER_" + name` inside a function, followed
to the calls of that function in the same module with a literal argument (this is how
`transcriber.config.Config.from_env` reads all of its settings). An assembly the pass
cannot follow (a name that is not the function's parameter, a call with a computed
argument) is reported, so a new way of reading settings fails here until it is taught,
instead of escaping the check.

Out of the check: what only the tests or CI read (`TRANSCRIBER_CI` in `.ci/run`,
`TEST_DATABASE_URL`) — they are not settings of the service; the tests and .ci are not
scanned. Names in messages and docstrings (`f"TRANSCRIBER_MODEL={wanted!r} ..."`) are
mentions, not reads, and count only where a read exists.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
CODE = (ROOT / "actors", ROOT / "transcriber")
DOCS = ROOT / "docs"
CONFIGURATION = DOCS / "configuration.md"

PREFIX = "TRANSCRIBER_"
NAME = re.compile(r"TRANSCRIBER_[A-Z0-9][A-Z0-9_]*")


# --- the variables the code reads ----------------------------------------------------------


@attrs.frozen
class Reads:
    names: frozenset[str]
    unresolved: tuple[str, ...]
    """Assemblies of a name the pass could not follow, with where."""


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing_function(
    node: ast.AST, parents: dict[ast.AST, ast.AST]
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def _assembled_from(node: ast.AST) -> ast.expr | None:
    """The expression put after the prefix, if `node` builds a name from it."""
    if isinstance(node, ast.JoinedStr):
        for before, after in zip(node.values, node.values[1:], strict=False):
            if (
                isinstance(before, ast.Constant)
                and isinstance(before.value, str)
                and re.search(r"(?<![A-Z0-9_])TRANSCRIBER_$", before.value)
                and isinstance(after, ast.FormattedValue)
            ):
                return after.value
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and isinstance(node.left, ast.Constant)
        and node.left.value == PREFIX
    ):
        return node.right
    return None


def _calls_of(tree: ast.AST, function: str, method: bool) -> Iterator[ast.Call]:
    """Calls by the bare name, or (a method) through an attribute: `env.get(…)` is not a
    call of a nested `get`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == function) or (
                method and isinstance(f, ast.Attribute) and f.attr == function
            ):
                yield node


def _argument(
    call: ast.Call, function: ast.FunctionDef | ast.AsyncFunctionDef, param: str
) -> ast.expr | None:
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    for k in call.keywords:
        if k.arg == param:
            return k.value
    if param in params and params.index(param) < len(call.args):
        return call.args[params.index(param)]
    return None


def settings_read(sources: Iterable[tuple[str, str]]) -> Reads:
    """The `TRANSCRIBER_*` names that the modules (where, source text) read."""
    found = [module_reads(where, text) for where, text in sources]
    return Reads(
        frozenset().union(*(r.names for r in found)),
        tuple(u for r in found for u in r.unresolved),
    )


@functools.cache
def module_reads(where: str, text: str) -> Reads:
    names: set[str] = set()
    unresolved: list[str] = []
    tree = ast.parse(text, filename=where)
    parents: dict[ast.AST, ast.AST] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if NAME.fullmatch(node.value):
                names.add(node.value)
            continue
        rest = _assembled_from(node)
        if rest is None:
            continue
        parents = parents or _parents(tree)
        at = f"{where}:{getattr(node, 'lineno', '?')}"
        function = _enclosing_function(node, parents)
        if function is None or not isinstance(rest, ast.Name) or rest.id not in _params(function):
            unresolved.append(f"{at}: a name assembled from something other than a parameter")
            continue
        calls = list(_calls_of(tree, function.name, isinstance(parents[function], ast.ClassDef)))
        if not calls:
            unresolved.append(f"{at}: {function.name}() assembles names but is never called here")
        for call in calls:
            arg = _argument(call, function, rest.id)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.add(PREFIX + arg.value)
            else:
                unresolved.append(
                    f"{where}:{call.lineno}: {function.name}() called without a literal name"
                )
    return Reads(frozenset(names), tuple(unresolved))


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = function.args
    return {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}


def shipped_sources() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
        for folder in CODE
        for path in sorted(folder.rglob("*.py"))
    ]


# --- the variables the page documents -----------------------------------------------------


@attrs.frozen
class Documented:
    rows: frozenset[str]
    """Names in the first cell of a table row: the variables the page describes."""
    mentioned: frozenset[str]
    """Every name anywhere on the page."""


def documented(markdown: str) -> Documented:
    rows = {
        name
        for line in markdown.splitlines()
        if line.startswith("|") and line.count("|") >= 3
        for name in NAME.findall(line.split("|")[1])
    }
    return Documented(frozenset(rows), frozenset(NAME.findall(markdown)))


def configuration_problems(reads: Reads, page: Documented) -> list[str]:
    return (
        [
            f"read by the code, not a row of docs/configuration.md: {n}"
            for n in sorted(reads.names - page.rows)
        ]
        + [
            f"named in docs/configuration.md, read nowhere: {n}"
            for n in sorted(page.mentioned - reads.names)
        ]
        + [f"cannot tell which variable is read: {u}" for u in reads.unresolved]
    )


def test_every_variable_the_code_reads_is_documented_and_no_other() -> None:
    reads = settings_read(shipped_sources())
    assert len(reads.names) > 40, sorted(reads.names)  # the pass still sees config.py
    problems = configuration_problems(reads, documented(CONFIGURATION.read_text(encoding="utf-8")))
    assert problems == []


# --- the check bites ----------------------------------------------------------------------

FROM_ENV = """
import os

def from_env(env):
    def get(name: str) -> str | None:
        return env.get(f"TRANSCRIBER_{name}") or None

    return dict(lease=get("LEASE_S"), planted=get(name="PLANTED_S"))
"""


def test_the_ways_of_reading_a_variable_are_found() -> None:
    reads = settings_read(
        [
            ("config.py", FROM_ENV),
            ("direct.py", 'import os\nX = os.environ.get("TRANSCRIBER_DIRECT")\n'),
            ("flag.py", 'import typer\nO = typer.Option(envvar="TRANSCRIBER_FLAG")\n'),
            (
                "plus.py",
                "import os\n"
                'def read(n):\n    return os.environ["TRANSCRIBER_" + n]\n'
                'read("PLUS")\n',
            ),
            (
                "said.py",
                'def f(w):\n    raise ValueError(f"TRANSCRIBER_MODEL={w!r} is not a model")\n',
            ),
        ]
    )
    assert reads.unresolved == ()
    assert reads.names == {
        "TRANSCRIBER_LEASE_S",
        "TRANSCRIBER_PLANTED_S",
        "TRANSCRIBER_DIRECT",
        "TRANSCRIBER_FLAG",
        "TRANSCRIBER_PLUS",
    }


def test_a_read_the_pass_cannot_follow_is_reported() -> None:
    reads = settings_read(
        [
            ("computed.py", FROM_ENV + 'NAMES = ["X"]\nfor n in NAMES:\n    get(n)\n'),
            ("loose.py", 'import os\nKEY = "A"\nV = os.environ.get(f"TRANSCRIBER_{KEY}")\n'),
        ]
    )
    assert len(reads.unresolved) == 2, reads.unresolved
    assert "computed.py" in reads.unresolved[0] and "loose.py" in reads.unresolved[1]


def test_a_planted_undocumented_variable_fails_the_check() -> None:
    sources = shipped_sources()
    planted = []
    for where, text in sources:
        if where == "transcriber/config.py":
            assert 'storage_url=get("STORAGE_URL"),' in text
            text = text.replace(
                'storage_url=get("STORAGE_URL"),',
                'storage_url=get("STORAGE_URL") or get("PLANTED_BUCKET"),',
            )
        planted.append((where, text))
    planted.append(
        ("transcriber/planted.py", 'import os\nP = os.environ.get("TRANSCRIBER_PLANTED")\n')
    )
    page = documented(CONFIGURATION.read_text(encoding="utf-8"))
    assert configuration_problems(settings_read(planted), page) == [
        "read by the code, not a row of docs/configuration.md: TRANSCRIBER_PLANTED",
        "read by the code, not a row of docs/configuration.md: TRANSCRIBER_PLANTED_BUCKET",
    ]


def test_a_documented_variable_read_nowhere_fails_the_check() -> None:
    text = CONFIGURATION.read_text(encoding="utf-8")
    stale = text + "\n| `TRANSCRIBER_GONE` | a setting since removed | 1 |\n"
    mentioned = text + "\nSee also `TRANSCRIBER_ELSEWHERE`.\n"
    reads = settings_read(shipped_sources())
    assert configuration_problems(reads, documented(stale)) == [
        "named in docs/configuration.md, read nowhere: TRANSCRIBER_GONE"
    ]
    assert configuration_problems(reads, documented(mentioned)) == [
        "named in docs/configuration.md, read nowhere: TRANSCRIBER_ELSEWHERE"
    ]


# --- links --------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def anchors(markdown: str) -> set[str]:
    """The ids GitHub gives the headings: lower case, punctuation dropped, spaces to
    hyphens, a repeat numbered."""
    seen: dict[str, int] = {}
    out = set()
    for title in HEADING.findall(FENCE.sub("", markdown)):
        text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", title).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def link_problems(files: Iterable[Path], root: Path = ROOT) -> list[str]:
    problems = []
    for md in files:
        text = FENCE.sub("", md.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
                continue  # another site: not checked here
            path, _, fragment = target.partition("#")
            file = (md.parent / path).resolve() if path else md
            where = f"{md.relative_to(root)}: {target}"
            if not file.exists():
                problems.append(f"{where}: no such file")
                continue
            if (
                fragment
                and file.suffix == ".md"
                and fragment not in anchors(file.read_text(encoding="utf-8"))
            ):
                problems.append(f"{where}: no such heading")
    return problems


def documentation() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_every_relative_link_leads_somewhere() -> None:
    assert link_problems(documentation()) == []


def test_a_broken_link_is_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# A title, with `code`\n\n## Again\n## Again\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "[ok](docs/there.md) [ok](docs/there.md#a-title-with-code) [ok](docs/there.md#again-1)\n"
        "[web](https://example.com/x) [self](#top)\n"
        "[gone](docs/missing.md) [heading](docs/there.md#nowhere)\n"
        "```\n[in code](docs/not-checked.md)\n```\n# Top\n"
    )
    assert link_problems([readme], tmp_path) == [
        "README.md: docs/missing.md: no such file",
        "README.md: docs/there.md#nowhere: no such heading",
    ]
