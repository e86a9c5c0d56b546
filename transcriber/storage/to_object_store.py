"""`transcriber storage migrate`: move a single-host installation's files into the object
store. For each record still pointing at a local file (its upload, its normalized
audio): copy the file to the store, read the object back and compare sha256, and only
then switch the record's ref — a guarded update, so a ref that changed meanwhile is left
alone. Interrupted, it is simply run again: switched records are skipped, and an object
already copied is verified instead of sent again. Local files are never removed; once
every record reads from the store, the old `uploads/` and `audio/` folders can go.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from actors.log import event
from transcriber.db.database import Database
from transcriber.storage.blobs import CHUNK, StorageError
from transcriber.storage.s3 import S3Blobs

COLUMNS = (
    ("source_path", "uploads", "storage_switch_source"),
    ("audio_path", "audio", "storage_switch_audio"),
)


@attrs.define
class Migrated:
    switched: int = 0
    """Refs switched to the store."""
    copied: int = 0
    """Files sent (the rest were in the store already, and verified)."""
    errors: list[str] = attrs.field(factory=list)


def sha256_of_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256_of_object(store: S3Blobs, key: str) -> str | None:
    """None: no such object."""
    from botocore.exceptions import ClientError

    try:
        body = store.client.get_object(Bucket=store.bucket, Key=key)["Body"]
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise
    digest = hashlib.sha256()
    for chunk in body.iter_chunks(CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def copy_verified(store: S3Blobs, path: Path, key: str) -> bool:
    """Make the object `key` hold exactly `path`'s bytes; True if it had to be sent.
    Runs in a worker thread. Raises StorageError when the copy does not verify."""
    local = sha256_of_file(path)
    sent = False
    if _sha256_of_object(store, key) != local:
        store.client.upload_file(str(path), store.bucket, key)
        sent = True
        if _sha256_of_object(store, key) != local:
            raise StorageError(f"s3://{store.bucket}/{key} does not read back as {path}")
    return sent


async def migrate_to_store(
    db: Database, store: S3Blobs, *, after_record: Callable[[Any], None] = lambda rid: None
) -> Migrated:
    """Copy, verify and switch every local ref of every record; `after_record` is called
    after each record (the tests interrupt there).

    Cancellation: a file being copied finishes in its thread; its record is not switched
    and the next run verifies the object.
    """
    done = Migrated()
    for row in await db.fetch("storage_local_refs"):
        for column, kind, query in COLUMNS:
            ref = row[column]
            if not (ref and ref.startswith("/")):
                continue
            path = Path(ref)
            key = store.key(kind, path.name)
            try:
                sent = await store.call(copy_verified, store, path, key)
            except (StorageError, OSError) as e:
                done.errors.append(f"{row['id']} {column}: {e}")
                event(
                    logging.WARNING,
                    "storage_migrate_failed",
                    id=row["id"],
                    column=column,
                    error=str(e),
                )
                continue
            done.copied += sent
            if await db.fetchval(query, row["id"], ref, store.ref(key)) is not None:
                done.switched += 1
        after_record(row["id"])
    return done
