"""Live text while a turn is spoken (capability `live`), with the real `openai` SDK:
deltas of words two passes agree on, turns completed at the server VAD's silence, and
fairness — the service's bound of sessions, appends past real time, a session that
falls behind going on as a recording only. The decoders are fakes that the test steps
with events (a pass starts, the test lets it finish); the VAD's judge is the energy one
(the tone is no speech to Silero: tests/unit/test_live_voice.py hears real speech)."""

from __future__ import annotations

import asyncio
import base64
import os
import queue
import signal
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import openai
import pytest
from websockets.exceptions import InvalidStatus

from tests.integration.test_live import (
    RATE,
    chunks,
    counting,
    live_records,
    next_event,
    session,
    tone,
    until,
)
from transcriber.audio.agreement import Word
from transcriber.audio.live import DecoderDied, LiveDecoder
from transcriber.audio.voice import EnergyVoice
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.http.live.realtime import Live
from transcriber.http.live.recognizer import LiveRecognizer
from transcriber.http.live.turns import LiveLimits
from transcriber.owners import NewOwner

SILENCE = b"\0\0"


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("live", title)


def silence(seconds: float) -> bytes:
    return SILENCE * int(RATE * seconds)


def app_with(db: Database, config: Config, decode: Any, **limits: Any) -> Any:
    app = create_app(db, config)
    app.state.live = Live(LiveRecognizer(decode), LiveLimits(**limits), judge=EnergyVoice)
    return app


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(home=tmp_path / "home")


async def append_all(connection: Any, pcm: bytes) -> None:
    for audio in chunks(pcm):
        await connection.input_audio_buffer.append(audio=audio)


async def until_kind(connection: Any, kind: str, seen: list[Any]) -> Any:
    while True:
        event = await next_event(connection)
        seen.append(event)
        if event.type == kind:
            return event


async def synced(connection: Any, seen: list[Any]) -> None:
    """Until the server has handled every event sent so far (it answers a session update
    after them), the events before its answer into `seen`."""
    await connection.session.update(session={"type": "transcription"})
    await until_kind(connection, "session.updated", seen)
    seen.pop()


