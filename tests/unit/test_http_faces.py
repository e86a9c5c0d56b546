"""The faces of HTTP (transcriber/http/faces.py) stay apart: pyproject.toml's import
contracts fail on a face that imports another and on a core module that imports a face.
Each is proven here on a copy of the code with such an import planted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports_with(
    tmp_path: Path, module: str, planted: str
) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on a copy of the code where `module` (a path under the root)
    also says `planted`."""
    for package in ("actors", "transcriber"):
        shutil.copytree(
            ROOT / package,
            tmp_path / package,
            symlinks=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / module).open("a") as f:
        f.write(f"\n{planted}  # planted\n")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        # The copy, not the checkout the environment has installed.
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        (
            "transcriber/http/page/upload.py",
            "import transcriber.http.api.shapes",
            "the faces of HTTP never import each other BROKEN",
        ),
        (
            "transcriber/http/downloads.py",
            "from transcriber.http.page import text",
            "the core of HTTP imports no face, but app, which assembles them BROKEN",
        ),
        (
            # The watch writes the API's bytes through transcriber.transcripts, below
            # http: reaching up into http for them is a break.
            "transcriber/watch/outputs.py",
            "import transcriber.http.downloads",
            "the product's layers: commands on top, the database at the bottom BROKEN",
        ),
    ],
    ids=["face-imports-face", "core-imports-face", "watch-imports-http"],
)
def test_the_import_contracts_catch_a_planted_import(
    tmp_path: Path, module: str, planted: str, broken: str
) -> None:
    found = lint_imports_with(tmp_path, module, planted)
    assert found.returncode != 0, found.stdout
    assert broken in found.stdout, found.stdout
