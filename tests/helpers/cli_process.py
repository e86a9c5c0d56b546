"""The operator's command line (`python -m transcriber ...`) as a real process: forked
from a process that has imported it once (tests/helpers/cli_zygote.py), one a test
worker, so that each command costs its own work and not the import again."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import trio

ZYGOTE = Path(__file__).with_name("cli_zygote.py")


class Zygote:
    """The worker's zygote, started at its first command and stopped at the worker's
    exit."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="transcriber-cli-"))
        self.socket = str(self.folder / "zygote")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
        self.proc = subprocess.Popen(
            [sys.executable, str(ZYGOTE), self.socket],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks the worker once, for the import
        assert line.strip() == "ready", f"the command line's zygote did not start: {line!r}"
        atexit.register(self.stop)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_zygote: Zygote | None = None


async def cli(
    db_url: str | None,
    *args: str,
    home: str | None = None,
    model: str | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`python -m transcriber ARGS` with no TRANSCRIBER_* of this process's environment
    but the database, home and model given; its output as text. Cancelling this leaves
    the command to finish on its own."""
    global _zygote
    if _zygote is None:
        _zygote = Zygote()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    if db_url:
        env["TRANSCRIBER_DATABASE_URL"] = db_url
    if home:
        env["TRANSCRIBER_HOME"] = home
    if model:
        env["TRANSCRIBER_MODEL"] = model
    name = uuid.uuid4().hex[:12]
    out, err = _zygote.folder / f"{name}.out", _zygote.folder / f"{name}.err"
    request = {
        "args": list(args),
        "env": env,
        "cwd": None if cwd is None else str(Path(cwd).resolve()),
        "stdout": str(out),
        "stderr": str(err),
    }
    with trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        await sock.connect(_zygote.socket)
        data = memoryview(json.dumps(request).encode())
        while data:
            data = data[await sock.send(data) :]
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := await sock.recv(65536):
            chunks.append(chunk)
    returncode = json.loads(b"".join(chunks))["returncode"]
    try:
        stdout, stderr = out.read_text("utf-8"), err.read_text("utf-8")
    finally:
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "transcriber", *args], returncode, stdout, stderr
    )
