"""TRANSCRIBER_HOME, checked before anything is written in it: it can be created, it is
ours, and it takes a write. A home that fails says which folder and what is wrong in one
line, and leaves nothing behind that this check created."""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import shutil
from pathlib import Path

REASONS = {
    errno.EROFS: "it is on a read-only file system",
    errno.ENOSPC: "its file system is full",
    errno.EDQUOT: "its disk quota is used up",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ENOTDIR: "a part of its path is a file, not a folder",
}


class HomeUnusable(Exception):
    """TRANSCRIBER_HOME cannot be used (one line for the operator)."""


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def why(e: OSError) -> str:
    return REASONS.get(e.errno or 0, e.strerror or str(e))


def prepare(home: Path) -> None:
    """Create `home` if missing and check it; raises HomeUnusable."""
    home = home.expanduser().absolute()
    first_made = next((p for p in reversed((home, *home.parents)) if not p.exists()), None)
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        remove(first_made)
        raise HomeUnusable(f"TRANSCRIBER_HOME {home} cannot be created: {why(e)}") from None
    try:
        check(home)
    except HomeUnusable:
        remove(first_made)
        raise


def check(home: Path) -> None:
    if not home.is_dir():
        raise HomeUnusable(f"TRANSCRIBER_HOME {home} is not a folder")
    owner = home.stat().st_uid
    if owner != os.geteuid():
        raise HomeUnusable(
            f"TRANSCRIBER_HOME {home} belongs to {user_name(owner)}, not to "
            f"{user_name(os.geteuid())} who runs transcriber; run it as "
            f"{user_name(owner)} or choose another home"
        )
    probe = home / f".write-probe.{os.getpid()}"
    try:
        with open(probe, "wb") as f:
            f.write(b"\0" * 4096)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise HomeUnusable(f"TRANSCRIBER_HOME {home} cannot be written: {why(e)}") from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()


def remove(made: Path | None) -> None:
    """Remove the folders this check created (`made` is the topmost), if any."""
    if made is not None and made.exists():
        shutil.rmtree(made, ignore_errors=True)
