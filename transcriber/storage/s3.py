"""The object store: any S3-compatible server (MinIO, Ceph RGW, Garage, SeaweedFS, AWS
S3, Cloudflare R2), chosen by TRANSCRIBER_STORAGE_URL=s3://BUCKET/PREFIX, with the
endpoint and credentials of the standard variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION). A plain-http endpoint works as
it is.

The client is boto3 (botocore), each call in a trio worker thread. Why, against
obstore (Rust's object_store, faster per byte): the upload path needs the multipart
protocol step by step — create, one part per 8 MiB as the HTTP body arrives, complete
only once the whole body was read and checked, *abort* when the upload is refused or
cut — and boto3 exposes exactly those calls, with nothing buffered behind our back, so
an interrupted upload provably leaves no object. Its clients are thread-safe and keep a
connection pool, so a call costs one thread hop (~50 µs) beside a network round trip;
a part of 8 MiB amortizes that to nothing. obstore's asyncio API would need the
trio-asyncio bridge on every chunk, and its writer hides when parts are sent. And moto,
the S3 server the tests run, is built on botocore: one S3 implementation less to
disagree with. Measured by `transcriber bench-api` (upload RSS and throughput against
the local folder).

Cancellation: a boto3 call in its thread runs to its end (a trio cancel waits for it,
one part at most); removing what was written (abort, delete) is shielded.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs
import outcome
import trio

from transcriber.db.database import Database
from transcriber.storage.blobs import (
    AUDIO_NAME,
    CHUNK,
    STRAY_AGE_S,
    UPLOAD_NAME,
    Blobs,
    Incoming,
    NewAudio,
    StorageError,
    batches,
    unreferenced,
)
from transcriber.storage.local import remove_old_files

T = TypeVar("T")

PART_SIZE = 8 << 20
"""Bytes of one multipart part: S3's minimum is 5 MiB; 8 MiB keeps about 24 MiB of an
upload in memory (the part on its way, the next one filling, its copy), and a 1 GiB
upload at 128 parts, far below the limit of 10 000."""

CLEANUP_TIMEOUT_S = 30.0

_URL = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(.*))?")


def parse_url(url: str) -> tuple[str, str]:
    """(bucket, prefix) of `s3://BUCKET/PREFIX`; ValueError with the reason otherwise."""
    m = _URL.fullmatch(url)
    if not m:
        raise ValueError(f"TRANSCRIBER_STORAGE_URL must look like s3://BUCKET/PREFIX, not {url!r}")
    return m.group(1), (m.group(2) or "").strip("/")


def split_ref(ref: str) -> tuple[str, str]:
    """(bucket, key) of an `s3://BUCKET/KEY` ref."""
    bucket, _, key = ref.removeprefix("s3://").partition("/")
    return bucket, key


def make_client(env: Mapping[str, str]) -> Any:
    import boto3
    import botocore.config

    endpoint = env.get("AWS_ENDPOINT_URL") or None
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
        aws_access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
        aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
        config=botocore.config.Config(
            # A store that went away fails the step within seconds, not minutes: the
            # attempt is retried by the queue with its own backoff.
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            max_pool_connections=32,
            # Self-hosted stores (MinIO on a LAN address) rarely have per-bucket DNS.
            s3={"addressing_style": "path"} if endpoint else {},
        ),
    )


@contextlib.contextmanager
def translated() -> Iterator[None]:
    """The store's failures (unreachable, refused, no such object) as StorageError."""
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError, Boto3Error) as e:
        raise StorageError(f"object store: {e}") from e


@attrs.define(eq=False)
class _Part:
    """A part on its way to the store, in a thread of its own."""

    number: int
    done: trio.Event = attrs.field(factory=trio.Event)
    result: outcome.Outcome[Any] | None = None


