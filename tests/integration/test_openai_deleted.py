"""A record deleted while an OpenAI request waits for it (capability `openai`): the
request is answered 404 in OpenAI's shape, read by the real `openai` SDK. The deletion
is forced in while the request waits (a Waiting that says when it pauses), not timed."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import openai
import pytest
import trio

from tests.helpers.api_clients import fake_audio
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.http.waiting import Waiting
from transcriber.owners import NewOwner
from transcriber.records.deletion import delete_own
from transcriber.storage.configured import blobs_of


class SaysWhenWaiting(Waiting):
    """The service's Waiting, which sets `waiting` once a request pauses on its record
    (the record exists: it was committed before the wait)."""

    def __init__(self) -> None:
        super().__init__(poll_first_s=0.05, poll_max_s=0.05)
        self.waiting = trio.Event()

    async def pause(self, news: trio.Event, at_most_s: float) -> None:
        self.waiting.set()
        await super().pause(news, at_most_s)


@pytest.mark.scenario("openai", "A record deleted while its request waits answers 404")
async def test_a_record_deleted_while_its_request_waits_answers_404(
    db: Database, tmp_path: Path, ann: NewOwner
) -> None:
    config = Config(home=tmp_path / "home", openai_wait_s=60.0)
    app = create_app(db, config)
    app.state.waiting = waiting = SaysWhenWaiting()
    audio = fake_audio()
    async with serving(app) as url:
        sdk = openai.OpenAI(api_key=ann.token, base_url=f"{url}/v1", max_retries=0, timeout=60)

        def call() -> Any:
            return sdk.audio.transcriptions.create(
                model="whisper-1", file=("talk.wav", audio, "audio/wav")
            )

        failed: list[openai.APIStatusError] = []

        async def ask() -> None:
            try:
                await trio.to_thread.run_sync(call)
            except openai.APIStatusError as e:
                failed.append(e)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            with trio.fail_after(30):
                await waiting.waiting.wait()
            [rid] = await db.run(lambda con: con.fetch("SELECT id FROM recordings"))
            gone = await delete_own(db, blobs_of(config), ann.id, [rid["id"]], via="api")
            assert len(gone) == 1
    [error] = failed
    # Not 500 (an ExceptionGroup from the waiting nursery), which the SDK would retry.
    assert isinstance(error, openai.NotFoundError), error
    assert error.status_code == 404
    assert error.response.headers["x-should-retry"] == "false"
    assert error.response.headers["x-transcriber-recording-id"] == str(rid["id"])
    body = error.response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["code"] == "not_found"
    assert body["error"]["type"] == "invalid_request_error"
    assert str(rid["id"]) in body["error"]["message"] and "deleted" in body["error"]["message"]
    assert uuid.UUID(error.response.headers["x-transcriber-recording-id"]) == rid["id"]
