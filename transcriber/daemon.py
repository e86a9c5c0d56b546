"""`transcriber serve`: the daemon. Migrations, the HTTP API, the LISTEN wake-ups, N
workers and the systemd watchdog in one trio process; SIGTERM or SIGINT drains it."""

from __future__ import annotations

import errno
import gc
import logging
import signal
from collections.abc import Callable
from typing import Any

import attrs
import trio

from actors.log import event
from actors.sdnotify import Notifier, watchdog
from transcriber.audio.devices import recognizer_info
from transcriber.audio.recognize import ModelUnavailable
from transcriber.config import Config
from transcriber.db.connect import open_session
from transcriber.db.database import Database
from transcriber.pipeline import daemons
from transcriber.pipeline.deletions import keep_removing, keep_retention
from transcriber.pipeline.runner import Pipeline
from transcriber.records.drafts import Drafts
from transcriber.storage.blobs import Blobs, StorageError
from transcriber.storage.configured import blobs_of
from transcriber.watch.scanning import keep_watching


@attrs.frozen
class ServeOptions:
    http: tuple[str, int] | None = ("127.0.0.1", 8080)
    """None: no API (a workers-only host)."""
    workers: int = 2
    grace_s: float = 30.0
    """How long running steps may finish after SIGTERM before they are cut and released."""


ANSWER_PATIENCE_S = 5.0
"""How long a stopping service lets requests that wait on a record send their answer."""


class ListenFailed(Exception):
    """The HTTP address cannot be listened on (one line for the operator)."""


def require_model(config: Config) -> None:
    """The recognizer's model present (the bundled one joined, a named one fetched once)
    and its device possible, before anything starts: a missing one would otherwise stop
    every record at `normalized`. Blocking. Raises ModelUnavailable or DeviceUnavailable
    with one line that says what to do."""
    if config.recognizer_url:
        return
    from transcriber.audio.devices import device_for
    from transcriber.audio.models import resolve_model

    folder = resolve_model(config).path
    if not folder.is_dir():
        raise ModelUnavailable(f"TRANSCRIBER_MODEL {folder}: no such folder")
    if not (folder / "model.bin").is_file():
        raise ModelUnavailable(
            f"TRANSCRIBER_MODEL {folder} is not a CTranslate2 model folder (it has no model.bin)"
        )
    device_for(config)


async def listen(nursery: trio.Nursery, app: Any, host: str, port: int) -> str:
    from transcriber.http import install_hypercorn_error_hook, serve_app

    install_hypercorn_error_hook()
    try:
        address: str = await nursery.start(serve_app, app, host, port)
        return address
    except* OSError as group:
        e: BaseException = group
        while isinstance(e, BaseExceptionGroup):  # the nurseries' groups, nested
            e = e.exceptions[0]
        reason = (
            "the address is in use"
            if getattr(e, "errno", None) == errno.EADDRINUSE
            else getattr(e, "strerror", None) or str(e)
        )
        raise ListenFailed(f"cannot listen on {host}:{port}: {reason}") from None


