"""The `transcriber` command: the operator's tools, one module per command group, put
together here in the order `--help` lists them. Exit codes: see
transcriber.cli.running."""

from __future__ import annotations

import logging
import sys

import typer

from actors.log import use_logger
from transcriber.cli import (
    bench_commands,
    daemon_commands,
    model_commands,
    operator_commands,
    ops_commands,
    record_commands,
)
from transcriber.cli.ops_commands import operator_app
from transcriber.cli.owner_commands import owner_app
from transcriber.cli.share_commands import share_app
from transcriber.cli.storage_commands import storage_app
from transcriber.cli.subtitle_commands import subtitles_app
from transcriber.cli.watch_commands import watch_app

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Audio recordings in, text out, on a durable PostgreSQL pipeline.",
)
app.add_typer(owner_app, name="owner")
app.add_typer(operator_app, name="operator")
app.add_typer(share_app, name="share")
app.add_typer(storage_app, name="storage")
app.add_typer(subtitles_app, name="subtitles")
app.add_typer(watch_app, name="watch")
for command in (
    operator_commands.migrate,
    operator_commands.status,
    operator_commands.stopped,
    operator_commands.resume,
    operator_commands.journal,
    ops_commands.daemons,
    daemon_commands.serve,
    record_commands.submit,
    record_commands.transcribe,
    record_commands.delete,
    bench_commands.bench,
    bench_commands.bench_audio,
    bench_commands.bench_speakers,
    bench_commands.bench_subtitles,
    bench_commands.bench_api,
    bench_commands.bench_live,
    model_commands.models,
):
    app.command()(command)


def main() -> None:
    # The service log goes to stderr, one logfmt line an event; the command line shows
    # warnings and worse, `serve` shows everything.
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    use_logger("transcriber")  # the runtime's events and ours, under the product's name
    app()
