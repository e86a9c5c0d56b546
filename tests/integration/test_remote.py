"""The OpenAI-compatible recognizer against a real HTTP server on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors import StopRecord, Wakeup, Worker
from tests.helpers.fake_recognizer import FakeRecognizer
from tests.helpers.pg_pipeline import accept, noop, state
from transcriber.audio.remote import RemoteRecognizer, Transient
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.options import RecognitionOptions
from transcriber.pipeline.audio_steps import remote_step
from transcriber.pipeline.pg_queue import PgQueue, Saved
from transcriber.pipeline.step_table import step_table

VERBOSE = {
    "text": "Hello there. General Kenobi.",
    "language": "english",
    "duration": 3.0,
    "segments": [
        {"id": 0, "start": 0.0, "end": 1.2, "text": " Hello there."},
        {"id": 1, "start": 1.2, "end": 3.0, "text": " General Kenobi."},
    ],
}


class FakeOpenAI(FakeRecognizer):
    """Answers from a script: each request takes the next (status, body) and is
    recorded with its form fields and headers."""

    def __init__(self, script: list[tuple[int, Any]]):
        super().__init__()
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []

    def answer(
        self, path: str, fields: dict[str, bytes], authorization: str | None
    ) -> tuple[int, Any]:
        self.requests.append({"path": path, "fields": fields, "authorization": authorization})
        return self.script.pop(0) if self.script else (500, "no script")


@pytest.fixture
def wav(tmp_path: Path) -> Path:
    import wave

    path = tmp_path / "a.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * 16000)
    return path


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_verbose_json_becomes_segments(wav: Path, aio_loop: None) -> None:
    with FakeOpenAI([(200, VERBOSE)]) as server:
        got = await RemoteRecognizer(server.url, "sk-test").transcribe(wav, "en")
    assert got.text == "Hello there. General Kenobi."
    assert got.segments == [
        {"start": 0.0, "end": 1.2, "text": "Hello there.", "words": []},
        {"start": 1.2, "end": 3.0, "text": "General Kenobi.", "words": []},
    ]
    assert (got.language, got.model) == ("english", "remote:whisper-1")
    sent = server.requests[0]
    assert sent["path"] == "/v1/audio/transcriptions"
    assert sent["authorization"] == "Bearer sk-test"
    assert sent["fields"]["response_format"] == b"verbose_json"
    assert sent["fields"]["language"] == b"en"
    assert sent["fields"]["file"] == wav.read_bytes()
    assert sent["fields"]["timestamp_granularities[]"] == b"word"  # after b"segment"
    assert "prompt" not in sent["fields"] and "temperature" not in sent["fields"]


@pytest.mark.scenario(
    "recognition", "The remote recognizer is asked for the task, words, prompt and temperature"
)
async def test_remote_translate_with_words_prompt_and_temperature(
    wav: Path, aio_loop: None
) -> None:
    # OpenAI's answer: the words beside the segments, not inside them.
    answer = {
        **VERBOSE,
        "words": [
            {"word": "Hello", "start": 0.0, "end": 0.5},
            {"word": "there.", "start": 0.5, "end": 1.2},
            {"word": "General", "start": 1.2, "end": 2.0},
            {"word": "Kenobi.", "start": 2.0, "end": 3.0},
        ],
    }
    options = RecognitionOptions(task="translate", prompt="Star Wars", temperature=0.2)
    with FakeOpenAI([(200, answer)]) as server:
        got = await RemoteRecognizer(server.url).transcribe(wav, "ru", options)
    sent = server.requests[0]
    assert sent["path"] == "/v1/audio/translations"
    assert sent["fields"]["prompt"] == b"Star Wars"
    assert sent["fields"]["temperature"] == b"0.2"
    assert sent["fields"]["response_format"] == b"verbose_json"
    assert "timestamp_granularities[]" in sent["fields"]
    assert "language" not in sent["fields"]  # translations take none: the output is English
    assert [[w["word"] for w in s["words"]] for s in got.segments] == [
        ["Hello", "there."],
        ["General", "Kenobi."],
    ]
    assert got.segments[1]["words"][0] == {
        "start": 1.2,
        "end": 2.0,
        "word": "General",
        "probability": None,
    }


async def test_5xx_is_retried_then_succeeds(wav: Path, aio_loop: None) -> None:
    with FakeOpenAI([(503, "busy"), (502, "bad gateway"), (200, VERBOSE)]) as server:
        got = await RemoteRecognizer(server.url, first_pause_s=0.01).transcribe(wav, None)
    assert got.text == VERBOSE["text"]
    assert len(server.requests) == 3
    assert server.requests[0]["authorization"] is None
    assert "language" not in server.requests[0]["fields"]


async def test_connection_refused_is_transient(wav: Path, aio_loop: None) -> None:
    recognizer = RemoteRecognizer(f"http://127.0.0.1:{free_port()}", tries=2, first_pause_s=0.01)
    with pytest.raises(Transient, match="ConnectError"):
        await recognizer.transcribe(wav, None)


async def test_4xx_about_the_audio_stops(wav: Path, aio_loop: None) -> None:
    with FakeOpenAI([(400, {"error": {"message": "Invalid file format."}})]) as server:
        with pytest.raises(StopRecord) as stop:
            await RemoteRecognizer(server.url).transcribe(wav, None)
    assert stop.value.reason == "recognizer_refused_audio"
    assert "Invalid file format" in stop.value.error
    assert len(server.requests) == 1  # not retried


async def normalized_records(db: Database, owner_id: int, wav: Path, n: int = 1) -> list[Any]:
    """Records past normalize, oldest first, their audio at `wav`."""
    ids = [await accept(db, owner_id, f"{i}.wav") for i in range(n)]
    queue = PgQueue(db, step_table(normalize=noop, recognize=noop))
    # All claimed before any commit: a record moved on would be claimed first again.
    jobs = [await queue.read(await queue.claim()) for _ in ids]
    for job in jobs:
        assert await queue.commit(
            job, queue.steps["received"], Saved("save_normalized", (str(wav), 1.0))
        )
    return ids


async def test_through_the_pipeline(db: Database, owner_id: int, wav: Path) -> None:
    rid, refused = await normalized_records(db, owner_id, wav, 2)
    with FakeOpenAI([(200, VERBOSE), (415, "unsupported media")]) as server:
        config = Config(recognizer_url=server.url)
        steps = step_table(
            normalize=noop, recognize=remote_step(config, RemoteRecognizer(server.url))
        )
        worker = Worker("w", PgQueue(db, steps), steps, Wakeup())
        assert await worker.work_once()  # the first record normalized first
        assert await worker.work_once()
    assert (await state(db, rid))["milestone"] == "transcribed"
    assert (await db.fetchrow("transcript", rid))["text"] == VERBOSE["text"]
    stopped = await state(db, refused)
    assert (stopped["milestone"], stopped["stop_reason"], stopped["attempts"]) == (
        "normalized",
        "recognizer_refused_audio",
        1,
    )  # its one claim: no retry


async def test_unreachable_server_fails_the_attempt(db: Database, owner_id: int, wav: Path) -> None:
    [rid] = await normalized_records(db, owner_id, wav)
    url = f"http://127.0.0.1:{free_port()}"
    steps = step_table(
        normalize=noop,
        recognize=remote_step(Config(recognizer_url=url), RemoteRecognizer(url, tries=1)),
    )
    assert await Worker("w", PgQueue(db, steps), steps, Wakeup()).work_once()
    after = await state(db, rid)
    # Transient: counted as a failed attempt with a retry pause, not a stop.
    assert (after["milestone"], after["attempts"], after["stopped_at"]) == ("normalized", 1, None)
    assert after["retry_at"] is not None


@pytest.mark.scenario("pipeline", "NUL in a recognizer's text is dropped at the step's edge")
async def test_a_nul_bearing_remote_result_is_stored_without_it(
    db: Database, owner_id: int, wav: Path
) -> None:
    [rid] = await normalized_records(db, owner_id, wav)
    nul = {
        "text": "Hello\u0000 there.",
        "language": "en",
        "segments": [{"start": 0.0, "end": 1.0, "text": "Hello\u0000 there."}],
    }
    with FakeOpenAI([(200, nul)]) as server:
        steps = step_table(
            normalize=noop,
            recognize=remote_step(Config(recognizer_url=server.url), RemoteRecognizer(server.url)),
        )
        assert await Worker("w", PgQueue(db, steps), steps, Wakeup()).work_once()
    after = await state(db, rid)
    assert (after["milestone"], after["attempts"]) == ("transcribed", 0)
    stored = await db.fetchrow("transcript", rid)
    assert stored["text"] == "Hello there."
    assert [s["text"] for s in stored["segments"]] == ["Hello there."]
