"""Where the recordings' bytes live: one interface, `Blobs`, with two implementations —
the local folder under TRANSCRIBER_HOME (`LocalBlobs`, the default) and an
S3-compatible object store (`transcriber.storage.s3.S3Blobs`, when TRANSCRIBER_STORAGE_URL is
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
  commit won; only the winner's name ever reaches the record. A refused commit removes
  its own (`Saved.on_refused`); a deleted record's are all removed
  (`remove_record_files`).
- What is written locally is private whatever the umask: files 0600, folders 0700.
  Scratch copies (an object downloaded to be decoded or recognized) are removed when
  the step ends, however it ends.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import trio

from transcriber.db.database import Database
from transcriber.storage.files import create_private, private_dir

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


class DiskReserve(StorageError):
    """Writing on would leave this host's disk less free space than it keeps
    (TRANSCRIBER_MIN_FREE_BYTES). A step meeting it fails its attempt: space may come
    back (the operator's to find), so the record is retried, not stopped."""


def keep_reserve(folder: Path, min_free_bytes: int, coming: int = 0, what: str = "disk") -> None:
    """Raise DiskReserve when `coming` more bytes written into `folder` would leave its
    disk less than `min_free_bytes` free. A statvfs: cheap enough before every chunk."""
    free = shutil.disk_usage(folder).free
    if free - coming < min_free_bytes:
        raise DiskReserve(
            f"the {what} of {folder} has {free} bytes free; {coming} more would leave less "
            f"than the {min_free_bytes} kept free (TRANSCRIBER_MIN_FREE_BYTES)"
        )


def audio_name(record_id: Any, claim_token: Any) -> str:
    return f"{record_id}.{claim_token}.wav"


def ref_name(ref: str) -> str:
    """The last component of a ref: the generated name the sweep asks about."""
    return ref.rsplit("/", 1)[-1]


# --- the interface --------------------------------------------------------------------------


class Incoming:
    """One upload being written into the store under a generated name. `ref` is what
    the record will point at; `size` counts the bytes so far."""

    size: int
    kept: bool

    @property
    def ref(self) -> str:
        raise NotImplementedError

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

    @property
    def path(self) -> Path:
        raise NotImplementedError

    @property
    def ref(self) -> str:
        raise NotImplementedError

    @property
    def min_free_bytes(self) -> int:
        """The free space the disk under `path` keeps."""
        raise NotImplementedError

    def check_room(self, coming: int) -> None:
        """Before `coming` more bytes go into `path`: DiskReserve if they would take its
        disk below the reserve. Called from the decoding thread before each chunk, so
        the audio stops growing at the reserve, not at a full disk."""
        keep_reserve(self.path.parent, self.min_free_bytes, coming)

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
        """Normalized audio to write under `name` (see `audio_name`), on this host's disk
        first (the local folder, or a scratch file for an object store): DiskReserve at
        once when that disk is already at its reserve; the writer keeps it with
        `check_room`. Unless published,
        leaving the block removes what was written; a published file stays (a commit
        that lost its claim removes it when refused, never this block)."""
        raise NotImplementedError

    async def remove_record_files(self, record_id: Any) -> list[str]:
        """Remove every file this host and store hold under the name of record
        `record_id`'s claims: normalized audio of any claim (`<id>.<token>.wav`, its part
        file) and scratch copies (`<hex>.<id>.<token>.wav`); their refs. For a deleted
        record: whatever a claim of it wrote, published or not, whichever token won.
        Cancellation: runs to its end, shielded."""
        prefix = f"{record_id}."
        with trio.CancelScope(shield=True):

            def local() -> list[str]:
                removed = []
                for folder in (self.home / "audio", self.scratch):
                    if not folder.is_dir():
                        continue
                    for path in folder.iterdir():
                        name = path.name
                        if name.startswith(prefix) or f".{prefix}" in name:
                            path.unlink(missing_ok=True)
                            removed.append(str(path))
                return removed

            removed = await trio.to_thread.run_sync(local)
            removed += await self._remove_claim_objects(prefix)
        return removed

    async def _remove_claim_objects(self, prefix: str) -> list[str]:
        """Remove the store's own audio objects whose names start with `prefix`."""
        return []

    async def sweep_strays(self, db: Database, *, older_than_s: float = STRAY_AGE_S) -> list[str]:
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
            keep_reserve(folder, self.min_free_bytes, what="scratch disk")
            path = folder / f"{uuid.uuid4().hex}.{name}"
            create_private(path).close()
            return path

        path = await trio.to_thread.run_sync(make)
        try:
            yield path
        finally:
            path.unlink(missing_ok=True)

    async def _download(self, ref: str, dest: Path) -> None:
        raise StorageError(
            f"{ref} is in an object store; set TRANSCRIBER_STORAGE_URL to it to read it"
        )

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
        yield items[start : start + size]
