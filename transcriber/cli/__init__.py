"""The `transcriber` command, one module per command group."""
