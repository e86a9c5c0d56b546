"""The bench's /proc sampling of CPU time, on real processes: a stand-in "postmaster"
(a Python process) whose children burn CPU, live or already reaped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from transcriber.bench.server_cpu import children, process_cpu_s, server_cpu_s

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"

# Reads commands on stdin: `reaped` runs a burning child to its end and waits for it;
# `live` starts one that burns, then sleeps until stdin closes. Answers each with `ok`.
PARENT = f"""
import subprocess, sys
BURN = {BURN!r}
kept = []
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "reaped":
        subprocess.run([sys.executable, "-c", BURN.format(s=cmd[1])], check=True)
    elif cmd[0] == "live":
        kept.append(subprocess.Popen(
            [sys.executable, "-c", BURN.format(s=cmd[1]) + "import sys; sys.stdin.read()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE))
    print("ok", flush=True)
"""


def _ask(parent: subprocess.Popen[str], line: str) -> None:
    assert parent.stdin is not None and parent.stdout is not None
    parent.stdin.write(line + "\n")
    parent.stdin.flush()
    assert parent.stdout.readline().strip() == "ok"


def test_one_process_cpu_is_what_it_burned() -> None:
    burner = subprocess.Popen(
        [sys.executable, "-c", BURN.format(s=0.3) + "print('done', flush=True)\ninput()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert burner.stdout is not None and burner.stdout.readline().strip() == "done"
        cpu = process_cpu_s(burner.pid)
        # At least what it burned (less a tick of rounding either side), and not wildly more: the
        # interpreter's start is tens of milliseconds.
        assert 0.28 <= cpu < 1.5
    finally:
        burner.communicate("\n")


def test_server_cpu_counts_live_and_reaped_children(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        (tmp_path / "postmaster.pid").write_text(f"{parent.pid}\n{tmp_path}\n")
        before = server_cpu_s(tmp_path)
        _ask(parent, "reaped 0.3")
        # The child has exited: only the parent's cutime still holds its CPU.
        assert children(parent.pid) == []
        after_reaped = server_cpu_s(tmp_path)
        # (Rounded: the figures are whole ticks, and 0.7 - 0.42 is 0.27999... in floats.)
        assert round(after_reaped - before, 2) >= 0.28

        _ask(parent, "live 0.3")
        (live,) = children(parent.pid)
        # A live child's own time, whether or not it has finished burning yet: sample
        # until it has (it sleeps then), no sleeping in the test itself.
        while process_cpu_s(live) < 0.28:
            pass
        assert round(server_cpu_s(tmp_path) - after_reaped, 2) >= 0.28
    finally:
        parent.communicate("")
