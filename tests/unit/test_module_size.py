"""The lint check on module size (tests/module_size.py): a module one line past the
limit fails it, one at the limit passes, and the tree passes it, tests included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.module_size import MAX_LINES, main, too_long

ROOT = Path(__file__).resolve().parents[2]


def plant(folder: Path, name: str, lines: int) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"x{i} = {i}\n" for i in range(lines)))
    return path


def test_a_module_one_line_past_the_limit_fails_the_check(tmp_path: Path) -> None:
    plant(tmp_path, "fine.py", MAX_LINES)
    long = plant(tmp_path, "deep/down/grown.py", MAX_LINES + 1)
    assert too_long([tmp_path]) == [(long, 601)]
    # As `just lint` runs it: a command that names the module and its count, and fails.
    run = subprocess.run(
        [sys.executable, "-m", "tests.module_size", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert f"{long}: 601 lines (at most 600)" in run.stdout


def test_a_module_at_the_limit_passes(tmp_path: Path) -> None:
    plant(tmp_path, "full.py", MAX_LINES)
    assert too_long([tmp_path]) == []
    assert main([str(tmp_path)]) == 0


def test_lint_runs_the_check_on_the_code_and_its_tests() -> None:
    assert (
        "check python -m tests.module_size actors transcriber tests\n"
        in (ROOT / "justfile").read_text()
    )


def test_no_module_is_over_the_limit() -> None:
    offenders = too_long([ROOT / "actors", ROOT / "transcriber", ROOT / "tests"])
    assert not offenders, "split these along their seams: " + ", ".join(
        f"{p.relative_to(ROOT)} ({n})" for p, n in offenders
    )