@scenario("A turn completes at the server VAD's silence")
async def test_server_vad_completes_a_turn_at_silence(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await connection.session.update(
            session={
                "type": "transcription",
                "audio": {
                    "input": {
                        "turn_detection": {
                            "type": "server_vad",
                            "threshold": 0.5,
                            "prefix_padding_ms": 200,
                            "silence_duration_ms": 300,
                        }
                    }
                },
            }
        )
        seen = [await next_event(connection)]
        # Half a second of quiet, a second of "speech", a second of quiet: no commit.
        await append_all(connection, silence(0.5) + tone(1.0) + silence(1.0))
        await until_kind(connection, "conversation.item.input_audio_transcription.completed", seen)
        return seen

    async with serving(app_with(db, config, counting)) as url:
        updated, *seen = await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    assert updated.session.audio.input.turn_detection.type == "server_vad"
    assert updated.session.audio.input.turn_detection.silence_duration_ms == 300
    kinds = [e.type for e in seen]
    assert kinds == [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "conversation.item.input_audio_transcription.delta",
        "conversation.item.input_audio_transcription.completed",
    ], kinds
    started, stopped, committed, delta, done = seen
    assert len({started.item_id, stopped.item_id, committed.item_id, done.item_id}) == 1
    # Speech at 500 ms less the 200 ms of padding; stopped 300 ms after it ended (1.5 s),
    # within a 32 ms window of the VAD and a 100 ms append.
    assert 250 <= started.audio_start_ms <= 350, started
    assert 1750 <= stopped.audio_end_ms <= 1950, stopped
    # The turn is the padding, the tone and the silence up to the stop: ~1.5 s of the 2.5.
    assert 1.3 <= done.usage.seconds <= 1.7, done.usage
    assert delta.delta == done.transcript
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + int(2.5 * RATE) * 2  # the session keeps all of it


class Stepped:
    """A fake decoder the test steps: each pass says it started (`started`), then waits
    for the test's leave (`go`) unless it is free; its words are one a quarter second
    heard, then a last word that changes with every pass (a word cut off mid-way)."""

    def __init__(self, free: bool = False, fail: bool = False):
        self.started: queue.Queue[int] = queue.Queue()
        self.go = threading.Semaphore(0)
        self.free = free
        self.fail = fail

    def __call__(self, samples: np.ndarray, language: str | None, prompt: str | None) -> Any:
        heard = int(samples.size / 16000 / 0.25 + 1e-6)
        self.started.put(heard)
        if self.fail:
            raise DecoderDied("live decoder died: signal 9")
        if not self.free:
            self.go.acquire(timeout=30)
        return [Word(i * 0.25, (i + 1) * 0.25, f" w{i}") for i in range(heard)] + [
            Word(heard * 0.25, heard * 0.25 + 0.1, f" maybe{samples.size}")
        ]

    async def passed(self) -> int:
        return await asyncio.to_thread(self.started.get, timeout=30)


@scenario("Deltas carry only words two passes agree on")
async def test_deltas_carry_words_two_passes_agree_on(
    db: Database, ann: NewOwner, config: Config
) -> None:
    decoder = Stepped(free=True)

    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await append_all(connection, tone(1.0))
        assert await decoder.passed() == 4  # a pass over the first second
        await append_all(connection, tone(1.0))
        assert await decoder.passed() == 8  # and over both
        seen: list[Any] = []
        await until_kind(connection, "conversation.item.input_audio_transcription.delta", seen)
        await connection.input_audio_buffer.commit()
        await until_kind(connection, "conversation.item.input_audio_transcription.completed", seen)
        return seen

    # Steps of a second (the chosen policy's are half that): a pass over each second.
    async with serving(app_with(db, config, decoder, step_s=1.0)) as url:
        seen = await session(url, ann.token, script)
    first, committed, *rest = seen
    # The words both passes heard, before the turn was committed; not the cut-off one.
    assert first.type == "conversation.item.input_audio_transcription.delta"
    assert first.delta == "w0 w1 w2 w3", first
    assert committed.type == "input_audio_buffer.committed"
    assert committed.item_id == first.item_id
    *deltas, done = rest
    # The last pass, with the whole turn heard, gives the rest: the last word at last.
    assert [d.delta for d in deltas] == [" w4 w5 w6 w7 maybe32000"], deltas
    assert done.transcript == "w0 w1 w2 w3 w4 w5 w6 w7 maybe32000"
    assert first.delta + "".join(d.delta for d in deltas) == done.transcript


class SlowFirst(Stepped):
    """The first pass is held by the test and then takes longer than a step; the
    others are free."""

    def __call__(self, samples: np.ndarray, language: str | None, prompt: str | None) -> Any:
        first = self.free is False
        self.free = True
        found = super().__call__(samples, language, prompt)
        if first:
            self.go.acquire(timeout=30)
            time.sleep(0.6)  # a pass slower than the half-second step: the condition tested
            self.done.set()
        return found

    def __init__(self) -> None:
        super().__init__(free=True)
        self.free = False
        self.done = threading.Event()


@scenario("A session passes every half second while its passes keep up")
async def test_half_second_steps_while_passes_keep_up_a_second_after_a_slow_one(
    db: Database, ann: NewOwner, config: Config
) -> None:
    decoder = SlowFirst()

    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        seen: list[Any] = []
        await append_all(connection, tone(0.5))
        assert await decoder.passed() == 2  # a pass after half a second
        await append_all(connection, tone(0.7))
        await synced(connection, seen)
        decoder.go.release()
        await asyncio.to_thread(decoder.done.wait, 30)
        # It took 0.6 s: the next pass waits for a second of new audio, not half of one.
        await append_all(connection, tone(0.3))
        assert await decoder.passed() == 6
        # That one kept up: half a second again.
        await append_all(connection, tone(0.5))
        assert await decoder.passed() == 8
        await connection.input_audio_buffer.commit()
        await until_kind(connection, "conversation.item.input_audio_transcription.completed", seen)
        return seen

    async with serving(app_with(db, config, decoder, burst_s=30)) as url:
        seen = await session(url, ann.token, script)
    assert seen[-1].transcript.startswith("w0 w1"), seen[-1]


@scenario("Appends faster than real time are refused")
async def test_appends_faster_than_real_time_are_refused(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.8)).decode())
        # At once after it: 1.3 s sent in no time, past the 1 s burst.
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.5)).decode())
        refused = await next_event(connection)
        await connection.input_audio_buffer.commit()
        return [refused, await next_event(connection), await next_event(connection)]

    async with serving(app_with(db, config, counting, burst_s=1.0)) as url:
        refused, committed, delta = await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    assert refused.type == "error" and refused.error.code == "rate_limit_exceeded", refused
    assert refused.error.param == "audio"
    assert committed.type == "input_audio_buffer.committed"
    assert delta.delta.startswith("12800 samples"), delta  # the 0.8 s taken, not the 0.5
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + int(0.8 * RATE) * 2  # nor kept


