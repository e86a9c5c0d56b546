"""`stream=true` on the OpenAI endpoint (capability `openai`): the real `openai` SDK reads
server-sent events from a real service whose pipeline is the real one, its recognizer
scripted: a delta arrives while the record is still being recognized (the recognizer
waits for the test to have read it), and the text of the deltas is the done event's."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest
import trio

from actors import StopRecord
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.pg_pipeline import table
from transcriber.audio.recognize import Transcript
from transcriber.audio.threads import Control
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.http.openai.streamed import Said
from transcriber.owners import NewOwner
from transcriber.pipeline.audio_steps import normalize_step, recognize_step
from transcriber.pipeline.runner import Pipeline
from transcriber.records.drafts import Drafts

FIRST, SECOND = "Hello there.", "General Kenobi."
WAIT_S = 30.0


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("openai", title)


class Scripted:
    """Hears FIRST, then waits until the test has read it as a delta before it hears
    SECOND and returns: only a delta sent while recognition runs lets it go on."""

    def __init__(self) -> None:
        self.read_first = threading.Event()

    def transcribe(
        self, audio: Path, duration_s: float, language: Any, control: Control, options: Any
    ) -> Transcript:
        control.report(0.5)
        control.draft(FIRST)
        if not self.read_first.wait(WAIT_S):
            raise AssertionError("no delta reached the client while the record was recognized")
        control.draft(SECOND)
        words = [{"start": 0.0, "end": 1.0, "word": " x", "probability": 1.0}]
        segments = [
            {"start": 0.0, "end": 1.0, "text": FIRST, "words": words},
            {"start": 1.0, "end": 2.0, "text": SECOND, "words": words},
        ]
        return Transcript(f"{FIRST} {SECOND}", segments, "en", "scripted")


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(home=tmp_path / "home", openai_wait_s=60.0)


@pytest.fixture
async def url(db: Database, config: Config) -> AsyncIterator[str]:
    async with serving(create_app(db, config)) as url:
        yield url


def stream(url: str, owner: NewOwner, **fields: Any) -> Any:
    client = openai.OpenAI(api_key=owner.token, base_url=f"{url}/v1", max_retries=0)
    with open(SAMPLES / "en.ogg", "rb") as f:
        return client.audio.transcriptions.create(model="whisper-1", file=f, stream=True, **fields)


@scenario("A streamed transcription sends text as it is recognized")
async def test_deltas_come_while_the_record_is_recognized(
    db: Database, config: Config, url: str, ann: NewOwner
) -> None:
    scripted = Scripted()
    steps = table(
        normalize=normalize_step(config),
        recognize=recognize_step(config, scripted, drafts=Drafts(db)),  # type: ignore[arg-type]
    )

    def read() -> list[Any]:
        seen = []
        for e in stream(url, ann, response_format="text"):
            seen.append(e)
            if e.type == "transcript.text.delta":
                scripted.read_first.set()
        return seen

    async with trio.open_nursery() as nursery:
        await nursery.start(Pipeline(db, steps, workers=1).run)
        seen = await trio.to_thread.run_sync(read)
        nursery.cancel_scope.cancel()
    kinds = [e.type for e in seen]
    assert kinds == ["transcript.text.delta", "transcript.text.delta", "transcript.text.done"]
    assert seen[0].delta == FIRST  # while recognition waited for it
    assert "".join(e.delta for e in seen[:-1]) == seen[-1].text == f"{FIRST} {SECOND}"


@scenario("A streamed transcription sends text as it is recognized")
async def test_a_stop_is_an_error_event_the_sdk_raises(
    db: Database, config: Config, url: str, ann: NewOwner
) -> None:
    async def stop(job: Any, progress: Any) -> None:
        raise StopRecord("empty_audio", "said the test")

    async with trio.open_nursery() as nursery:
        await nursery.start(Pipeline(db, table(normalize=stop), workers=1).run)

        def read() -> BaseException | None:
            try:
                list(stream(url, ann))
            except openai.APIError as e:
                return e
            return None

        error = await trio.to_thread.run_sync(read)
        nursery.cancel_scope.cancel()
    assert isinstance(error, openai.APIError)
    assert error.code == "empty_audio" and "said the test" not in str(error)


def test_a_delta_only_continues_what_was_sent() -> None:
    said = Said()
    assert said.delta("Hello") == "Hello"
    assert said.delta("Hello there") == " there"
    # A later attempt heard otherwise: nothing is taken back, nothing sent that would
    # not continue it; the done event's text is the record's.
    assert said.delta("Hallo there, friend") == ""
    assert said.delta("Hello there") == ""
    assert said.delta("Hello there, friend") == ", friend"
