"""The local folder under TRANSCRIBER_HOME: the default store (`LocalBlobs`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

import attrs
import trio

from transcriber.db.database import Database
from transcriber.storage.blobs import (
    AUDIO_NAME,
    AUDIO_PART_NAME,
    STRAY_AGE_S,
    UPLOAD_NAME,
    WRITE_CHUNK,
    Blobs,
    Incoming,
    NewAudio,
    StorageError,
    batches,
    unreferenced,
)
from transcriber.storage.files import create_private, fsync_dir, private_dir


@attrs.define(eq=False)
class LocalIncoming(Incoming):
    """An upload into the local folder. Locked (flock) from its creation until its
    record commits or it is removed, so the sweep can tell a live upload from what a
    killed process left behind: the kernel drops the lock when the process dies."""

    path: Path
    _out: BinaryIO
    size: int = 0
    kept: bool = False
    _buffer: bytearray = attrs.field(factory=bytearray)

    @property
    def ref(self) -> str:
        return str(self.path)

    async def write(self, data: bytes) -> None:
        """Cancellation: a write in progress finishes in its thread; the caller's exit
        from `incoming` then removes the file."""
        self._buffer += data
        self.size += len(data)
        if len(self._buffer) >= WRITE_CHUNK:
            await self._flush()

    async def _flush(self) -> None:
        data, self._buffer = bytes(self._buffer), bytearray()
        if data:
            await trio.to_thread.run_sync(self._out.write, data)

    async def finish(self) -> None:
        """The file and the folder's entry for it are fsynced."""
        await self._flush()

        def sync() -> None:
            self._out.flush()
            os.fsync(self._out.fileno())
            fsync_dir(self.path.parent)

        await trio.to_thread.run_sync(sync)


@attrs.define(eq=False)
class LocalAudio(NewAudio):
    """Written as `<name>.part` beside its final name, renamed on publish."""

    final: Path
    reserve: int = 0

    @property
    def min_free_bytes(self) -> int:
        return self.reserve

    @property
    def path(self) -> Path:
        return self.final.with_name(self.final.name + ".part")

    @property
    def ref(self) -> str:
        return str(self.final)

    async def publish(self) -> None:
        def sync() -> None:
            with open(self.path, "rb") as f:
                os.fsync(f.fileno())
            os.replace(self.path, self.final)
            fsync_dir(self.final.parent)

        await trio.to_thread.run_sync(sync)


@attrs.define(eq=False)
class LocalBlobs(Blobs):
    """The folder under TRANSCRIBER_HOME: `uploads/<hex>` and `audio/<id>.<token>.wav`."""

    home: Path
    min_free_bytes: int = 0

    @property
    def upload_folder(self) -> Path | None:
        return self.uploads

    @property
    def uploads(self) -> Path:
        return self.home / "uploads"

    @property
    def audio(self) -> Path:
        return self.home / "audio"

    @contextlib.asynccontextmanager
    async def incoming(self) -> AsyncIterator[Incoming]:
        path = private_dir(self.uploads) / uuid.uuid4().hex
        out = create_private(path)
        try:
            # Never waits: the sweep does not touch a file this young.
            fcntl.flock(out.fileno(), fcntl.LOCK_EX)
            file = LocalIncoming(path, out)
            try:
                yield file
            finally:
                if not file.kept:
                    path.unlink(missing_ok=True)
        finally:
            out.close()

    @contextlib.asynccontextmanager
    async def new_audio(self, name: str) -> AsyncIterator[NewAudio]:
        audio = LocalAudio(private_dir(self.audio) / name, self.min_free_bytes)
        # Not started at the reserve: the audio folder shares the home's disk (and the
        # embedded database's). The writer checks again before each chunk.
        await trio.to_thread.run_sync(audio.check_room, 0)
        # Exclusive: the part file is this claim's alone (its token is in the name).
        create_private(audio.path).close()
        try:
            yield audio
        finally:
            audio.path.unlink(missing_ok=True)

    async def _remove(self, ref: str) -> None:
        raise StorageError(f"{ref} is in an object store, not in {self.home}")

    async def sweep_strays(self, db: Database, *, older_than_s: float = STRAY_AGE_S) -> list[str]:
        old = await trio.to_thread.run_sync(self._old_files, older_than_s)
        removed: list[str] = []
        for batch in batches(old):
            # Locked while the sweep decides, so no upload can be writing what it
            # removes; a batch at a time, so a large store does not exhaust descriptors.
            held = await trio.to_thread.run_sync(_lock_unused, batch)
            try:
                stray = await unreferenced(db, [str(path) for path, _ in held])
                for path, _ in held:
                    if str(path) in stray:
                        path.unlink(missing_ok=True)
                        removed.append(str(path))
            finally:
                for _, handle in held:
                    handle.close()
        # Part files and scratch copies belong to steps of a process that is gone
        # (a live step's are young).
        removed += await trio.to_thread.run_sync(
            lambda: (
                remove_old_files([self.scratch], older_than_s)
                + remove_old_files([self.audio], older_than_s, AUDIO_PART_NAME)
            )
        )
        for folder in (self.uploads, self.audio):
            if folder.is_dir():
                await trio.to_thread.run_sync(fsync_dir, folder)
        return removed

    def _old_files(self, older_than_s: float) -> list[Path]:
        # A file being written is young, so the sweep never even tries to lock it, and
        # the upload's own lock never waits on the sweep.
        cutoff = time.time() - older_than_s
        found = []
        for folder, pattern in ((self.uploads, UPLOAD_NAME), (self.audio, AUDIO_NAME)):
            if folder.is_dir():
                found += [
                    p
                    for p in sorted(folder.iterdir())
                    if pattern.fullmatch(p.name) and p.is_file() and p.stat().st_mtime <= cutoff
                ]
        return found


def remove_old_files(
    folders: list[Path], older_than_s: float, pattern: re.Pattern[str] | None = None
) -> list[str]:
    """Remove the files of `folders` (whose names match `pattern`, if given) older than
    `older_than_s`; their paths."""
    cutoff = time.time() - older_than_s
    removed = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if pattern is not None and not pattern.fullmatch(path.name):
                continue
            with contextlib.suppress(FileNotFoundError):
                if path.is_file() and path.stat().st_mtime <= cutoff:
                    path.unlink()
                    removed.append(str(path))
    return removed


def _lock_unused(paths: list[Path]) -> list[tuple[Path, BinaryIO]]:
    """The files of `paths` that no live upload holds, each open with its lock taken."""
    found: list[tuple[Path, BinaryIO]] = []
    for path in paths:
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed by the sweep
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        found.append((path, handle))
    return found
