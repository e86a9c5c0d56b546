"""A live session's audio, written into the store as it arrives and completed into one
WAV when the session ends — by the daemon that served it, or by another whose sweep
took the session over after that one died.

The local folder: one file, `uploads/<hex>`, a WAV header (sizes still zero) then the
samples, each append written through at once (so a killed process loses nothing the
socket gave it) and fsynced each FLUSH_S (so a host that loses power loses at most
that). The record points at the file from its first second, so the stray sweep
leaves it; completing it writes the header's sizes in place, no copy.

An object store: an object cannot be appended to, and a multipart upload's parts must
be at least 5 MiB but the last — 109 s of the protocol's audio (24 kHz, 16-bit), which a
killed process would lose. So the audio of each FLUSH_S is an object of its own,
`live/<record id>/<00000001…>`, and completing the session reads them in order into one
upload (`Blobs.incoming`, multipart in 8 MiB parts) with the WAV header first; the
chunks are removed once the record points at the whole. While the session runs, the
record points at the chunks' folder (`…/live/<record id>/`), which a deletion removes
whole.

Cancellation: a write or a flush in progress finishes in its thread; what was flushed
stays flushed."""

from __future__ import annotations

import contextlib
import os
import struct
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import trio

from transcriber.storage.blobs import Blobs, StorageError, keep_reserve
from transcriber.storage.files import create_private, fsync_dir, private_dir
from transcriber.storage.local import LocalBlobs
from transcriber.storage.s3 import S3Blobs

HEADER_BYTES = 44
FLUSH_S = 1.0
"""Audio between two flushes: what a host that loses power (local folder) or a killed
process (object store) may lose of a session."""


def wav_header(data_bytes: int, rate: int) -> bytes:
    """A RIFF/WAVE header of 16-bit mono PCM at `rate` with `data_bytes` of samples."""
    return b"".join(
        (
            b"RIFF",
            struct.pack("<I", 36 + data_bytes),
            b"WAVE",
            b"fmt ",
            struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16),
            b"data",
            struct.pack("<I", data_bytes),
        )
    )


class LiveAudio:
    """The audio of one running session: `ref` is what its record points at while it
    runs; `durable` counts the samples' bytes flushed."""

    ref: str
    durable: int = 0
    written: int = 0

    async def write(self, pcm: bytes) -> None:
        raise NotImplementedError

    async def flush(self) -> None:
        """Everything written is durable."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Flushed and closed (what is durable stays: it is the record's)."""

    async def discard(self) -> None:
        """Removed: the session's record was never made."""

    def release(self) -> None:
        """Let go unflushed: the session is another daemon's (or gone) now."""


@attrs.define(eq=False)
class LocalLiveAudio(LiveAudio):
    path: Path
    out: BinaryIO
    rate: int
    reserve: int
    durable: int = 0
    written: int = 0
    flushing: trio.Lock = attrs.field(factory=trio.Lock)

    @property
    def ref(self) -> str:  # type: ignore[override]
        return str(self.path)

    async def write(self, pcm: bytes) -> None:
        def put() -> None:
            self.out.write(pcm)
            # Through to the kernel at once: a killed process loses none of it.
            self.out.flush()

        try:
            await trio.to_thread.run_sync(put)
        except OSError as e:  # the disk full, or failing
            raise StorageError(f"the live session's audio could not be written: {e}") from e
        self.written += len(pcm)

    async def flush(self) -> None:
        def sync() -> None:
            os.fsync(self.out.fileno())
            # The session ends (kept) at the disk's reserve rather than filling it.
            keep_reserve(self.path.parent, self.reserve, what="disk of live sessions")

        async with self.flushing:
            written = self.written  # every write before the fsync is in it
            if written > self.durable:
                try:
                    await trio.to_thread.run_sync(sync)
                except OSError as e:
                    raise StorageError(f"the live session's audio could not be synced: {e}") from e
                self.durable = written

    async def aclose(self) -> None:
        try:
            await self.flush()
        finally:
            self.out.close()

    async def discard(self) -> None:
        self.out.close()
        self.path.unlink(missing_ok=True)

    def release(self) -> None:
        self.out.close()


@attrs.define(eq=False)
class ObjectLiveAudio(LiveAudio):
    store: S3Blobs
    prefix: str
    rate: int
    buffer: bytearray = attrs.field(factory=bytearray)
    chunks: int = 0
    durable: int = 0
    written: int = 0
    flushing: trio.Lock = attrs.field(factory=trio.Lock)

    @property
    def ref(self) -> str:  # type: ignore[override]
        return self.store.ref(self.prefix)

    async def write(self, pcm: bytes) -> None:
        self.buffer += pcm
        self.written += len(pcm)

    async def flush(self) -> None:
        async with self.flushing:
            if not self.buffer:
                return
            s, data = self.store, bytes(self.buffer)
            key = f"{self.prefix}{self.chunks + 1:08d}"
            await s.call(s.client.put_object, Bucket=s.bucket, Key=key, Body=data)
            # Counted once stored: a failed put is sent again whole by the next flush,
            # with what came meanwhile.
            self.chunks += 1
            del self.buffer[: len(data)]
            self.durable += len(data)

    async def aclose(self) -> None:
        await self.flush()

    async def discard(self) -> None:
        await self.store.remove(self.ref)