def parse_http(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def daemon_info(config: Config, options: ServeOptions) -> daemons.DaemonInfo:
    """What the operator's screen says of this daemon."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("transcriber")
    except importlib.metadata.PackageNotFoundError:  # a checkout run in place
        version = "unknown"
    info = recognizer_info(config) if options.workers else {}
    return daemons.DaemonInfo(
        workers=options.workers,
        model=info.get("model"),
        device=info.get("device"),
        version=version,
    )


async def queue_status(db: Database) -> str:
    rows = await db.fetch("status")
    waiting = sum(r["waiting"] for r in rows)
    in_flight = sum(r["in_flight"] for r in rows)
    stopped = sum(r["stopped"] for r in rows)
    return f"waiting={waiting} in_flight={in_flight} stopped={stopped}"


async def database_answers(db: Database) -> bool:
    with trio.move_on_after(5):
        try:
            return await db.run(lambda con: con.fetchval("SELECT true"))
        except Exception:  # any failure means "not healthy"
            return False
    return False


async def sweep_strays(db: Database, store: Blobs) -> None:
    """The start-up sweep, in every daemon: what no record names — uploads a killed
    process stored but never committed (or `submit` stored before its commit failed),
    audio a claim published and could not remove after its commit was refused, part
    files, scratch copies and multipart uploads of a process that is gone — once older
    than an hour (`STRAY_AGE_S`: an upload may be stored before its commit). Deleted
    records' bytes are not its job: `keep_removing` removes them at once, whatever
    their age. Cancellation: what was removed stays removed."""
    try:
        removed = await store.sweep_strays(db)
    except StorageError as e:  # the store is away: sweep at the next start
        event(logging.WARNING, "sweep_skipped", error=str(e))
        removed = []
    if removed:
        event(logging.WARNING, "swept_strays", files=len(removed))


async def serve(
    config: Config,
    options: ServeOptions,
    *,
    steps_for: Callable[..., Any],
    notifier: Notifier | None = None,
    task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run until SIGTERM/SIGINT, then drain and return (exit 0). Runs inside
    `trio_asyncio.open_loop()`.

    `steps_for(config, drafts=…)` makes the step table; the drafts keep what recognition
    has heard so far for the OpenAI endpoint's streamed answers.

    `task_status.started` gets the HTTP base URL (or None) once ready. A signal during
    start-up is held until the start is complete and then drains at once, so the
    embedded database started on the way is always stopped again. Raises
    ModelUnavailable, DeviceUnavailable, ListenFailed, DatabaseUnreachable, HomeUnusable,
    EmbeddedFailed, StorageError when the environment does not allow a start.
    """
    notifier = notifier or Notifier()
    if options.workers:
        require_model(config)
    store = blobs_of(config)  # a bad TRANSCRIBER_STORAGE_URL ends the start here, in one line
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with open_session(config, max_size=options.workers + 8, needs_home=True) as db:
            totals = daemons.RecognitionTotals()
            steps = daemons.timed_recognition(steps_for(config, drafts=Drafts(db)), totals)
            pipeline = Pipeline(db, steps, workers=options.workers)
            async with trio.open_nursery() as nursery:
                url = app = None
                # Deletions whose bytes are not all removed (the process that deleted
                # died, its store was away), now and every few minutes, in every daemon.
                await nursery.start(keep_removing, db, store)
                await sweep_strays(db, store)
                if options.http is not None:
                    from transcriber.http import create_app

                    host, port = options.http
                    app = create_app(db, config)
                    nursery.start_soon(app.state.waiting.follow_journal, db)
                    url = await listen(nursery, app, host, port)
                if options.workers:
                    await nursery.start(pipeline.run)
                # Registered once it works; beats until the nursery ends (cancelled
                # with it, mid-beat or asleep: nothing to undo, the row says stopped
                # below or goes silent).
                daemon_id = await daemons.register(db, daemon_info(config, options))
                nursery.start_soon(daemons.heartbeat, db, daemon_id, pipeline.held, totals)
                # The watched folders, scanned every TRANSCRIBER_WATCH_SCAN_S; cancelled
                # with the rest (a file being taken is let go: transcriber.watch.taking).
                await nursery.start(keep_watching, db, store, config)
                if config.retention_days is not None:
                    # Cancelled with the rest at shutdown: between rounds, or inside one
                    # with what it deleted deleted whole (transcriber.pipeline.deletions).
                    nursery.start_soon(keep_retention, db, store, config.retention_days)
                nursery.start_soon(
                    watchdog, notifier, lambda: database_answers(db), lambda: queue_status(db)
                )
                # What the start made lives as long as the process: out of the
                # collector's way, a full collection no longer walks it (about 25 ms
                # each, a pause for every request in flight).
                gc.freeze()
                notifier.ready(f"serving: workers={options.workers} http={url}")
                # What recognizes here, said once the start has succeeded: a start that
                # fails says only why, in one line.
                event(
                    logging.INFO,
                    "ready",
                    workers=options.workers,
                    http=url,
                    **(recognizer_info(config) if options.workers else {}),
                )
                task_status.started(url)
                async for signum in signals:
                    event(
                        logging.INFO,
                        "shutting_down",
                        signal=signal.Signals(signum).name,
                        grace_s=options.grace_s,
                    )
                    break
                notifier.stopping()
                if app is not None:
                    # Requests waiting on a record answer now, naming it: it goes on
                    # after the restart.
                    await app.state.waiting.stop(ANSWER_PATIENCE_S)
                drained = await pipeline.drain(options.grace_s)
                with trio.move_on_after(ANSWER_PATIENCE_S):  # the database may be away
                    try:
                        await daemons.stopped(db, daemon_id)
                    except Exception as e:  # then the screen shows it silent
                        event(logging.WARNING, "deregister_failed", error=str(e))
                event(logging.INFO, "shut_down", drained=drained)
                nursery.cancel_scope.cancel()
