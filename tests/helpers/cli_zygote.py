"""A process that has imported the command line once and forks a copy of itself for each
`python -m transcriber ARGS` a test runs (tests/helpers/cli_process.py): the import is
most of a command's cost (about 1.7 s of CPU each, on every one of the suite's
commands), and a fork of it is a process of its own all the same: its own environment,
working folder, standard streams, exit status and children, `transcriber/__main__.py`
run as `-m` runs it.

Run as `python cli_zygote.py SOCKET`: it prints `ready` once it listens on SOCKET (a
Unix stream socket). Each connection is one command: the client sends one JSON object
(args, env, cwd, stdout, stderr: the files the streams go to) and closes its side for
writing; it gets back `{"returncode": N}` when the command has exited, as a shell
reports one (negative: killed by that signal)."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import runpy
import signal
import socket
import sys
import threading
import traceback
from typing import Any, NoReturn


def main(path: str) -> None:
    sys.path[0] = os.getcwd()  # this folder's modules are not the command's
    import transcriber.cli  # noqa: F401  the cost paid once; no thread starts with it

    # The per-command helpers exit on their own; the kernel reaps them.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    server.settimeout(1.0)
    parent = os.getppid()
    print("ready", flush=True)
    while True:
        try:
            con, _ = server.accept()
        except TimeoutError:
            if os.getppid() != parent:
                return  # the test worker is gone (killed: its atexit never ran)
            continue
        con.settimeout(None)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            helper(con)
        con.close()


def helper(con: socket.socket) -> NoReturn:
    """Reads the request, forks the command and waits for it, answers its status.
    (One process in between, so that the zygote itself never waits on anyone.)"""
    try:
        chunks = []
        while chunk := con.recv(65536):
            chunks.append(chunk)
        request = json.loads(b"".join(chunks))
        pid = os.fork()
        if pid == 0:
            con.close()
            command(request)
        _, status = os.waitpid(pid, 0)
        con.sendall(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}).encode())
    finally:
        os._exit(0)


def command(request: dict[str, Any]) -> NoReturn:
    """`python -m transcriber ARGS` in this process, as the interpreter would run it:
    the exit status of SystemExit, a traceback and 1 for anything else, then the
    interpreter's own exit (non-daemon threads joined, atexit hooks, streams flushed)."""
    code = 1
    try:
        if request["cwd"] is not None:
            os.chdir(request["cwd"])
        sys.path[0] = os.getcwd()  # what `-m` puts first
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, name, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(name, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        sys.argv = [sys.argv[0], *request["args"]]
        try:
            runpy.run_module("transcriber", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter exits
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing to flush
                stream.flush()
        os._exit(code & 0xFF)


if __name__ == "__main__":
    main(sys.argv[1])
