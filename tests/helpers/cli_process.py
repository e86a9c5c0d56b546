"""The operator's command line (`python -m transcriber ...`) as a real process."""

from __future__ import annotations

import os
import subprocess
import sys

import trio


async def cli(
    db_url: str | None,
    *args: str,
    home: str | None = None,
    model: str | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m transcriber ARGS` with no TRANSCRIBER_* of this process's environment
    but the database, home and model given; its output as text."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    if db_url:
        env["TRANSCRIBER_DATABASE_URL"] = db_url
    if home:
        env["TRANSCRIBER_HOME"] = home
    if model:
        env["TRANSCRIBER_MODEL"] = model
    result = await trio.run_process(
        [sys.executable, "-m", "transcriber", *args],
        env=env,
        cwd=cwd,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode()
    )
