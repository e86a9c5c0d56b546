"""Retries never duplicate (issue 21): the same request of the same owner — the same
bytes and the same fields — while its first record exists names that record, on the
JSON API and on the OpenAI-compatible endpoint, whatever made the client send it again
(a 5xx, its own timeout, a cut connection). An explicit Idempotency-Key still decides
where one is given (tests/integration/test_api_uploads.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio

from tests.helpers.api_clients import count_recordings, store_files
from tests.helpers.fake_recognizer import FakeRecognizer
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.raw_http import RawUpload, until
from tests.helpers.serve_process import serve_process
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.owners import NewOwner, add_owner

VERBOSE = {
    "text": "Hello there. General Kenobi.",
    "language": "english",
    "duration": 3.0,
    "segments": [
        {"id": 0, "start": 0.0, "end": 1.2, "text": " Hello there."},
        {"id": 1, "start": 1.2, "end": 3.0, "text": " General Kenobi."},
    ],
}


def form(data: bytes, name: str = "a.wav", **fields: str) -> dict[str, Any]:
    return {"files": {"file": (name, data, "audio/wav")}, "data": fields}


@pytest.mark.scenario("intake", "A retry of the same upload names the first recording")
async def test_the_same_upload_again_names_the_first_record(
    db: Database,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
    as_ben: httpx.AsyncClient,
) -> None:
    first = await as_ann.post("/v1/recordings", **form(b"the talk", title="Talk"))
    assert first.status_code == 201, first.text
    again = await as_ann.post("/v1/recordings", **form(b"the talk", title="Talk"))
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert again.headers["location"] == first.headers["location"]
    # Another field, other bytes, another owner: another request, another record.
    for c, kwargs in (
        (as_ann, form(b"the talk", title="Another")),
        (as_ann, form(b"the talk", title="Talk", language="en")),
        (as_ann, form(b"the talk", name="b.wav", title="Talk")),
        (as_ann, form(b"the talk!", title="Talk")),
        (as_ben, form(b"the talk", title="Talk")),
    ):
        other = await c.post("/v1/recordings", **kwargs)
        assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    assert await count_recordings(db) == 6

    # The retry of a request whose answer was lost comes while the first still sends:
    # both stream at once, and the second to finish names the first.
    uploads = [await RawUpload.start(base_url, ann) for _ in range(2)]
    for u in uploads:
        await u.send(b"y" * 1000)
    await until(lambda: len(store_files(config)) == 6 + 2, "both uploads on disk")
    answers = []
    for u in uploads:
        await u.send(b"the same end")
        await u.end()
        answers.append(await u.answer())
        await u.aclose()
    assert [status for status, _ in answers] == [201, 200]
    assert answers[0][1]["id"] == answers[1][1]["id"]
    assert await count_recordings(db) == 7
    assert len(store_files(config)) == 7  # the retry's file went


@pytest.mark.scenario("openai", "A retried request names the first record")
async def test_the_same_openai_request_again_names_the_first_record(
    db: Database, config: Config, ann: NewOwner
) -> None:
    quick = Config(home=config.home, openai_wait_s=0.1)
    async with (
        serving(create_app(db, quick)) as url,
        httpx.AsyncClient(
            base_url=url, timeout=60, headers={"Authorization": f"Bearer {ann.token}"}
        ) as api,
    ):

        async def ask(**fields: str) -> httpx.Response:
            r = await api.post("/v1/audio/transcriptions", **form(b"RIFF the talk", **fields))
            assert r.status_code == 504, r.text  # no worker: every wait runs out
            return r

        first = (await ask(model="whisper-1")).headers["x-transcriber-recording-id"]
        # How the answer is shaped is not what the record is made of.
        for fields in ({"model": "whisper-1"}, {"response_format": "srt", "model": "other"}):
            assert (await ask(**fields)).headers["x-transcriber-recording-id"] == first
        other = await ask(model="whisper-1", language="en")
        assert other.headers["x-transcriber-recording-id"] != first
    assert await count_recordings(db) == 2


class GatedRecognizer(FakeRecognizer):
    """A remote recognizer whose answers wait until the test opens the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.asked = 0

    def answer(
        self, path: str, fields: dict[str, bytes], authorization: str | None
    ) -> tuple[int, Any]:
        self.asked += 1
        self.gate.wait(120)
        return 200, VERBOSE


@pytest.mark.scenario("openai", "The SDK's own retries make one record and one transcript")
async def test_the_sdks_retries_make_one_record(db: Database, db_url: str, tmp_path: Path) -> None:
    ann = await add_owner(db, "ann")
    with GatedRecognizer() as recognizer:
        async with serve_process(
            db_url, tmp_path / "home", "--workers", "1", recognizer_url=recognizer.url
        ) as service:
            # A client timeout shorter than the recognition: the SDK gives up on its
            # request and sends it again, as it does after a 5xx or a cut connection.
            sdk = openai.OpenAI(
                api_key=ann.token, base_url=f"{service.url}/v1", max_retries=4, timeout=1.5
            )

            def call() -> Any:
                with open(SAMPLES / "en.ogg", "rb") as f:
                    return sdk.audio.transcriptions.create(model="whisper-1", file=f)

            async with trio.open_nursery() as nursery:
                answered: list[Any] = []

                async def ask() -> None:
                    answered.append(await trio.to_thread.run_sync(call))

                nursery.start_soon(ask)

                async def retried() -> bool:
                    log = service.log.read_text()
                    return "openai_replayed" in log or await count_recordings(db) > 1

                with trio.fail_after(60):
                    while not await retried():
                        await trio.sleep(0.05)
                recognizer.gate.set()  # the retry is in: recognition may end now
        [transcript] = answered
    assert transcript.text == VERBOSE["text"]
    assert await count_recordings(db) == 1
    assert await db.run(lambda con: con.fetchval("SELECT count(*) FROM transcripts")) == 1
    assert recognizer.asked == 1
