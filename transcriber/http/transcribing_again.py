"""Transcribing a recording again with other options, for the API's
`POST /v1/recordings/{id}/again` and the record page's form alike: what was asked,
checked as an upload's fields are, turned into one call of the intake
(`transcriber.intake.again`), its refusals into the API's errors."""

from __future__ import annotations

import uuid

import attrs
from fastapi import Request

from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.errors import ApiError
from transcriber.intake import Accepted, Limits
from transcriber.intake.again import (
    Asked,
    NotFinished,
    SourceGone,
    Unchanged,
    again_source,
    transcribe_again,
)
from transcriber.languages import UnknownLanguage, language_hint
from transcriber.options import BadOptions, RecognitionOptions
from transcriber.storage.configured import blobs_of

KEY_MAX = 200
"""The longest Idempotency-Key taken, as the upload's."""


@attrs.frozen
class Change:
    """What the owner changes; None: as the record was (`language` "" or auto: detect
    it; `speakers` "": the service's default)."""

    language: str | None = None
    speakers: str | None = None
    task: str | None = None


def asked(change: Change, language: str | None, options: RecognitionOptions) -> Asked:
    """The new attempt's language and options: the record's own (`language`,
    `options`) with `change` applied; 422 naming what no recognizer takes."""
    try:
        hint = language if change.language is None else language_hint(change.language)
        speakers = options.speakers
        if change.speakers is not None:
            speakers = change.speakers.strip().lower() or None
        return Asked(
            hint,
            attrs.evolve(options, task=change.task or options.task, speakers=speakers),
        )
    except UnknownLanguage as e:
        raise ApiError(422, str(e)) from None
    except BadOptions as e:
        raise ApiError(422, str(e)) from None


async def again(
    request: Request,
    db: Database,
    config: Config,
    owner: int,
    recording_id: uuid.UUID,
    change: Change,
    *,
    via: str,
    key: str | None = None,
) -> Accepted:
    """A new record of the owner's finished record, recognized as `change` says
    (`transcribe_again`): 404 when the record is not the owner's, 409 while it is
    being transcribed or when its file is gone, 422 for an option no recognizer takes
    or nothing changed, 507 past the owner's quota (the application's refusal
    handler). Cancellation: as `transcribe_again`."""
    source = await again_source(db, owner, recording_id)
    if source is None:
        raise ApiError(404, "no such recording")
    stored = RecognitionOptions.from_json(source["options"])
    wanted = asked(change, source["language"], stored)
    limits = Limits.of(config, request.app.state.max_upload_bytes)
    try:
        got = await transcribe_again(
            db, blobs_of(config), owner, recording_id, wanted, via=via, limits=limits, key=key
        )
    except (NotFinished, SourceGone) as e:
        raise ApiError(409, e.message) from None
    except Unchanged as e:
        raise ApiError(422, e.message) from None
    if got is None:  # deleted since it was read
        raise ApiError(404, "no such recording")
    return got
