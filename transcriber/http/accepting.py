"""An upload taken in, whichever face it comes through (the API's `POST /v1/recordings`,
the page's upload, the OpenAI endpoint): its body received within the owner's bounds
and hashed on the way (`Hashed`), its record committed (`accept`), and a retry naming
the first record (the same Idempotency-Key, or without one the same owner, fields and
bytes)."""

import contextlib
import hashlib
import json
import logging
import uuid
from typing import Any

import asyncpg
import attrs
import trio
from fastapi import Request
from starlette.requests import ClientDisconnect

from actors.log import event
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.http.quotas import audio_fits, room_refusals, upload_room
from transcriber.http.uploads import Upload, receive
from transcriber.options import RecognitionOptions
from transcriber.records.uploaded import commit_upload, upload_by_fingerprint, upload_by_key
from transcriber.storage.blobs import Incoming
from transcriber.storage.configured import blobs_of

ACCEPT_TIMEOUT_S = 30.0


@attrs.define(eq=False)
class Hashed:
    """Where `receive` writes an upload: on to `into` (None: nowhere, for a replay that
    is only compared), hashing the bytes on the way."""

    into: Incoming | None
    size: int = 0
    _digest: Any = attrs.field(factory=hashlib.sha256)

    @property
    def ref(self) -> str:
        return "" if self.into is None else self.into.ref

    async def write(self, data: bytes) -> None:
        self._digest.update(data)
        self.size += len(data)
        if self.into is not None:
            await self.into.write(data)

    async def finish(self) -> None:
        if self.into is not None:
            await self.into.finish()

    def fingerprint(self, up: Upload) -> bytes:
        """What identifies the request: its fields, its size and its content."""
        asked = [up.title, up.language, up.filename, up.size, self._digest.hexdigest()]
        if up.options != RecognitionOptions():
            # Only when asked for, so a default request keeps the fingerprint it had
            # before uploads took options.
            asked.append(up.options.to_json())
        return hashlib.sha256(json.dumps(asked).encode()).digest()


def same_request(first: Any, fingerprint: bytes | None) -> bool:
    """Whether a request with `fingerprint` repeats the first one of its key (`first`, a
    `recording_by_key` row). A record made before fingerprints were kept counts as the
    same."""
    return first["fingerprint"] is None or bytes(first["fingerprint"]) == fingerprint


def key_reused(key: str) -> ApiError:
    return ApiError(
        422,
        f"the Idempotency-Key {key!r} was used before with a different "
        "request (title, language, task, prompt, filename or content); "
        "send a new recording with a new key",
    )


async def store_upload(
    request: Request,
    db: Database,
    config: Config,
    owner: int,
    key: str | None,
    title: str | None = None,
    language: str | None = None,
    filename: str | None = None,
    task: str | None = None,
    prompt: str | None = None,
    via: str = "api",
    speakers: str | None = None,
) -> tuple[uuid.UUID, int]:
    """Receive the request's body as `owner`'s upload, within their bounds (uploads at
    once 429, stored bytes and the disk's room 507), and commit its record: (id, 201),
    or (the first id, 200) when `key` was used before by the same request (422 by
    another). The API's upload and the page's both come here; the caller authenticated
    the owner before anything of the body was read. `via` names the door in the log and
    the journal's `accepted`.

    Cancellation: see `accept`; a file received but not committed goes."""
    with request.app.state.upload_slots.take(owner):
        first = None if key is None else await upload_by_key(db, owner, key)
        max_upload = request.app.state.max_upload_bytes
        room = await upload_room(db, config, owner, max_upload) if first is None else None
        try:
            with room_refusals(room, owner):
                # Closed at once even when the upload is refused halfway, so the generator
                # is not left for the garbage collector.
                async with contextlib.aclosing(request.stream()) as body:
                    if first is not None:
                        # A retry: its body is only compared with the first request's.
                        hashed = Hashed(None)
                        up = await receive_into(
                            request,
                            body,
                            hashed,
                            max_upload,
                            title,
                            language,
                            filename,
                            task,
                            prompt,
                            speakers,
                        )
                        if not same_request(first, hashed.fingerprint(up)):
                            raise key_reused(str(key))
                        rid, status = first["id"], 200
                    else:
                        assert room is not None  # measured for every first upload
                        async with blobs_of(config).incoming() as into:
                            hashed = Hashed(into)
                            up = await receive_into(
                                request,
                                body,
                                hashed,
                                room.limit,
                                title,
                                language,
                                filename,
                                task,
                                prompt,
                                speakers,
                            )
                            await audio_fits(room, up.ref)
                            rid, status = await accept(
                                db, owner, up, key, hashed.fingerprint(up), into, via=via
                            )
        except ClientDisconnect:
            event(logging.INFO, "upload_interrupted", owner=owner, via=via)
            raise ApiError(400, "the upload was interrupted") from None
    event(
        logging.INFO,
        "upload_accepted" if status == 201 else "upload_replayed",
        id=rid,
        owner=owner,
        size=up.size,
        via=via,
    )
    return rid, status


async def receive_into(
    request: Request,
    body: Any,
    into: Hashed,
    limit: int,
    title: str | None,
    language: str | None,
    filename: str | None,
    task: str | None,
    prompt: str | None,
    speakers: str | None = None,
) -> Upload:
    # `Hashed` writes as `Incoming` does, which is all `receive` asks of its target.
    return await receive(
        body,
        content_type=request.headers.get("content-type", ""),
        content_length=request.headers.get("content-length"),
        disposition=request.headers.get("content-disposition"),
        into=into,  # type: ignore[arg-type]
        limit=limit,
        title=title,
        language=language,
        filename=filename,
        task=task,
        prompt=prompt,
        speakers=speakers,
    )


async def accept(
    db: Database,
    owner: int,
    up: Upload,
    key: str | None,
    fingerprint: bytes | None,
    into: Incoming,
    *,
    via: str,
) -> tuple[uuid.UUID, int]:
    """Commit the record of a received upload; (id, 201), or (the first id, 200)
    when `key` was used meanwhile by the same request (422 by another) — or, without a
    key, when the same request (`fingerprint`: the same owner, fields and bytes) made a
    record before: a client's retry after a 5xx, a timeout or a cut connection names the
    first record, never a second. `via` names the route in the journal's `accepted`.

    Cancellation: the insert runs shielded (with a deadline), so a shutdown never
    leaves it unknown whether the record committed; if it still is unknown (the
    connection broke), the file stays and the startup sweep decides.
    """
    with trio.CancelScope(shield=True) as scope:
        scope.deadline = trio.current_time() + ACCEPT_TIMEOUT_S
        try:
            rid = await commit_upload(
                db,
                owner,
                filename=up.filename,
                size=up.size,
                ref=up.ref,
                language=up.language,
                title=up.title,
                key=key,
                options=up.options.to_json(),
                fingerprint=fingerprint,
                via=via,
            )
        except asyncpg.PostgresError:
            raise  # refused by the database: surely no record; the file goes
        except BaseException:
            into.keep()
            raise
    if scope.cancelled_caught:
        into.keep()
        raise ApiError(503, "the database did not confirm the upload in time")
    if rid is None:
        # Another upload with this key, or without one the same request, committed
        # first; this file goes.
        if key is None:
            assert fingerprint is not None  # without either nothing conflicts
            first = await upload_by_fingerprint(db, owner, fingerprint)
            return first["id"], 200
        first = await upload_by_key(db, owner, key)
        if not same_request(first, fingerprint):
            raise key_reused(key)
        return first["id"], 200
    into.keep()
    return rid, 201
