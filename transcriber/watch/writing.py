"""Writing beside an owner's file without ever touching the owner's own files: each
note or transcript is written whole into a hidden part file of ours, then linked to
its name only if that name is free (`link` fails on an existing name, atomically). A
name taken by a file with other bytes is the owner's (or another file's transcript of
the same stem): it is left as it is and the write says so. Blocking functions (the scan
runs them in a thread)."""

from __future__ import annotations

import errno
import logging
import os
import re
import time
import uuid
from pathlib import Path

from actors.log import event

WRITTEN = "written"
SAME = "same"
"""The name holds these bytes already: a write of ours before a restart, or of another
daemon sharing the folder."""
KEPT = "kept"
"""The name holds other bytes: the owner's file, kept as it is; nothing written."""
TOO_LONG = "not written (name too long)"
"""The name is longer than the folder (or the object store) takes: nothing written,
and no write will ever be (a file named at the length limit has no room for `.stopped.txt`)."""

PART_NAME_BYTES = 100
"""Bytes of the target's name a part file's name holds: the whole name and the part's
31 bytes would pass a file system's 255 with a name of 225 (120 Cyrillic letters)."""

NAME_MAX = 255
"""Bytes of a file's name on every file system a folder is watched on (ext4, XFS, Btrfs,
NFS, SMB)."""

PART = re.compile(r"^\..+\.[0-9a-f]{12}\.transcriber-part$")
PART_AGE_S = 3600.0
"""A part file of ours this old was left by a process killed while writing it."""

NO_LINKS = frozenset(
    (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.ENOSYS, errno.EMLINK)
)
"""What a file system without hard links (some network and FUSE mounts) answers."""


def part_name(target: Path) -> Path:
    short = target.name.encode()[:PART_NAME_BYTES].decode(errors="ignore")
    return target.with_name(f".{short}.{uuid.uuid4().hex[:12]}.transcriber-part")


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _owned_like_folder(fd: int, folder: Path) -> None:
    """The written file belongs to the folder's owner, as if they had written it: a
    root daemon's transcript they could not otherwise remove."""
    if os.geteuid() != 0:
        return
    try:
        st = folder.stat()
        os.fchown(fd, st.st_uid, st.st_gid)
    except OSError:
        pass  # then it stays root's: still readable (0644)


def write_new(target: Path, data: bytes) -> str:
    """`data` at `target` if the name is free (WRITTEN), SAME when it holds these bytes
    already, KEPT when another file is there. Atomic: a reader sees the whole file or
    none; a process killed midway leaves only a hidden part file, which `sweep_parts`
    removes later. TOO_LONG when the name is longer than the folder takes; OSError when
    the folder cannot be written."""
    try:
        if len(os.fsencode(target.name)) > NAME_MAX:
            return TOO_LONG
        return _write_new(target, data)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:  # a file system of shorter names (eCryptfs)
            return TOO_LONG
        raise


def _write_new(target: Path, data: bytes) -> str:
    part = part_name(target)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        try:
            _owned_like_folder(fd, target.parent)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(part, target)
        except FileExistsError:
            return SAME if _same_bytes(target, data) else KEPT
        except OSError as e:
            if e.errno not in NO_LINKS:
                raise
            # No hard links here: a rename after a look (a file made between the two by
            # someone else would be replaced; the window is one system call wide).
            if os.path.lexists(target):
                return SAME if _same_bytes(target, data) else KEPT
            os.rename(part, target)
        _sync_folder(target.parent)
        return WRITTEN
    finally:
        part.unlink(missing_ok=True)


def sweep_parts(folder: Path, names: frozenset[str]) -> None:
    """Remove part files of ours older than PART_AGE_S among `names` of `folder` (left by
    a killed process). Only ours, by their pattern: nothing of the owner's."""
    now = time.time()
    for name in names:
        if not PART.match(name):
            continue
        path = folder / name
        try:
            if now - path.stat().st_mtime > PART_AGE_S:
                path.unlink()
                event(logging.INFO, "watch_part_removed", path=str(path))
        except OSError:
            pass  # gone already, or not ours to remove: left
