"""An upload taken in by the API's `POST /v1/recordings` and the page's upload: the
request turned into one call of the domain intake (`transcriber.intake.accept`), which
bounds, stores, fingerprints and commits it. What stays here is the request's: its body
streamed into the intake's sink (`uploads.receive`), the owner's uploads at once
(`quotas.UploadSlots`), a cut connection, the log. The intake's refusals are answered by
the application's handlers (`errors.REFUSAL_STATUS`)."""

import contextlib
import logging

from fastapi import Request
from starlette.requests import ClientDisconnect

from actors.log import event
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.http.uploads import receive
from transcriber.intake import Accepted, Described, Fill, Limits, Sink, accept
from transcriber.storage.configured import blobs_of


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
    vocabulary: str | None = None,
) -> Accepted:
    """The request's body as `owner`'s recording, through the intake (`accept`: the
    owner's bounds, 507; the same request or Idempotency-Key again, the first record; the
    key with another request, 422), within the owner's uploads at once (429). The API's
    upload and the page's both come here; the caller authenticated the owner before
    anything of the body was read. `via` names the door in the log and the journal's
    `accepted`.

    Cancellation: see `accept`; a file received but not committed goes."""

    async def fill(into: Sink) -> Described:
        assert into.limit is not None  # an HTTP door always has its limits
        # Closed at once even when the upload is refused halfway, so the generator is
        # not left for the garbage collector.
        async with contextlib.aclosing(request.stream()) as body:
            return await receive(
                body,
                content_type=request.headers.get("content-type", ""),
                content_length=request.headers.get("content-length"),
                disposition=request.headers.get("content-disposition"),
                into=into,
                limit=into.limit,
                title=title,
                language=language,
                filename=filename,
                task=task,
                prompt=prompt,
                speakers=speakers,
                vocabulary=vocabulary,
            )

    try:
        got = await accept_request(request, db, config, owner, fill, via=via, key=key)
    except ClientDisconnect:
        event(logging.INFO, "upload_interrupted", owner=owner, via=via)
        raise ApiError(400, "the upload was interrupted") from None
    event(
        logging.INFO,
        "upload_accepted" if got.created else "upload_replayed",
        id=got.id,
        owner=owner,
        size=got.size,
        via=via,
    )
    return got


async def accept_request(
    request: Request,
    db: Database,
    config: Config,
    owner: int,
    fill: Fill,
    *,
    via: str,
    key: str | None,
) -> Accepted:
    """`owner`'s recording that `fill` streams from the request's body, through the
    intake within this application's limits, while one of the owner's uploads at once
    is taken (429 when none is left). A connection cut meanwhile is ClientDisconnect,
    for the face to answer in its shape. Cancellation: see `accept`."""
    limits = Limits.of(config, request.app.state.max_upload_bytes)
    with request.app.state.upload_slots.take(owner):
        return await accept(db, blobs_of(config), owner, fill, via=via, limits=limits, key=key)
