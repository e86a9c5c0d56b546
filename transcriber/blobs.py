"""Where the recordings' bytes live: one interface, `Blobs`, with two implementations —
the local folder under TRANSCRIBER_HOME (`LocalBlobs`, the default) and an
S3-compatible object store (`transcriber.s3.S3Blobs`, when TRANSCRIBER_STORAGE_URL is
`s3://BUCKET/PREFIX`). The API, the steps and the CLI call `blobs_of(config)` and never
know which one runs.

A record points at its bytes by a *ref*, a string in `source_path` / `audio_path`: an
absolute path for a file of the local folder (as before this module existed), or
`s3://BUCKET/KEY` for an object. Every store reads local refs (so a host whose records
were not migrated yet keeps working); only the object store reads `s3://` refs.

Three rules hold in both implementations:
- An upload is complete and durable (fsynced, or the multipart upload completed) before
  its record may commit; an upload that is refused or cut leaves nothing behind.
- Normalized audio is named by the claim's token (`<record>.<token>.wav`), so a stale
  holder of a claim never writes, renames or removes the file of the holder whose fenced
  commit won; only the winner's name ever reaches the record.
- What is written locally is private whatever the umask: files 0600, folders 0700.
  Scratch copies (an object downloaded to be decoded or recognized) are removed when
  the step ends, however it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import trio

from transcriber.config import Config
from transcriber.db import Database

CHUNK = 1 << 20
WRITE_CHUNK = 1 << 20
"""Bytes gathered before one write off the event loop: a thread hop per network chunk
(64 KiB) would cost more than the write."""

SWEEP_BATCH = 500
STRAY_AGE_S = 3600.0
"""How old an unreferenced file or object must be before the sweep removes it: the
command line's `submit` stores before it commits (without a lock), and an object store
has no lock at all."""

UPLOAD_NAME = re.compile(r"[0-9a-f]{32}")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
AUDIO_NAME = re.compile(rf"({_UUID})\.{_UUID}\.wav")
"""Normalized audio: `<record id>.<claim token>.wav`."""
AUDIO_PART_NAME = re.compile(AUDIO_NAME.pattern + r"\.part")


class StorageError(Exception):
    """The store cannot be read or written right now (unreachable, refused, missing
    object). A step that meets it fails its attempt with this message and is retried."""


# --- private files and folders --------------------------------------------------------------

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


def audio_name(record_id: Any, claim_token: Any) -> str:
    return f"{record_id}.{claim_token}.wav"


def ref_name(ref: str) -> str:
    """The last component of a ref: the generated name the sweep asks about."""
    return ref.rsplit("/", 1)[-1]


# --- the interface --------------------------------------------------------------------------

class Incoming:
    """One upload being written into the store under a generated name. `ref` is what
    the record will point at; `size` counts the bytes so far."""

    ref: str
    size: int
    kept: bool

    async def write(self, data: bytes) -> None:
        raise NotImplementedError

    async def finish(self) -> None:
        """Everything durable: after this a record may point at `ref`."""
        raise NotImplementedError

    def keep(self) -> None:
        """A record points at the upload (or may: a commit whose outcome is unknown), so
        leaving `incoming` must not remove it."""
        self.kept = True


class NewAudio:
    """Audio a step is writing: `path` is a local file (0600, empty) to write into;
    `publish()` makes it the object or file named by `ref`."""

    path: Path
    ref: str

    async def publish(self) -> None:
        raise NotImplementedError


class Blobs:
    """The storage interface. Subclasses implement the `_` methods for their own refs;
    local refs (absolute paths) are read here, by every store."""

    home: Path
    min_free_bytes: int
    """The free space this host's disk keeps (TRANSCRIBER_MIN_FREE_BYTES): a scratch copy
    is not started below it."""

    @property
    def scratch(self) -> Path:
        return self.home / "scratch"

    @property
    def upload_folder(self) -> Path | None:
        """The local folder an upload is written into, whose disk keeps the reserve (the
        API answers 507 below it); None when uploads never touch the local disk."""
        return None

    def incoming(self) -> contextlib.AbstractAsyncContextManager[Incoming]:
        """A new upload. Unless `keep()` was called, leaving the block — by an error, a
        refusal or a cancellation — removes whatever was written."""
        raise NotImplementedError

    async def store_file(self, src: Path) -> tuple[str, int]:
        """Copy the local file `src` in as a new upload; its ref and size.

        Cancellation: whatever was copied is removed.
        """
        async with self.incoming() as into:
            with open(src, "rb") as f:
                while chunk := await trio.to_thread.run_sync(f.read, CHUNK):
                    await into.write(chunk)
            await into.finish()
            into.keep()
        return into.ref, into.size

    async def remove(self, ref: str) -> None:
        """Remove what `ref` names, if this store holds it (a record never pointed at
        it). Cancellation: runs to its end, shielded."""
        with trio.CancelScope(shield=True):
            if ref.startswith("/"):
                await trio.to_thread.run_sync(lambda: Path(ref).unlink(missing_ok=True))
            else:
                await self._remove(ref)

    @contextlib.asynccontextmanager
    async def local_file(self, ref: str) -> AsyncIterator[Path]:
        """A local file with the bytes of `ref`, for as long as the block runs: the file
        itself for a local ref, else a scratch copy removed on the way out (also when the
        block is cancelled or fails). Raises StorageError when the store cannot give it."""
        if ref.startswith("/"):
            yield Path(ref)
            return
        async with self._scratch_file(ref_name(ref)) as path:
            await self._download(ref, path)
            yield path

    async def size(self, ref: str) -> int | None:
        """Bytes of what `ref` names; None when it is not there. Raises StorageError when
        the store cannot say."""
        if ref.startswith("/"):
            try:
                return (await trio.to_thread.run_sync(Path(ref).stat)).st_size
            except FileNotFoundError:
                return None
        return await self._size(ref)

    async def read_range(self, ref: str, start: int, end: int) -> AsyncIterator[bytes]:
        """Bytes `start`..`end` (inclusive) of `ref`, in chunks: a player's Range request.
        Cancellation: a chunk being read finishes in its thread; nothing to undo."""
        if not ref.startswith("/"):
            async for chunk in self._read_range(ref, start, end):
                yield chunk
            return
        f = await trio.open_file(ref, "rb")
        async with f:
            await f.seek(start)
            left = end - start + 1
            while left > 0:
                chunk = await f.read(min(CHUNK, left))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk

    def new_audio(self, name: str) -> contextlib.AbstractAsyncContextManager[NewAudio]:
        """Normalized audio to write under `name` (see `audio_name`). Unless published,
        leaving the block removes what was written; a published file stays (a commit
        that lost its claim leaves it to the sweep, never to this block)."""
        raise NotImplementedError

    async def sweep_strays(self, db: Database, *, older_than_s: float = STRAY_AGE_S
                           ) -> list[str]:
        """Remove uploads and normalized audio no record points at, older than
        `older_than_s`, and return their refs: what a process killed between storing and
        committing leaves behind, and the audio of claims that lost their commit. Run at
        startup. Cancellation: what was removed stays removed."""
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def _scratch_file(self, name: str) -> AsyncIterator[Path]:
        """An empty private file in the scratch folder, removed on the way out."""
        def make() -> Path:
            folder = private_dir(self.scratch)
            # The same reserve as uploads into the local folder: scratch copies must not
            # fill the disk the home (and an embedded database) lives on. A copy started
            # above it may take the disk below by one recording per worker at most.
            free = shutil.disk_usage(folder).free
            if free < self.min_free_bytes:
                raise StorageError(f"the scratch disk of {folder} has {free} bytes free, "
                                   f"less than the {self.min_free_bytes} kept free "
                                   "(TRANSCRIBER_MIN_FREE_BYTES)")
            path = folder / f"{uuid.uuid4().hex}.{name}"
            create_private(path).close()
            return path

        path = await trio.to_thread.run_sync(make)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)

    async def _download(self, ref: str, dest: Path) -> None:
        raise StorageError(f"{ref} is in an object store; set TRANSCRIBER_STORAGE_URL to "
                           "it to read it")

    async def _remove(self, ref: str) -> None:
        raise StorageError(f"{ref} is not in this store")

    async def _size(self, ref: str) -> int | None:
        raise StorageError(f"{ref} is not in this store")

    def _read_range(self, ref: str, start: int, end: int) -> AsyncIterator[bytes]:
        raise StorageError(f"{ref} is not in this store")


async def unreferenced(db: Database, refs: list[str]) -> set[str]:
    """Which of `refs` (uploads `…/<hex>` or audio `…/<id>.<token>.wav`) no record points
    at."""
    uploads = [r for r in refs if UPLOAD_NAME.fullmatch(ref_name(r))]
    audio = {r: m.group(1) for r in refs if (m := AUDIO_NAME.fullmatch(ref_name(r)))}
    used: set[str] = set()
    if uploads:
        rows = await db.fetch("sources_referenced", [ref_name(r) for r in uploads])
        names = {r["name"] for r in rows}
        used |= {r for r in uploads if ref_name(r) in names}
    if audio:
        rows = await db.fetch("audio_referenced", list({uuid.UUID(i) for i in audio.values()}))
        names = {ref_name(r["audio_path"]) for r in rows if r["audio_path"]}
        used |= {r for r in audio if ref_name(r) in names}
    return set(refs) - used


def batches(items: list[Any], size: int = SWEEP_BATCH) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# --- the local folder -------------------------------------------------------------------------

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
    def ref(self) -> str:  # type: ignore[override]
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
    published: bool = False

    @property
    def path(self) -> Path:  # type: ignore[override]
        return self.final.with_name(self.final.name + ".part")

    @property
    def ref(self) -> str:  # type: ignore[override]
        return str(self.final)

    async def publish(self) -> None:
        def sync() -> None:
            with open(self.path, "rb") as f:
                os.fsync(f.fileno())
            os.replace(self.path, self.final)
            fsync_dir(self.final.parent)

        await trio.to_thread.run_sync(sync)
        self.published = True


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
        audio = LocalAudio(private_dir(self.audio) / name)
        # Exclusive: the part file is this claim's alone (its token is in the name).
        create_private(audio.path).close()
        try:
            yield audio
        finally:
            audio.path.unlink(missing_ok=True)

    async def _remove(self, ref: str) -> None:
        raise StorageError(f"{ref} is in an object store, not in {self.home}")

    async def sweep_strays(self, db: Database, *, older_than_s: float = STRAY_AGE_S
                           ) -> list[str]:
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
            lambda: remove_old_files([self.scratch], older_than_s)
            + remove_old_files([self.audio], older_than_s, AUDIO_PART_NAME))
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
                found += [p for p in sorted(folder.iterdir())
                          if pattern.fullmatch(p.name) and p.is_file()
                          and p.stat().st_mtime <= cutoff]
        return found


def remove_old_files(folders: list[Path], older_than_s: float,
                     pattern: re.Pattern[str] | None = None) -> list[str]:
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
    found = []
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


# --- choosing the store ------------------------------------------------------------------------

_stores: dict[tuple[Path, str | None, int], Blobs] = {}


def blobs_of(config: Config) -> Blobs:
    """The store `config` names, one per process (an object store's client and its
    connections are shared by every step and request)."""
    key = (config.home, config.storage_url, config.min_free_bytes)
    if key not in _stores:
        if config.storage_url:
            from transcriber.s3 import S3Blobs

            try:
                _stores[key] = S3Blobs.from_url(config.storage_url, config.home,
                                                min_free_bytes=config.min_free_bytes)
            except ValueError as e:
                raise StorageError(str(e)) from None
        else:
            _stores[key] = LocalBlobs(config.home, config.min_free_bytes)
    return _stores[key]
