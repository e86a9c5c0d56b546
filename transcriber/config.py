"""Configuration from the environment (`TRANSCRIBER_*`); command-line flags override."""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from transcriber.languages import language_hint
from transcriber.options import parse_vocabulary
from transcriber.speaker_options import SpeakersOption


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
    workers × 2 threads recognized the most audio per CPU second (docs/configuration.md)."""
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
    http_max_requests: int = 256
    """Requests the API serves at once; more are answered 503 with Retry-After."""
    http_body_idle_s: float = 30.0
    """A request body that sends nothing for this long is answered 408."""
    http_max_strangers: int = 32
    """Requests with a body that no owner's token or page session vouches for (the page's
    sign-in) served at once, apart from `http_max_requests`; more are answered 503."""
    http_body_deadline_s: float = 20.0
    """A body read whole (an edit, a form, a stranger's) that has not arrived whole after
    this long is answered 408: 128 KiB at 56 kbit/s takes 19 s."""
    owner_max_waiting: int = 16
    """Requests one owner may have under way at once on the OpenAI-compatible endpoint
    (uploading or waiting for their records); more are answered 429. A waiting request
    holds no place of `http_max_requests`."""
    http_allowed_hosts: tuple[str, ...] = ()
    """Host names (with an optional :port) the API answers to; any other Host header is
    answered 421. Empty: every Host (but `/metrics` opened as loopback answers only a
    loopback Host)."""
    owner_max_uploads: int = 4
    """Uploads one owner may send at once; more are answered 429 with Retry-After."""
    owner_max_bytes: int = 50 * 1024**3
    """Bytes of uploads one owner may keep; an upload past it is answered 507."""
    owner_max_audio_hours: float = 500.0
    """Hours of normalized audio one owner may keep (16 kHz s16: 115 MB an hour, so 500 h
    is 58 GB, beside the 50 GiB of uploads): a record whose audio does not fit stops with
    `audio_quota`, and an upload while none is left is answered 507."""
    min_free_bytes: int = 1024**3
    """Free space the local disk keeps (the embedded database may share it): an upload
    into the local folder that would leave less is answered 507; with an object store
    the uploads never touch it; a step's scratch copy is not started below it, and
    normalized audio stops being written before it (the attempt fails)."""
    metrics_token: str | None = None
    """A bearer token that opens /metrics to other hosts than loopback."""
    http_head_timeout_s: float = 5.0
    """A connection without a whole request head for this long (a new one, or one idle
    between requests) is closed."""
    database_timeout_s: float = 30.0
    """Bound of every statement and every wait for a pooled connection."""
    lease_s: float = 30.0
    """A claim lasts this long without a sign of life from its worker."""
    live_max_sessions: int = 2
    """Live sessions of every owner at once (transcriber.http.live); another is refused
    429. What 2 cores decode in real time with the base model (bench-live)."""
    live_policy: str = "agreement"
    """How live text is sent during a turn: `agreement` (LocalAgreement-2: words two
    passes over the growing buffer agree on), or `whole` (the turn's text when it
    ends); bench-live measures both."""
    renew_s: float = 10.0
    """How often a live worker renews its lease."""
    run_limit_s: float = 900.0
    """How long one attempt of a step may run at most (plus the per-audio part)."""
    run_limit_per_audio_s: float = 3.0
    """Recognition's run limit grows by this per second of audio: the slowest model's
    pace with room to spare (see transcriber.pipeline.step_table)."""
    page_session_days: float = 14.0
    """How long a sign-in to the owner's page lasts (revoking the API token ends it)."""
    openai_wait_s: float = 300.0
    """How long a request to the OpenAI-compatible endpoint waits for its record before
    it answers with the record's id instead (the record goes on)."""
    speakers: str = "off"
    """The `speakers` option of a record that asks none (transcriber.speaker_options): off,
    because diarization adds about a third of recognition's CPU time on base (bench-speakers)
    and most uploads are one voice; an owner asks for it per record, or the operator sets
    `auto` for the whole service."""
    vocabulary: tuple[str, ...] = ()
    """Names and terms every record that asks none has the recognizer hear (its
    `vocabulary` option, transcriber.options)."""
    retention_days: float | None = None
    """Records older than this many days are deleted (journaled `deleted`, by
    retention), checked hourly by `serve`; None: kept until their owner deletes them."""
    storage_url: str | None = None
    """`s3://BUCKET/PREFIX`: uploads and audio in that object store (transcriber.storage.blobs);
    None: in the folder under `home`."""

    watch_scan_s: float = 10.0
    """How often `serve` scans the watched folders (transcriber.watch); 0: this daemon
    scans none (another host that can see them does)."""
    watch_quiet_s: float = 20.0
    """How long a file in a watched folder keeps its size and time, over two scans at
    least, before it is taken: a copy that pauses longer is taken half-copied."""
    watch_files_per_scan: int = 10
    """Files read (hashed and taken) per scan, over all watches: the rest wait for the
    next scan."""

    @property
    def models(self) -> Path:
        return self.home / "models"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ) if env is None else env

        def get(name: str) -> str | None:
            return env.get(f"TRANSCRIBER_{name}") or None

        home = get("HOME")
        return cls(
            database_url=get("DATABASE_URL"),
            home=Path(home).expanduser() if home else default_home(),
            # Checked as an upload's hint is: a default the recognizer does not know would
            # fail every record that takes it, minutes after it was accepted.
            language=language_hint(get("LANGUAGE")),
            model=get("MODEL"),
            recognizer_url=get("RECOGNIZER_URL"),
            recognizer_key=get("RECOGNIZER_KEY"),
            max_duration_s=float(get("MAX_DURATION_S") or 4 * 3600),
            max_upload_bytes=int(get("MAX_UPLOAD_BYTES") or 2 * 1024**3),
            cpu_threads=int(get("CPU_THREADS") or 2),
            decoding=get("DECODING") or "batched",
            batch_size=int(get("BATCH_SIZE") or 8),
            recognizer_nice=int(get("RECOGNIZER_NICE") or 10),
            device=get("DEVICE") or "auto",
            compute_type=get("COMPUTE_TYPE") or "auto",
            http_max_requests=int(get("HTTP_MAX_REQUESTS") or 256),
            http_body_idle_s=float(get("HTTP_BODY_IDLE_S") or 30),
            http_max_strangers=int(get("HTTP_MAX_STRANGERS") or 32),
            http_body_deadline_s=float(get("HTTP_BODY_DEADLINE_S") or 20),
            owner_max_waiting=int(get("OWNER_MAX_WAITING") or 16),
            http_allowed_hosts=tuple(
                h.strip().lower() for h in (get("HTTP_ALLOWED_HOSTS") or "").split(",") if h.strip()
            ),
            owner_max_uploads=int(get("OWNER_MAX_UPLOADS") or 4),
            owner_max_bytes=int(get("OWNER_MAX_BYTES") or 50 * 1024**3),
            owner_max_audio_hours=float(get("OWNER_MAX_AUDIO_HOURS") or 500),
            min_free_bytes=int(get("MIN_FREE_BYTES") or 1024**3),
            metrics_token=get("METRICS_TOKEN"),
            http_head_timeout_s=float(get("HTTP_HEAD_TIMEOUT_S") or 5),
            database_timeout_s=float(get("DATABASE_TIMEOUT_S") or 30),
            lease_s=float(get("LEASE_S") or 30),
            renew_s=float(get("RENEW_S") or 10),
            live_max_sessions=int(get("LIVE_MAX_SESSIONS") or 2),
            live_policy=get("LIVE_POLICY") or "agreement",
            run_limit_s=float(get("RUN_LIMIT_S") or 900),
            run_limit_per_audio_s=float(get("RUN_LIMIT_PER_AUDIO_S") or 3),
            page_session_days=float(get("PAGE_SESSION_DAYS") or 14),
            openai_wait_s=float(get("OPENAI_WAIT_S") or 300),
            storage_url=get("STORAGE_URL"),
            speakers=SpeakersOption.parse(get("SPEAKERS") or "off").text,
            vocabulary=parse_vocabulary(get("VOCABULARY")) or (),
            retention_days=float(days) if (days := get("RETENTION_DAYS")) else None,
            watch_scan_s=float(get("WATCH_SCAN_S") or 10),
            watch_quiet_s=float(get("WATCH_QUIET_S") or 20),
            watch_files_per_scan=int(get("WATCH_FILES_PER_SCAN") or 10),
        )