@attrs.define(eq=False)
class S3Blobs(Blobs):
    bucket: str
    prefix: str
    home: Path
    client: Any
    """A boto3 S3 client (thread-safe, shared by every step and request)."""
    min_free_bytes: int = 0

    @classmethod
    def from_url(
        cls, url: str, home: Path, env: Mapping[str, str] | None = None, *, min_free_bytes: int = 0
    ) -> S3Blobs:
        bucket, prefix = parse_url(url)
        return cls(
            bucket, prefix, home, make_client(os.environ if env is None else env), min_free_bytes
        )

    def key(self, kind: str, name: str) -> str:
        return f"{self.prefix}/{kind}/{name}" if self.prefix else f"{kind}/{name}"

    def ref(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    async def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """`fn` in a worker thread; the store's failures become StorageError."""
        with translated():
            return await trio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    @contextlib.asynccontextmanager
    async def incoming(self) -> AsyncIterator[Incoming]:
        upload = S3Incoming(self, self.key("uploads", uuid.uuid4().hex))
        try:
            yield upload
        finally:
            if not upload.kept:
                with trio.CancelScope(shield=True) as scope:
                    scope.deadline = trio.current_time() + CLEANUP_TIMEOUT_S
                    await upload.discard()

    @contextlib.asynccontextmanager
    async def new_audio(self, name: str) -> AsyncIterator[NewAudio]:
        async with self._scratch_file(name) as path:
            yield S3Audio(self, self.key("audio", name), path)

    async def _download(self, ref: str, dest: Path) -> None:
        bucket, key = split_ref(ref)

        def fetch() -> None:
            body = self.client.get_object(Bucket=bucket, Key=key)["Body"]
            with open(dest, "r+b") as out:  # the private scratch file, as made
                for chunk in body.iter_chunks(CHUNK):
                    out.write(chunk)

        await self.call(fetch)

    async def _size(self, ref: str) -> int | None:
        bucket, key = split_ref(ref)

        def head() -> int | None:
            try:
                return int(self.client.head_object(Bucket=bucket, Key=key)["ContentLength"])
            except self.client.exceptions.ClientError as e:
                if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
                    return None
                raise

        return await self.call(head)

    async def _read_range(self, ref: str, start: int, end: int) -> AsyncIterator[bytes]:
        bucket, key = split_ref(ref)
        # One ranged GET per chunk: memory stays at a chunk, and a player that stops
        # listening leaves no open stream behind.
        for at in range(start, end + 1, CHUNK):
            last = min(end, at + CHUNK - 1)
            body = await self.call(
                self.client.get_object, Bucket=bucket, Key=key, Range=f"bytes={at}-{last}"
            )
            yield await self.call(body["Body"].read)

    async def _remove(self, ref: str) -> None:
        bucket, key = split_ref(ref)
        if key.endswith("/"):
            # A folder of objects: a live session's chunks (transcriber.live.audio).
            await self.call(self._remove_under, bucket, key)
            return
        await self.call(self.client.delete_object, Bucket=bucket, Key=key)

    def _remove_under(self, bucket: str, prefix: str) -> None:
        pages = self.client.get_paginator("list_objects_v2")
        found = [
            obj["Key"]
            for page in pages.paginate(Bucket=bucket, Prefix=prefix)
            for obj in page.get("Contents", [])
        ]
        for batch in batches(found, 1000):  # what one DeleteObjects takes
            self.client.delete_objects(
                Bucket=bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True}
            )

    async def _remove_claim_objects(self, prefix: str) -> list[str]:
        def remove() -> list[str]:
            pages = self.client.get_paginator("list_objects_v2")
            found = [
                obj["Key"]
                for page in pages.paginate(Bucket=self.bucket, Prefix=self.key("audio", prefix))
                for obj in page.get("Contents", [])
            ]
            for batch in batches(found, 1000):  # what one DeleteObjects takes
                self.client.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
                )
            return [self.ref(k) for k in found]

        return await self.call(remove)

    async def sweep_strays(self, db: Database, *, older_than_s: float = STRAY_AGE_S) -> list[str]:
        cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=older_than_s)
        old = await self.call(self._old_objects, cutoff)
        removed: list[str] = []
        for batch in batches(old):
            stray = sorted(await unreferenced(db, [self.ref(k) for k in batch]))
            if stray:
                await self.call(
                    self.client.delete_objects,
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": split_ref(r)[1]} for r in stray], "Quiet": True},
                )
                removed += stray
        # Multipart uploads a killed process never completed nor aborted: invisible, but
        # the store keeps (and bills) their parts.
        await self.call(self._abort_old_uploads, cutoff)
        removed += await trio.to_thread.run_sync(remove_old_files, [self.scratch], older_than_s)
        return removed

    def _old_objects(self, cutoff: dt.datetime) -> list[str]:
        found = []
        pages = self.client.get_paginator("list_objects_v2")
        for kind, pattern in (("uploads", UPLOAD_NAME), ("audio", AUDIO_NAME)):
            for page in pages.paginate(Bucket=self.bucket, Prefix=self.key(kind, "")):
                for obj in page.get("Contents", []):
                    if (
                        pattern.fullmatch(obj["Key"].rsplit("/", 1)[-1])
                        and obj["LastModified"] <= cutoff
                    ):
                        found.append(obj["Key"])
        return found

    def _abort_old_uploads(self, cutoff: dt.datetime) -> None:
        pages = self.client.get_paginator("list_multipart_uploads")
        for page in pages.paginate(Bucket=self.bucket, Prefix=self.key("uploads", "")):
            for up in page.get("Uploads", []):
                if up["Initiated"] <= cutoff:
                    self.client.abort_multipart_upload(
                        Bucket=self.bucket, Key=up["Key"], UploadId=up["UploadId"]
                    )


