"""The `transcriber` command, one module per command group (transcriber.cli.command_line puts
them together)."""

from transcriber.cli.command_line import main

__all__ = ["main"]
