"""The store the configuration names: the object store when TRANSCRIBER_STORAGE_URL is
set, else the local folder. The one module that knows both implementations."""

from __future__ import annotations

from pathlib import Path

from transcriber.config import Config
from transcriber.storage.blobs import Blobs, StorageError
from transcriber.storage.local import LocalBlobs
from transcriber.storage.s3 import S3Blobs

_stores: dict[tuple[Path, str | None, int], Blobs] = {}


def blobs_of(config: Config) -> Blobs:
    """The store `config` names, one per process (an object store's client and its
    connections are shared by every step and request)."""
    key = (config.home, config.storage_url, config.min_free_bytes)
    if key not in _stores:
        if config.storage_url:
            try:
                _stores[key] = S3Blobs.from_url(
                    config.storage_url, config.home, min_free_bytes=config.min_free_bytes
                )
            except ValueError as e:
                raise StorageError(str(e)) from None
        else:
            _stores[key] = LocalBlobs(config.home, config.min_free_bytes)
    return _stores[key]
