"""The `transcriber` command, one module per command group (transcriber.cli.app puts
them together)."""

from transcriber.cli.app import main

__all__ = ["main"]
