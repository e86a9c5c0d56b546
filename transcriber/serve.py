"""`transcriber serve`: the daemon. Migrations, the HTTP API, the LISTEN wake-ups, N
workers and the systemd watchdog in one trio process; SIGTERM or SIGINT drains it."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from typing import Any

import attrs
import trio

from actors.log import event
from actors.sdnotify import Notifier, watchdog
from transcriber.config import Config
from transcriber.blobs import StorageError, blobs_of
from transcriber.db import Database
from transcriber.runtime import Pipeline
from transcriber.session import open_session


@attrs.frozen
class ServeOptions:
    http: tuple[str, int] | None = ("127.0.0.1", 8080)
    """None: no API (a workers-only host)."""
    workers: int = 2
    grace_s: float = 30.0
    """How long running steps may finish after SIGTERM before they are cut and released."""


def parse_http(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


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
        except Exception:  # noqa: BLE001 - any failure means "not healthy"
            return False
    return False


async def serve(config: Config, options: ServeOptions, *,
                steps_for: Callable[[Config], Any], notifier: Notifier | None = None,
                task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
    """Run until SIGTERM/SIGINT, then drain and return (exit 0). Runs inside
    `trio_asyncio.open_loop()`.

    `task_status.started` gets the HTTP base URL (or None) once ready.
    """
    notifier = notifier or Notifier()
    store = blobs_of(config)  # a bad TRANSCRIBER_STORAGE_URL ends the start here, in one line
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with open_session(config, max_size=options.workers + 8) as db:
            pipeline = Pipeline(db, steps_for(config), workers=options.workers)
            async with trio.open_nursery() as nursery:
                url = None
                if options.http is not None:
                    from transcriber.api import create_app, serve_app

                    # Uploads a killed process wrote but never recorded, audio of claims
                    # that lost their commit.
                    try:
                        removed = await store.sweep_strays(db)
                    except StorageError as e:  # the store is away: sweep next start
                        event(logging.WARNING, "sweep_skipped", error=str(e))
                        removed = []
                    if removed:
                        event(logging.WARNING, "swept_strays", files=len(removed))
                    host, port = options.http
                    url = await nursery.start(serve_app, create_app(db, config), host,
                                              port)
                if options.workers:
                    await nursery.start(pipeline.run)
                nursery.start_soon(watchdog, notifier, lambda: database_answers(db),
                                   lambda: queue_status(db))
                notifier.ready(f"serving: workers={options.workers} http={url}")
                event(logging.INFO, "ready", workers=options.workers, http=url)
                task_status.started(url)
                async for signum in signals:
                    event(logging.INFO, "shutting_down", signal=signal.Signals(signum).name,
                          grace_s=options.grace_s)
                    break
                notifier.stopping()
                drained = await pipeline.drain(options.grace_s)
                event(logging.INFO, "shut_down", drained=drained)
                nursery.cancel_scope.cancel()
