"""Configuration from the environment (`TRANSCRIBER_*`); command-line flags override."""

from __future__ import annotations

import os
from pathlib import Path

import attrs


def default_home() -> Path:
    if os.geteuid() == 0:
        return Path("/var/lib/transcriber")
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "transcriber"


@attrs.frozen
class Config:
    database_url: str | None
    """None: the embedded PostgreSQL under `home`."""
    home: Path

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ) if env is None else env
        home = env.get("TRANSCRIBER_HOME")
        return cls(database_url=env.get("TRANSCRIBER_DATABASE_URL") or None,
                   home=Path(home).expanduser() if home else default_home())
