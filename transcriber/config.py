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
    database_url: str | None = None
    """None: the embedded PostgreSQL under `home`."""
    home: Path = attrs.field(factory=default_home)
    language: str | None = None
    """Default language hint for recognition; None: detect it."""
    model: str | None = None
    """A CTranslate2 Whisper model folder or name; None: the bundled Whisper base."""
    recognizer_url: str | None = None
    """An OpenAI-compatible recognizer to use instead of the local model."""
    recognizer_key: str | None = None
    max_duration_s: float = 4 * 3600.0
    max_upload_bytes: int = 2 * 1024**3
    cpu_threads: int = 1
    storage_url: str | None = None
    """`s3://BUCKET/PREFIX`: uploads and audio in that object store (transcriber.blobs);
    None: in the folder under `home`."""

    @property
    def uploads(self) -> Path:
        return self.home / "uploads"

    @property
    def audio(self) -> Path:
        return self.home / "audio"

    @property
    def models(self) -> Path:
        return self.home / "models"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ) if env is None else env

        def get(name: str) -> str | None:
            return env.get(f"TRANSCRIBER_{name}") or None

        home = get("HOME")
        return cls(database_url=get("DATABASE_URL"),
                   home=Path(home).expanduser() if home else default_home(),
                   language=get("LANGUAGE"), model=get("MODEL"),
                   recognizer_url=get("RECOGNIZER_URL"), recognizer_key=get("RECOGNIZER_KEY"),
                   max_duration_s=float(get("MAX_DURATION_S") or 4 * 3600),
                   max_upload_bytes=int(get("MAX_UPLOAD_BYTES") or 2 * 1024**3),
                   cpu_threads=int(get("CPU_THREADS") or 1),
                   storage_url=get("STORAGE_URL"))
