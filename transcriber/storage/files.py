"""Private files and folders: what the service writes locally is its owner's alone
(files 0600, folders 0700) whatever the umask."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO


def private_dir(path: Path) -> Path:
    """`path` as a folder only its owner may enter (0700), made with its missing parents
    (each 0700 too), whatever the umask."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for p in reversed(missing):
        with contextlib.suppress(FileExistsError):
            p.mkdir(mode=0o700)
        os.chmod(p, 0o700)  # mkdir's mode is cut by the umask
    if not missing and path.stat().st_mode & 0o777 != 0o700:
        os.chmod(path, 0o700)
    return path


def create_private(path: Path) -> BinaryIO:
    """A new file (never an existing one) open for writing, 0600 whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "wb")


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
