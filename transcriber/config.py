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
    cpu_threads: int = 2
    """CTranslate2 threads per recognition. Measured on 2 cores, a queue of files: 2
    workers × 2 threads recognized the most audio per CPU second (see the README)."""
    decoding: str = "batched"
    """batched (VAD-segmented, faster-whisper's BatchedInferencePipeline) or sequential."""
    batch_size: int = 8
    """Speech pieces (up to 30 s each) decoded together by the batched pipeline."""
    recognizer_nice: int = 10
    """Added to the recognizer processes' nice value: the API and the queue come first."""
    device: str = "auto"
    """auto (CUDA when CTranslate2 sees a GPU, else CPU), cpu or cuda."""
    compute_type: str = "auto"
    """auto (float16 on CUDA, int8 on CPU) or any CTranslate2 compute type."""

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
                   cpu_threads=int(get("CPU_THREADS") or 2),
                   decoding=get("DECODING") or "batched",
                   batch_size=int(get("BATCH_SIZE") or 8),
                   recognizer_nice=int(get("RECOGNIZER_NICE") or 10),
                   device=get("DEVICE") or "auto",
                   compute_type=get("COMPUTE_TYPE") or "auto")
