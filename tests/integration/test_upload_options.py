"""Recognition options chosen at upload (capability `intake`): `task` and `prompt` on
`POST /v1/recordings`, as a form's fields or a raw body's query."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.helpers.api_clients import (
    count_recordings,
)
from transcriber.db.database import Database


@pytest.mark.scenario("intake", "An upload chooses the translate task and a prompt")
async def test_an_upload_chooses_the_task_and_a_prompt(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    as_form = await as_ann.post(
        "/v1/recordings",
        files={"file": ("a.ogg", b"OggS audio")},
        data={"task": "translate", "prompt": "Kubernetes, Postgres"},
    )
    raw = await as_ann.post(
        "/v1/recordings",
        content=b"OggS audio",
        params={"task": "translate", "prompt": "Привет"},
        headers={"Content-Type": "audio/ogg"},
    )
    plain = await as_ann.post("/v1/recordings", files={"file": ("a.ogg", b"OggS audio")})
    assert [r.status_code for r in (as_form, raw, plain)] == [201, 201, 201]

    async def options(r: httpx.Response) -> object:
        return await db.run(
            lambda con: con.fetchval(
                "SELECT options FROM recordings WHERE id = $1", uuid.UUID(r.json()["id"])
            )
        )

    assert await options(as_form) == {"task": "translate", "prompt": "Kubernetes, Postgres"}
    assert await options(raw) == {"task": "translate", "prompt": "Привет"}
    assert await options(plain) == {"task": "transcribe"}

    before = await count_recordings(db)
    for refused in [
        await as_ann.post(
            "/v1/recordings", files={"file": ("a.ogg", b"OggS")}, data={"task": "summarize"}
        ),
        await as_ann.post(
            "/v1/recordings",
            content=b"OggS",
            params={"task": "summarize"},
            headers={"Content-Type": "audio/ogg"},
        ),
        await as_ann.post(
            "/v1/recordings", files={"file": ("a.ogg", b"OggS")}, data={"prompt": "x" * 1001}
        ),
    ]:
        assert refused.status_code == 422, refused.text
    assert await count_recordings(db) == before
