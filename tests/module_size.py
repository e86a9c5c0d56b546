"""`python -m tests.module_size FOLDER ...`: no Python module under the folders is longer
than MAX_LINES lines. Prints each one that is, with its count, and exits 1. `just lint`
runs it on actors/, transcriber/ and tests/, so a module's growth is noticed in the
change that makes it, not a round later. There is no allow-list: a module past the limit is split
along its seams.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

MAX_LINES = 600
"""The most lines a module may have: the house's rule, small modules whose names say
what they hold."""


def lines_of(path: Path) -> int:
    """Lines as `wc -l` counts them for a file that ends in a newline."""
    return len(path.read_text(encoding="utf-8").splitlines())


def too_long(folders: Iterable[Path], limit: int = MAX_LINES) -> list[tuple[Path, int]]:
    """Every module under `folders` longer than `limit`, with its count, longest first."""
    found = [
        (path, n)
        for folder in folders
        for path in sorted(folder.rglob("*.py"))
        if (n := lines_of(path)) > limit
    ]
    return sorted(found, key=lambda f: -f[1])


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m tests.module_size FOLDER ...", file=sys.stderr)
        return 2
    missing = [f for f in argv if not Path(f).is_dir()]
    if missing:
        print(f"module_size: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    offenders = too_long(Path(f) for f in argv)
    for path, n in offenders:
        print(f"{path}: {n} lines (at most {MAX_LINES})")
    if offenders:
        print(f"module_size: {len(offenders)} module(s) over {MAX_LINES} lines", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
