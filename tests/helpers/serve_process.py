"""`transcriber serve` as a process of its own, for the tests that need the real daemon."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import trio


@attrs.define
class ServeProcess:
    url: str
    proc: trio.Process
    log: Path

    async def stop(self) -> int:
        """SIGTERM, as systemd stops it; its exit code."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        with trio.fail_after(60):
            return await self.proc.wait()


@contextlib.asynccontextmanager
async def serve_process(
    db_url: str, home: Path, *args: str, **env: str
) -> AsyncIterator[ServeProcess]:
    """`transcriber serve` as a process of its own on a free loopback port. Leaving the
    block stops it (SIGTERM, then SIGKILL if it does not exit)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    environ.update(
        TRANSCRIBER_DATABASE_URL=db_url,
        TRANSCRIBER_HOME=str(home),
        **{f"TRANSCRIBER_{k.upper()}": v for k, v in env.items()},
    )
    home.mkdir(parents=True, exist_ok=True)
    log = home / f"serve-{uuid.uuid4().hex[:8]}.log"
    with open(log, "wb") as out:
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "transcriber", "serve", "--http", "127.0.0.1:0", *args],
            env=environ,
            stderr=out,
            stdout=subprocess.DEVNULL,
        )
    try:
        with trio.fail_after(120):
            # `--no-api`: ready without an address (the url is then "").
            while not (
                ready := re.search(r"\bevent=ready\b(?:[^\n]*http=(\S+))?", log.read_text())
            ):
                assert proc.poll() is None, log.read_text()
                await trio.sleep(0.05)
        yield ServeProcess((ready.group(1) or "").strip('"'), proc, log)
    finally:
        with trio.CancelScope(shield=True):
            try:
                await ServeProcess("", proc, log).stop()
            except trio.TooSlowError:
                proc.kill()
                await proc.wait()
