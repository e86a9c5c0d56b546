"""Every scenario of openspec/specs/<capability>/spec.md is proved by a test marked
`@pytest.mark.scenario("<capability>", "<title>")`, and every such marker names a
scenario that exists.

Markers are read with `ast` rather than collected by pytest, so the check sees every
test file whether or not it imports, and runs in a fraction of a second. Besides the
plain decorator, a module may define a one-line helper
`def scenario(title): return pytest.mark.scenario("<capability>", title)` and decorate
with `@scenario("<title>")`; a scenario mark in any other form is reported, so no way
of marking escapes the check silently.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections import Counter
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "openspec" / "specs"
TESTS = ROOT / "tests"

_SCENARIO = re.compile(r"^####\s+Scenario:\s*(.+?)\s*$", re.MULTILINE)


@attrs.frozen
class Marker:
    capability: str | None
    title: str | None
    where: str
    problem: str | None = None
    """Why the marker cannot count (not literal strings, marks no test), if so."""


def spec_scenarios(specs: Path = SPECS) -> dict[str, list[str]]:
    """Capability (the folder name) → its scenario titles, in file order, repeats kept."""
    return {
        path.parent.name: _SCENARIO.findall(path.read_text())
        for path in sorted(specs.glob("*/spec.md"))
    }


def _is_scenario_mark(node: ast.expr) -> bool:
    # `pytest.mark.scenario` or, after `from pytest import mark`, `mark.scenario`.
    if not (isinstance(node, ast.Attribute) and node.attr == "scenario"):
        return False
    owner = node.value
    if isinstance(owner, ast.Name):
        return owner.id == "mark"
    return (
        isinstance(owner, ast.Attribute)
        and owner.attr == "mark"
        and isinstance(owner.value, ast.Name)
        and owner.value.id == "pytest"
    )


def _literal(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _helpers(tree: ast.Module) -> dict[str, tuple[str, ast.Call]]:
    """Module-level `def f(title): return pytest.mark.scenario("<capability>", title)`,
    by name: (the capability, the call inside)."""
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        body = [b for b in node.body if not (isinstance(b, ast.Expr) and _literal(b.value))]
        params = node.args.posonlyargs + node.args.args
        if not (
            len(body) == 1
            and isinstance(body[0], ast.Return)
            and isinstance(body[0].value, ast.Call)
        ):
            continue
        call = body[0].value
        capability = _literal(call.args[0]) if call.args else None
        if (
            _is_scenario_mark(call.func)
            and capability is not None
            and len(params) == 1
            and len(call.args) == 2
            and not call.keywords
            and isinstance(call.args[1], ast.Name)
            and call.args[1].id == params[0].arg
        ):
            found[node.name] = (capability, call)
    return found


def file_markers(path: Path, root: Path = ROOT) -> list[Marker]:
    """Scenario markers of one test file: decorators of functions and classes, and a
    module or class `pytestmark`; any other scenario mark comes back with a problem."""
    rel = path.relative_to(root) if path.is_relative_to(root) else path
    tree = ast.parse(path.read_text(), filename=str(path))
    helpers = _helpers(tree)
    read = {id(call) for _, call in helpers.values()}
    found: list[Marker] = []

    def add(node: ast.expr, where: str, marks_a_test: bool) -> None:
        for e in node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]:
            if not isinstance(e, ast.Call):
                continue
            if _is_scenario_mark(e.func):
                args = [_literal(a) for a in e.args]
            elif isinstance(e.func, ast.Name) and e.func.id in helpers:
                args = [helpers[e.func.id][0], *(_literal(a) for a in e.args)]
            else:
                continue
            read.add(id(e))
            at = f"{rel}:{e.lineno} {where}"
            if e.keywords or len(args) != 2 or None in args:
                found.append(Marker(None, None, at, "arguments must be string literals"))
            else:
                found.append(
                    Marker(
                        args[0], args[1], at, None if marks_a_test else "marks something not a test"
                    )
                )

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            prefix = "Test" if isinstance(node, ast.ClassDef) else "test"
            for deco in node.decorator_list:
                add(deco, node.name, node.name.startswith(prefix))
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            add(node.value, "pytestmark", True)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and id(node) not in read
            and (
                _is_scenario_mark(node.func)
                or (isinstance(node.func, ast.Name) and node.func.id in helpers)
            )
        ):
            found.append(
                Marker(
                    None,
                    None,
                    f"{rel}:{node.lineno}",
                    "a scenario mark that is not a decorator cannot be read",
                )
            )
    return found


def marked_scenarios(tests: Path = TESTS, root: Path = ROOT) -> list[Marker]:
    return [m for path in sorted(tests.rglob("*.py")) for m in file_markers(path, root)]


def missing_scenarios(specs: dict[str, list[str]], markers: list[Marker]) -> list[str]:
    covered = {(m.capability, m.title) for m in markers if m.problem is None}
    return [
        f"{cap}: {title}"
        for cap, titles in specs.items()
        for title in titles
        if (cap, title) not in covered
    ]


def bad_markers(specs: dict[str, list[str]], markers: list[Marker]) -> list[str]:
    bad = []
    for m in markers:
        if m.problem is not None:
            bad.append(f"{m.where}: {m.problem}")
        elif m.capability not in specs:
            bad.append(f"{m.where}: no capability {m.capability!r} (have {sorted(specs)})")
        elif m.title not in specs[m.capability]:
            bad.append(f"{m.where}: no scenario {m.title!r} in {m.capability}")
    return bad


def _listing(lines: list[str]) -> str:
    return "\n  " + "\n  ".join(lines)


def test_every_scenario_has_a_test() -> None:
    missing = missing_scenarios(spec_scenarios(), marked_scenarios())
    assert not missing, f"{len(missing)} scenario(s) have no marked test:{_listing(missing)}"


def test_every_marker_names_a_scenario() -> None:
    bad = bad_markers(spec_scenarios(), marked_scenarios())
    assert not bad, f"{len(bad)} marker(s) name no scenario:{_listing(bad)}"


def test_specs_have_unique_scenarios() -> None:
    specs = spec_scenarios()
    assert specs, f"no openspec/specs/*/spec.md under {SPECS}"
    empty = [cap for cap, titles in specs.items() if not titles]
    assert not empty, f"capabilities without a scenario: {empty}"
    repeated = [
        f"{cap}: {title}"
        for cap, titles in specs.items()
        for title, n in Counter(titles).items()
        if n > 1
    ]
    assert not repeated, f"scenario titles repeated within a capability:{_listing(repeated)}"


def test_the_check_finds_gaps_and_typos(tmp_path: Path) -> None:
    """The functions above on a small tree, so a check that always passes shows here."""
    spec = tmp_path / "specs" / "cap" / "spec.md"
    spec.parent.mkdir(parents=True)
    spec.write_text(
        textwrap.dedent("""\
        # cap
        ### Requirement: R
        #### Scenario: Covered
        - **GIVEN** x
        #### Scenario: Covered by a class
        #### Scenario: Covered by a helper
        """)
        + "#### Scenario:   Uncovered  \n"  # spaces around the title, trailing ones too
    )
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_x.py").write_text(
        textwrap.dedent("""\
        import pytest
        from pytest import mark

        def scenario(title):
            "One capability per module."
            return pytest.mark.scenario("cap", title)

        @pytest.mark.slow
        @pytest.mark.scenario("cap", "Covered")
        async def test_a(): ...

        @mark.scenario("cap", "Coverd")
        @pytest.mark.scenario("nocap", "Covered")
        def test_b(): ...

        @pytest.mark.scenario("cap", TITLE)
        def test_c(): ...

        @pytest.mark.scenario("cap", "Uncovered")
        def helper(): ...

        @pytest.mark.scenario("cap", "Covered by a class")
        class TestThing:
            def test_d(self): ...

        @scenario("Covered by a helper")
        def test_e(): ...

        UNCOVERED = pytest.mark.scenario("cap", "Uncovered")
        """)
    )
    specs = spec_scenarios(tmp_path / "specs")
    assert specs == {"cap": ["Covered", "Covered by a class", "Covered by a helper", "Uncovered"]}
    markers = marked_scenarios(tests, tmp_path)

    assert missing_scenarios(specs, markers) == ["cap: Uncovered"]
    assert sorted(b.split(": ", 1)[1] for b in bad_markers(specs, markers)) == [
        "a scenario mark that is not a decorator cannot be read",
        "arguments must be string literals",
        "marks something not a test",
        "no capability 'nocap' (have ['cap'])",
        "no scenario 'Coverd' in cap",
    ]
