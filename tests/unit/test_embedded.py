"""The embedded server's home: reachable by the database's own user, or refused."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from transcriber.embedded import HomeUnreachable, check_reachable


def test_a_home_inside_a_closed_folder_is_refused(tmp_path: Path) -> None:
    closed = tmp_path / "private"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    with pytest.raises(HomeUnreachable, match="private.*cannot enter.*700"):
        check_reachable(closed / "transcriber")


def test_a_home_under_open_folders_is_fine() -> None:
    # Not under pytest's tmp_path: its own parent is closed (0700).
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        Path(folder).chmod(0o755)
        check_reachable(Path(folder) / "transcriber")