@scenario("A live session is refused when the service holds its most")
async def test_the_service_bounds_its_sessions(
    db: Database, ann: NewOwner, ben: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> tuple[int, bytes]:
        await next_event(connection)
        bens = openai.AsyncOpenAI(api_key=ben.token, base_url=base, max_retries=0)
        with pytest.raises(InvalidStatus) as refused:
            async with bens.realtime.connect(extra_query={"intent": "transcription"}):
                pass
        return refused.value.response.status_code, refused.value.response.body or b""

    async def hello(connection: Any) -> str:
        return str((await next_event(connection)).type)

    app = app_with(db, config, counting, max_sessions=1)

    async def all_closed() -> bool:
        return not app.state.live.open

    async with serving(app) as url:
        base = f"{url}/v1"
        status, body = await session(url, ann.token, script)
        assert status == 429 and b'"too_many_sessions"' in body, body
        assert b"the service holds its most live sessions" in body, body
        await until(all_closed)
        assert await session(url, ben.token, hello) == "session.created"


@scenario("A session that falls behind goes on as a recording only")
async def test_a_session_behind_goes_on_as_a_recording(
    db: Database, ann: NewOwner, config: Config
) -> None:
    decoder = Stepped()

    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        seen: list[Any] = []
        await append_all(connection, tone(0.3))
        await decoder.passed()  # the first pass, over 0.3 s, is held…
        await append_all(connection, tone(1.0))
        await synced(connection, seen)
        decoder.go.release()  # …while a second more came: 1 s behind, slow steps
        await decoder.passed()
        await append_all(connection, tone(1.5))
        await synced(connection, seen)
        decoder.go.release()  # 1.5 s behind even so: the live text stops
        if not any(e.type == "error" for e in seen):  # (or told at 2 s behind already)
            await until_kind(connection, "error", seen)
        await append_all(connection, tone(0.5))  # and the session goes on
        await connection.input_audio_buffer.commit()
        await until_kind(connection, "conversation.item.input_audio_transcription.failed", seen)
        return seen

    app = app_with(
        db, config, decoder, step_s=0.2, slow_step_s=0.2, behind_s=0.5, give_up_s=1.0, burst_s=30
    )
    async with serving(app) as url:
        seen = await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    errors = [e for e in seen if e.type == "error"]
    assert [e.error.code for e in errors] == ["live_transcription_stopped"], seen
    assert errors[0].error.type == "server_error"
    kinds = [e.type for e in seen[seen.index(errors[0]) + 1 :]]
    assert kinds == [
        "input_audio_buffer.committed",
        "conversation.item.input_audio_transcription.failed",
    ], kinds
    assert decoder.started.empty()  # no pass after it stopped
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + 2 * (7200 + 24000 + 36000 + 12000)  # all of it kept


@scenario("A live decoder that dies ends the live text, not the session")
async def test_a_dead_decoder_ends_the_live_text_not_the_session(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await append_all(connection, tone(1.0))
        seen: list[Any] = []
        await until_kind(connection, "error", seen)
        await connection.input_audio_buffer.commit()
        await until_kind(connection, "conversation.item.input_audio_transcription.failed", seen)
        await connection.session.update(session={"type": "transcription"})
        await until_kind(connection, "session.updated", seen)
        return seen

    async with serving(app_with(db, config, Stepped(fail=True), step_s=0.5)) as url:
        seen = await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    assert seen[0].error.code == "live_transcription_stopped", seen
    assert "decoder" in seen[0].error.message
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + RATE * 2


def test_the_live_decoder_child_survives_a_kill(model_dir: Path) -> None:
    """The real child with the bundled model, not niced: it hears the sample; killed,
    the pass it was asked fails, and the next pass starts a fresh child."""
    from tests.helpers.generated_audio import SAMPLES
    from tests.integration.test_live import pcm_of
    from transcriber.http.live.recognizer import to_whisper

    samples = to_whisper(pcm_of(SAMPLES / "en.ogg"), RATE)[: 16000 * 3]
    decoder = LiveDecoder(Config(model=str(model_dir)))
    try:
        heard = "".join(w.text for w in decoder.decode(samples, "en", None)).lower()
        assert "quarterly" in heard, heard
        assert decoder.pid is not None
        # At the daemon's own priority: ahead of the batch recognizers, which are niced.
        assert os.getpriority(os.PRIO_PROCESS, decoder.pid) == os.getpriority(os.PRIO_PROCESS, 0)
        os.kill(decoder.pid, signal.SIGKILL)
        with pytest.raises(DecoderDied, match="signal 9"):
            decoder.decode(samples, "en", None)
        again = decoder.decode(samples, "en", None)
        assert "quarterly" in "".join(w.text for w in again).lower()
        assert decoder.started == 2
    finally:
        decoder.close()


async def test_a_monologue_with_server_vad_is_cut_into_bounded_turns(
    db: Database, ann: NewOwner, config: Config
) -> None:
    """Speech that never pauses does not grow one turn without bound: at the turn bound
    the server commits it, and the speech goes on in the next."""

    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await connection.session.update(
            session={
                "type": "transcription",
                "audio": {"input": {"turn_detection": {"type": "server_vad"}}},
            }
        )
        seen = [await next_event(connection)]
        await append_all(connection, tone(2.5) + silence(0.5))
        while sum(e.type.endswith(".completed") for e in seen) < 3:
            seen.append(await next_event(connection))
        return seen

    async with serving(app_with(db, config, counting, max_turn_s=1.0, burst_s=30)) as url:
        seen = await session(url, ann.token, script)
    committed = [e for e in seen if e.type == "input_audio_buffer.committed"]
    done = [e for e in seen if e.type.endswith(".completed")]
    assert [e.type for e in seen].count("input_audio_buffer.speech_started") == 1
    assert len(committed) == 3 and [d.item_id for d in done] == [c.item_id for c in committed]
    assert [c.previous_item_id for c in committed[1:]] == [c.item_id for c in committed[:2]]
    # At most the bound each (the padding and the 100 ms append past it included).
    assert all(d.usage.seconds <= 1.1 for d in done), [d.usage for d in done]
