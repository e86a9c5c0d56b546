"""CPU seconds of processes read from /proc: of one process, and of a PostgreSQL server
(the postmaster and every backend and helper it runs).

Standard library only: the peers' side of the bench (peers_side.py) imports it from
their virtualenv, where nothing of transcriber's dependencies is installed.

A server's figure is the sum, over its live processes, of their own user + system time,
plus the time of the children the postmaster has reaped (its `cutime + cstime`): a
backend that exits between two samples is then still counted, in full, by the second
one. The difference of two samples is the server's CPU in between (Linux only).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (field 3, `state`, first):
    the name is in parentheses and may hold spaces or parentheses itself."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text.rpartition(")")[2].split()


def process_cpu_s(pid: int, *, reaped_children: bool = False) -> float:
    """User + system CPU seconds of `pid`; with `reaped_children` also those of its
    children it has waited for. Raises OSError when the process is gone."""
    f = stat_fields(pid)
    # After the name: state=0 ... utime=11 stime=12 cutime=13 cstime=14.
    ticks = int(f[11]) + int(f[12])
    if reaped_children:
        ticks += int(f[13]) + int(f[14])
    return ticks / TICKS_PER_S


def postmaster_pid(pgdata: Path) -> int:
    """The postmaster's pid, the first line of its postmaster.pid."""
    return int((pgdata / "postmaster.pid").read_text().splitlines()[0])


def children(pid: int) -> list[int]:
    """Live child processes of `pid` (zombies excluded: reaped, they count in the
    parent's cutime)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            f = stat_fields(int(proc.name))
        except OSError:
            continue  # gone meanwhile
        if int(f[1]) == pid and f[0] != "Z":
            found.append(int(proc.name))
    return found


def sum_cpu_s(pids: Iterable[int]) -> float:
    total = 0.0
    for pid in pids:
        # Exited meanwhile: counted by its parent's cutime once reaped.
        with contextlib.suppress(OSError):
            total += process_cpu_s(pid)
    return total


def server_cpu_s(pgdata: Path) -> float:
    """CPU seconds the server of `pgdata` has used so far: the postmaster's own and its
    reaped children's, and its live children's. Compare two samples."""
    pm = postmaster_pid(pgdata)
    return process_cpu_s(pm, reaped_children=True) + sum_cpu_s(children(pm))
