"""What a door writes a recording into, and what it says about it: the bytes go on into
the store as they come, counted against the room they have and hashed on the way, so
that the same request sent again is known by its fingerprint."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import attrs

from transcriber.intake.refusals import TooLarge
from transcriber.languages import language_hint
from transcriber.options import RecognitionOptions
from transcriber.storage.blobs import Incoming

FILENAME_MAX = 255


def clean_filename(value: str | None) -> str | None:
    """The sender's name for the file, kept as data only (it never becomes a path):
    its last path component, without control or format characters (a watched file's
    name may hold a newline, a right-to-left override, whatever an upload's may not),
    at most 255 characters."""
    if value is None:
        return None
    name = re.split(r"[\\/]", value)[-1]
    name = "".join(c for c in name if c.isprintable())
    name = name.encode("utf-8", "replace").decode("utf-8")[:FILENAME_MAX]
    return name or None


@attrs.frozen
class Described:
    """What the sender said about a recording: its file's name (data only, never a path:
    cleaned the same whatever the door), a title, a language hint and how to recognize
    it."""

    filename: str | None = attrs.field(converter=clean_filename)
    title: str | None
    language: str | None = attrs.field(converter=language_hint)
    """One of the recognizer's codes, or None to detect it: whatever the door, a hint
    no recognizer takes is never stored (UnknownLanguage; each door checks it first,
    to answer in its own words)."""
    options: RecognitionOptions = attrs.field(factory=RecognitionOptions)


@attrs.define(eq=False)
class Sink:
    """Where a door writes a recording's bytes: on to `into` (None: nowhere, for a
    retry that is only compared with the first request), at most `limit` bytes (None:
    no bound; past it TooLarge, before the bytes are written)."""

    into: Incoming | None
    limit: int | None
    size: int = 0
    _digest: Any = attrs.field(factory=hashlib.sha256)

    async def write(self, data: bytes) -> None:
        if self.limit is not None and self.size + len(data) > self.limit:
            raise TooLarge(f"the upload is larger than {self.limit} bytes")
        self._digest.update(data)
        self.size += len(data)
        if self.into is not None:
            await self.into.write(data)

    def fingerprint(self, told: Described) -> bytes:
        """What identifies the request: what it said, its size and its content."""
        asked = [told.title, told.language, told.filename, self.size, self._digest.hexdigest()]
        if told.options != RecognitionOptions():
            # Only when asked for, so a default request keeps the fingerprint it had
            # before uploads took options.
            asked.append(told.options.to_json())
        return hashlib.sha256(json.dumps(asked).encode()).digest()