async def open_live_audio(blobs: Blobs, record_id: uuid.UUID, rate: int) -> LiveAudio:
    """The audio of a new session of record `record_id`, empty. Raises StorageError
    (DiskReserve) when the store cannot take it."""
    if isinstance(blobs, S3Blobs):
        return ObjectLiveAudio(blobs, blobs.key("live", f"{record_id}/"), rate)
    assert isinstance(blobs, LocalBlobs)

    def create() -> LocalLiveAudio:
        folder = private_dir(blobs.uploads)
        keep_reserve(folder, blobs.min_free_bytes, what="disk of live sessions")
        path = folder / uuid.uuid4().hex
        out = create_private(path)
        out.write(wav_header(0, rate))
        out.flush()
        os.fsync(out.fileno())
        fsync_dir(folder)
        return LocalLiveAudio(path, out, rate, blobs.min_free_bytes)

    return await trio.to_thread.run_sync(create)


@attrs.define(eq=False)
class Completed:
    """A session's audio as one WAV: `ref`, its `size` and its samples' bytes. `keep()`
    once the record points at it."""

    ref: str
    size: int
    samples: int
    kept: bool = False
    on_keep: Any = None
    chunks_removed: bool = False

    def keep(self) -> None:
        self.kept = True
        if self.on_keep is not None:
            self.on_keep()


FETCH_AT_ONCE = 8
"""Chunk objects read at once when a session is completed: one GET per second of audio
is a round trip each, which a real store's latency (tens of ms) would make minutes for
a long session; eight in flight hide it, for 8 × 48 KB of memory. Against moto on
loopback (no latency, its CPU the bound) a 10-minute session assembled in 9.5 s one at
a time and 8.0 s eight at once, on a loaded 2-core host."""


async def _fetched(s: S3Blobs, bucket: str, keys: list[str]) -> list[bytes]:
    """The objects `keys`, read at once, in order. Raises StorageError."""
    got: list[bytes] = [b""] * len(keys)

    async def one(i: int, key: str) -> None:
        body = await s.call(s.client.get_object, Bucket=bucket, Key=key)
        got[i] = await s.call(body["Body"].read)

    async with trio.open_nursery() as nursery:
        for i, key in enumerate(keys):
            nursery.start_soon(one, i, key)
    return got


@contextlib.asynccontextmanager
async def completed(blobs: Blobs, ref: str, rate: int) -> AsyncIterator[Completed]:
    """The audio a session wrote at `ref`, completed into one WAV for as long as the
    block runs: kept if the block calls `keep()` (the record's commit succeeded), else
    an object store's assembled upload is removed again (the chunks stay: the session
    is finished once more later). Completing twice is harmless. Raises StorageError.

    Cancellation: an object store's assembly is removed unless kept; a local header
    written in place is right whoever finishes."""
    if ref.startswith("/"):
        path = Path(ref)

        def patch() -> int:
            with open(path, "r+b") as f:
                size = os.fstat(f.fileno()).st_size
                # A killed writer may have left half a sample: whole samples only.
                samples = max(0, size - HEADER_BYTES) // 2 * 2
                f.truncate(HEADER_BYTES + samples)
                f.seek(0)
                f.write(wav_header(samples, rate))
                f.flush()
                os.fsync(f.fileno())
            return samples

        samples = await trio.to_thread.run_sync(patch)
        yield Completed(ref, HEADER_BYTES + samples, samples)
        return
    assert isinstance(blobs, S3Blobs)
    s = blobs
    bucket, prefix = ref.removeprefix("s3://").split("/", 1)

    def listed() -> list[tuple[str, int]]:
        pages = s.client.get_paginator("list_objects_v2")
        return sorted(
            (obj["Key"], int(obj["Size"]))
            for page in pages.paginate(Bucket=bucket, Prefix=prefix)
            for obj in page.get("Contents", [])
        )

    chunks = await s.call(listed)
    samples = sum(size for _, size in chunks) // 2 * 2
    async with s.incoming() as into:
        await into.write(wav_header(samples, rate))
        left = samples
        for at in range(0, len(chunks), FETCH_AT_ONCE):
            for data in await _fetched(s, bucket, [k for k, _ in chunks[at : at + FETCH_AT_ONCE]]):
                data = data[:left]
                left -= len(data)
                await into.write(data)
        await into.finish()
        done = Completed(into.ref, HEADER_BYTES + samples, samples, on_keep=into.keep)
        yield done
    if done.kept:
        # The record points at the whole now: its chunks go. A store away now, or a
        # process that dies here, leaves them to the daemons' sweep (the session's
        # `chunks_left`, transcriber.live.sessions.remove_chunks_left).
        with contextlib.suppress(StorageError):
            await s.remove(ref)
            done.chunks_removed = True
