"""The runtime's boundary: what it exports, how the product reaches it, and that it
names nothing of the product."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

import actors
from actors import log

ROOT = Path(__file__).resolve().parents[2]

PUBLIC_SUBMODULES = {"actors.log", "actors.sdnotify"}
"""Public apart from the runtime: the logfmt event log and systemd's notify protocol."""
TEST_SUBMODULES = {"actors.testing"}
"""The in-memory queue: public, for tests only."""


def test_every_exported_name_exists() -> None:
    assert actors.__all__ == sorted(set(actors.__all__), key=actors.__all__.index)  # no twice
    missing = [name for name in actors.__all__ if not hasattr(actors, name)]
    assert missing == []


def imports_of_actors(folder: Path) -> list[tuple[str, str]]:
    """(file, module) for every `import actors…` or `from actors… import` under folder."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            for module in modules:
                if module == "actors" or module.startswith("actors."):
                    found.append((str(path.relative_to(ROOT)), module))
    return found


@pytest.mark.parametrize(
    ("folder", "allowed"),
    [
        ("transcriber", {"actors"} | PUBLIC_SUBMODULES),
        ("tests", {"actors"} | PUBLIC_SUBMODULES | TEST_SUBMODULES),
    ],
)
def test_the_product_reaches_the_runtime_through_its_public_modules(
    folder: str, allowed: set[str]
) -> None:
    found = imports_of_actors(ROOT / folder)
    assert found, f"the walk found no import of actors in {folder}/"
    assert [(f, m) for f, m in found if m not in allowed] == []


def test_every_public_name_the_product_imports_is_exported() -> None:
    used = set()
    for path in (ROOT / "transcriber").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "actors":
                used |= {a.name for a in node.names}
    assert used and used <= set(actors.__all__)


def test_the_runtime_names_nothing_of_the_product() -> None:
    named = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "actors").rglob("*.py"))
        if "transcriber" in p.read_text().lower()
    ]
    assert named == []
    assert actors.RuntimeMetrics().namespace == "actors"


def test_events_go_to_the_logger_the_product_names(caplog: pytest.LogCaptureFixture) -> None:
    before = log._log.name
    caplog.set_level(logging.INFO)
    try:
        log.use_logger("product")
        log.event(logging.INFO, "started", workers=2)
    finally:
        log.use_logger(before)
    assert [(r.name, r.getMessage()) for r in caplog.records] == [
        ("product", "event=started workers=2")
    ]


def test_describe_gives_the_type_and_the_first_line() -> None:
    error = ValueError("bad header\nat byte 12")
    assert actors.describe(error) == "ValueError: bad header"
    assert actors.describe(error, with_type=False) == "bad header"
    assert actors.describe(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert actors.describe(OSError(""), with_type=False) == "OSError"
