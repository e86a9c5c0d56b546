"""`transcriber serve`: the daemon."""

from __future__ import annotations

import functools
import logging
from typing import Annotated

import trio_asyncio
import typer

from transcriber.cli.running import fail, run_trio
from transcriber.config import Config


def serve(
    http: Annotated[
        str, typer.Option(help="HOST:PORT of the HTTP API", envvar="TRANSCRIBER_HTTP")
    ] = "127.0.0.1:8080",
    workers: Annotated[
        int, typer.Option(help="worker actors (0: the API only)", envvar="TRANSCRIBER_WORKERS")
    ] = 2,
    api: Annotated[bool, typer.Option(help="serve the HTTP API (--no-api: workers only)")] = True,
    grace: Annotated[
        float,
        typer.Option(
            help="seconds running steps may finish after SIGTERM", envvar="TRANSCRIBER_GRACE_S"
        ),
    ] = 30.0,
) -> None:
    """The daemon: HTTP API, workers and the systemd watchdog, until SIGTERM."""
    from transcriber.daemon import ServeOptions, parse_http
    from transcriber.daemon import serve as run_serve
    from transcriber.pipeline.audio_steps import audio_steps

    logging.getLogger("transcriber").setLevel(logging.INFO)  # not the libraries' chatter
    try:
        address = parse_http(http) if api else None
    except ValueError as e:
        fail(str(e), 1)
    options = ServeOptions(http=address, workers=workers, grace_s=grace)
    config = Config.from_env()

    async def main() -> None:
        async with trio_asyncio.open_loop():
            # One warm recognizer child per worker, loading while the service starts.
            await run_serve(config, options, steps_for=functools.partial(audio_steps, warm=workers))

    run_trio(main)