@attrs.define(eq=False)
class S3Incoming(Incoming):
    """An upload streamed into one object: a single PUT when it fits in one part, else a
    multipart upload, one part sent each time PART_SIZE bytes have arrived. A part goes
    out while the next one fills (receiving and sending overlap), never more than one:
    memory stays at about three parts."""

    store: S3Blobs
    key: str
    size: int = 0
    kept: bool = False
    _buffer: bytearray = attrs.field(factory=bytearray)
    _upload_id: str | None = None
    _parts: list[dict[str, Any]] = attrs.field(factory=list)
    _sending: _Part | None = None
    _complete: bool = False

    @property
    def ref(self) -> str:
        return self.store.ref(self.key)

    async def write(self, data: bytes) -> None:
        self._buffer += data
        self.size += len(data)
        if len(self._buffer) >= PART_SIZE:
            await self._send_part()

    async def _send_part(self) -> None:
        """Start sending the buffer as the next part, once the previous one arrived.

        Cancellation: a part on its way goes on in its thread; `discard` waits for it.
        """
        s = self.store
        data, self._buffer = bytes(self._buffer), bytearray()
        await self._settle()
        if self._upload_id is None:
            started = await s.call(s.client.create_multipart_upload, Bucket=s.bucket, Key=self.key)
            self._upload_id = started["UploadId"]
        part = self._sending = _Part(len(self._parts) + 1)
        upload_id, token = self._upload_id, trio.lowlevel.current_trio_token()

        def deliver(result: outcome.Outcome[Any]) -> None:
            part.result = result
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(part.done.set)

        trio.lowlevel.start_thread_soon(
            lambda: s.client.upload_part(
                Bucket=s.bucket, Key=self.key, UploadId=upload_id, PartNumber=part.number, Body=data
            ),
            deliver,
        )

    async def _settle(self) -> None:
        """Wait for the part on its way, if any; its failure is raised here."""
        part = self._sending
        if part is None:
            return
        await part.done.wait()
        self._sending = None
        assert part.result is not None
        with translated():
            sent = part.result.unwrap()
        self._parts.append({"ETag": sent["ETag"], "PartNumber": part.number})

    async def finish(self) -> None:
        """The object exists whole once this returns (S3 makes it visible at once)."""
        s = self.store
        if self._upload_id is None:
            await s.call(
                s.client.put_object, Bucket=s.bucket, Key=self.key, Body=bytes(self._buffer)
            )
        else:
            if self._buffer:
                await self._send_part()
            await self._settle()
            await s.call(
                s.client.complete_multipart_upload,
                Bucket=s.bucket,
                Key=self.key,
                UploadId=self._upload_id,
                MultipartUpload={"Parts": self._parts},
            )
        self._buffer = bytearray()
        self._complete = True

    async def discard(self) -> None:
        """Nothing of this upload stays: the multipart upload aborted (its parts
        dropped), or the finished object deleted. A store that cannot be reached now
        leaves it to the startup sweep."""
        s = self.store
        with contextlib.suppress(StorageError):
            await self._settle()  # so no part arrives after the abort
        with contextlib.suppress(StorageError):
            if self._complete:
                await s.call(s.client.delete_object, Bucket=s.bucket, Key=self.key)
            elif self._upload_id is not None:
                await s.call(
                    s.client.abort_multipart_upload,
                    Bucket=s.bucket,
                    Key=self.key,
                    UploadId=self._upload_id,
                )


@attrs.define(eq=False)
class S3Audio(NewAudio):
    """Written to a private scratch file, uploaded whole on publish (a multipart upload
    of the transfer manager for large files, aborted if it fails)."""

    store: S3Blobs
    key: str
    path: Path

    @property
    def ref(self) -> str:
        return self.store.ref(self.key)

    @property
    def min_free_bytes(self) -> int:
        return self.store.min_free_bytes

    async def publish(self) -> None:
        s = self.store
        await s.call(s.client.upload_file, str(self.path), s.bucket, self.key)
