"""The live face (capability `live`): OpenAI's realtime transcription protocol over a
WebSocket, spoken by the real `openai` SDK (`AsyncOpenAI.realtime.connect`, on
`websockets`) against the application served on loopback by Hypercorn's trio worker.

The SDK's realtime client is asyncio: each session runs in `asyncio.run` in a worker
thread, the test on trio. The turns' recognizer is a fake (the samples it got) but in
the test that speaks a sample to the real bundled model."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import av
import numpy as np
import openai
import pytest
import trio
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK, InvalidStatus

from tests.helpers.asyncio_thread import in_asyncio
from tests.helpers.generated_audio import SAMPLES
from tests.helpers.pg_pipeline import accept, journal
from transcriber.audio.processes import ProcessRecognizer
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.http.live.realtime import Live
from transcriber.http.live.recognizer import LiveRecognizer, whisper_decode
from transcriber.http.live.turns import LiveLimits
from transcriber.operators import add_operator
from transcriber.owners import NewOwner, revoke
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.operator import card
from transcriber.pipeline.runner import Pipeline
from transcriber.records.shares import add_share
from transcriber.storage.configured import blobs_of

RATE = 24_000
CHUNK_S = 0.1


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("live", title)


def pcm_of(path: Path) -> bytes:
    """A recording as the protocol's audio: 16-bit little-endian mono PCM at 24 kHz."""
    out = bytearray()
    with av.open(str(path)) as container:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        for frame in container.decode(audio=0):
            for converted in resampler.resample(frame):
                out += converted.to_ndarray().astype("<i2").tobytes()
        for converted in resampler.resample(None):
            out += converted.to_ndarray().astype("<i2").tobytes()
    return bytes(out)


def tone(seconds: float) -> bytes:
    t = np.arange(int(RATE * seconds)) / RATE
    return (np.sin(2 * np.pi * 440 * t) * 8000).astype("<i2").tobytes()


def chunks(pcm: bytes) -> list[str]:
    step = int(RATE * CHUNK_S) * 2
    return [base64.b64encode(pcm[i : i + step]).decode() for i in range(0, len(pcm), step)]


Script = Callable[[Any], Awaitable[Any]]


async def session(url: str, token: str, script: Script, **query: str) -> Any:
    """Run `script(connection)` on a realtime connection of the real SDK; its answer."""

    async def main() -> Any:
        client = openai.AsyncOpenAI(api_key=token, base_url=f"{url}/v1", max_retries=0)
        async with client.realtime.connect(
            extra_query={"intent": "transcription", **query}
        ) as connection:
            return await script(connection)

    return await in_asyncio(main())


async def next_event(connection: Any, seconds: float = 10.0) -> Any:
    return await asyncio.wait_for(connection.recv(), seconds)


def counting(samples: np.ndarray, language: str | None, prompt: str | None) -> str:
    """A fake recognizer: says how many 16 kHz samples it was given, and the hints."""
    return f"{samples.size} samples {language} {prompt}"


def live_app(db: Database, config: Config, decode: Any = counting, **limits: Any) -> Any:
    app = create_app(db, config)
    app.state.live = Live(LiveRecognizer(decode), LiveLimits(**limits))
    return app


async def live_records(db: Database) -> list[uuid.UUID]:
    """The sessions' records that entered the pipeline (journaled `live_ended`): a
    session is a record at `live` from its start, moved on to `received` when it ends."""
    return [e["recording_id"] for e in await journal(db) if e["kind"] == "live_ended"]


async def live_started(db: Database) -> list[uuid.UUID]:
    """Every session's record, from its start (journaled `accepted` with `via: live`)."""
    return [
        e["recording_id"]
        for e in await journal(db)
        if e["kind"] == "accepted" and e["detail"] == {"via": "live"}
    ]


async def until(check: Callable[[], Awaitable[Any]], seconds: float = 30.0) -> Any:
    """Ask `check` until it answers something true: the session is kept after its
    socket closed, in the server's own task, which nothing here can wait on."""
    with trio.fail_after(seconds):
        while not (found := await check()):
            await trio.sleep(0.05)
        return found


@pytest.fixture
def config(tmp_path: Path) -> Config:
    return Config(home=tmp_path / "home")


@scenario("A spoken turn is transcribed and the session is kept")
@scenario("A kept session is transcribed by the pipeline")
async def test_the_sdk_speaks_a_turn_and_the_session_is_kept(
    db: Database,
    ann: NewOwner,
    tmp_path: Path,
    model_dir: Path,
    warm_recognizer: ProcessRecognizer,
) -> None:
    config = Config(home=tmp_path / "home", model=str(model_dir))
    app = create_app(db, config)
    # The sample at once, not at real-time pace: the burst allows it here.
    app.state.live = Live(LiveRecognizer(whisper_decode(config)), LiveLimits(burst_s=30.0))
    pcm = pcm_of(SAMPLES / "en.ogg")

    async def speak(connection: Any) -> list[Any]:
        seen = [await next_event(connection)]
        await connection.session.update(
            session={
                "type": "transcription",
                "audio": {
                    "input": {
                        "format": {"type": "audio/pcm", "rate": 24000},
                        "transcription": {"model": "whisper-1", "language": "en"},
                        "turn_detection": None,
                    }
                },
            }
        )
        seen.append(await next_event(connection))
        for audio in chunks(pcm):
            await connection.input_audio_buffer.append(audio=audio)
        await connection.input_audio_buffer.commit()
        while seen[-1].type != "conversation.item.input_audio_transcription.completed":
            # The live decoder's child loads its model on the first pass.
            seen.append(await next_event(connection, seconds=120))
        return seen

    async with serving(app) as url:
        seen = await session(url, ann.token, speak)
        kinds = [e.type for e in seen]
        # Deltas of words two passes agreed on may come before the commit, the rest
        # after it; together they are the turn's text.
        assert kinds[:2] == ["session.created", "session.updated"], kinds
        assert set(kinds[2:-1]) == {
            "input_audio_buffer.committed",
            "conversation.item.input_audio_transcription.delta",
        }, kinds
        created, updated, *middle, done = seen
        [committed] = [e for e in middle if e.type == "input_audio_buffer.committed"]
        deltas = [e for e in middle if e.type != "input_audio_buffer.committed"]
        assert created.session.type == "transcription"
        assert updated.session.audio.input.transcription.language == "en"
        assert {committed.item_id, done.item_id} | {d.item_id for d in deltas} == {done.item_id}
        assert "".join(d.delta for d in deltas) == done.transcript
        words = set(done.transcript.lower().replace(",", " ").replace(".", " ").split())
        assert {"quarterly", "meeting", "engineers", "march"} <= words, done.transcript
        assert done.usage.seconds == pytest.approx(len(pcm) / (RATE * 2), abs=0.01)

        # Closed by the client: the session's audio is a record of Ann.
        [rid] = await until(lambda: live_records(db))
    row = await db.fetchrow("recording", rid)
    assert row["owner_id"] == ann.id and row["milestone"] == "received", dict(row)

    pipeline = Pipeline(db, audio_steps(config, warm_recognizer), workers=1)
    async with trio.open_nursery() as nursery:
        await nursery.start(pipeline.run)
        final = await until(lambda: _done(db, rid), seconds=120)
        nursery.cancel_scope.cancel()
    assert final["stopped"] is None, final
    assert final["duration_s"] == pytest.approx(len(pcm) / (RATE * 2), abs=0.1)
    transcript = await db.fetchrow("transcript", rid)
    assert "quarterly" in transcript["text"].lower(), transcript["text"]
    assert transcript["language"] == "en"  # the session's hint


async def _done(db: Database, rid: uuid.UUID) -> Any:
    current = await card(db, rid)
    return current if current and (current["done"] or current["stopped"]) else None


async def refused_upgrade(url: str, token: str, **query: str) -> tuple[int, bytes]:
    """The status and body of an upgrade the server refused (the SDK's connect raises
    `websockets`' InvalidStatus, which carries the HTTP answer)."""
    import websockets.exceptions

    async def nothing(connection: Any) -> None:
        raise AssertionError("the upgrade was accepted")

    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        await session(url, token, nothing, **query)
    return refused.value.response.status_code, refused.value.response.body or b""


async def bare_upgrade(url: str) -> tuple[int, bytes]:
    import websockets.asyncio.client
    import websockets.exceptions

    where = url.replace("http://", "ws://") + "/v1/realtime?intent=transcription"
    try:
        async with websockets.asyncio.client.connect(where):
            raise AssertionError("the upgrade was accepted")
    except websockets.exceptions.InvalidStatus as refused:
        return refused.response.status_code, refused.response.body or b""


@scenario("A missing or revoked token is refused before the upgrade")
@scenario("An operator's token and a share link's secret are refused")
async def test_a_missing_or_revoked_token_is_refused(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async with serving(live_app(db, config)) as url:
        # The SDK never connects without a key; `websockets`, which it connects with, can.
        status, body = await in_asyncio(bare_upgrade(url))
        assert status == 401 and b'"invalid_api_key"' in body, body
        status, body = await refused_upgrade(url, "not-a-token")
        assert status == 401 and b'"invalid_api_key"' in body, body
        # An operator's token and a share link's secret are no API tokens.
        operator = await add_operator(db, "olga")
        made = await add_share(db, ann.id, await accept(db, ann.id), note="", expires_at=None)
        assert made is not None
        for other in (operator.token, made[0]):
            status, body = await refused_upgrade(url, other)
            assert status == 401 and b'"invalid_api_key"' in body, body

        async def hello(connection: Any) -> str:
            return (await next_event(connection)).type

        assert await session(url, ann.token, hello) == "session.created"
        await revoke(db, "ann", by="test")
        status, body = await refused_upgrade(url, ann.token)
        assert status == 401 and b'"invalid_api_key"' in body, body
    assert await live_records(db) == []


@scenario("A connection without intent=transcription is refused")
async def test_other_intents_are_refused(db: Database, ann: NewOwner, config: Config) -> None:
    async with serving(live_app(db, config)) as url:
        status, body = await refused_upgrade(url, ann.token, intent="conversation")
        assert status == 400 and b'"invalid_intent"' in body, body


async def errors_then_alive(connection: Any, send: Callable[[], Awaitable[None]]) -> Any:
    """What `send` gets back, then proof the session goes on: a `session.update`
    answered."""
    await send()
    answer = await next_event(connection)
    await connection.session.update(session={"type": "transcription"})
    alive = await next_event(connection)
    assert alive.type == "session.updated", alive
    return answer


@scenario("Unreadable and unknown events get error events and the session goes on")
async def test_malformed_and_unknown_events(db: Database, ann: NewOwner, config: Config) -> None:
    async def script(connection: Any) -> list[Any]:
        await next_event(connection)  # session.created
        got = [
            await errors_then_alive(connection, lambda: connection.send_raw("{not json")),
            await errors_then_alive(connection, lambda: connection.send_raw("[1, 2]")),
            await errors_then_alive(connection, lambda: connection.send_raw(b"\x00\x01")),
            await errors_then_alive(
                connection, lambda: connection.send({"type": "response.create", "event_id": "e1"})
            ),
            await errors_then_alive(connection, lambda: connection.send_raw('{"audio": "AA=="}')),
        ]
        return got

    async with serving(live_app(db, config)) as url:
        bad_json, not_object, binary, unknown, untyped = await session(url, ann.token, script)
    for answer in (bad_json, not_object, binary):
        assert answer.type == "error" and answer.error.code == "invalid_json", answer
    assert unknown.type == "error" and unknown.error.code == "invalid_event", unknown
    assert unknown.error.param == "type" and unknown.error.event_id == "e1"
    assert "response.create" in unknown.error.message
    assert untyped.error.code == "missing_required_parameter", untyped
    assert await live_records(db) == []  # no audio, no record


@scenario("A turn past its bound is refused and the session goes on")
async def test_a_full_buffer_is_refused(db: Database, ann: NewOwner, config: Config) -> None:
    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.8)).decode())
        full = await errors_then_alive(
            connection,
            lambda: connection.input_audio_buffer.append(
                audio=base64.b64encode(tone(0.5)).decode()
            ),
        )
        await connection.input_audio_buffer.commit()
        return [full, await next_event(connection), await next_event(connection)]

    async with serving(live_app(db, config, max_turn_s=1.0)) as url:
        full, committed, recognized = await session(url, ann.token, script)
        assert full.type == "error" and full.error.code == "input_audio_buffer_full", full
        assert committed.type == "input_audio_buffer.committed"
        # The turn is the 0.8 s taken, not the 0.5 s refused: 12 800 samples at 16 kHz.
        assert recognized.delta.startswith("12800 samples"), recognized
        [rid] = await until(lambda: live_records(db))
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + int(0.8 * RATE) * 2  # the WAV of what was taken


@scenario("A session's audio and its appends are bounded")
async def test_a_session_is_bounded(db: Database, ann: NewOwner, config: Config) -> None:
    async def to_the_bound(connection: Any) -> list[Any]:
        await next_event(connection)
        for _ in range(2):
            await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.5)).decode())
            await connection.input_audio_buffer.commit()
            for _ in range(3):  # committed, delta, completed
                await next_event(connection)
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.5)).decode())
        too_long = await next_event(connection)
        try:
            after = await next_event(connection)
        except ConnectionClosedOK as closed:
            return [too_long, closed]
        raise AssertionError(f"the session went on past its bound: {after}")

    async def appends(connection: Any) -> list[Any]:
        await next_event(connection)
        return [
            await errors_then_alive(
                connection,
                lambda: connection.input_audio_buffer.append(
                    audio=base64.b64encode(b"\x00" * (RATE + 2)).decode()
                ),
            ),
            await errors_then_alive(
                connection, lambda: connection.input_audio_buffer.append(audio="not base64!")
            ),
        ]

    async with serving(live_app(db, config, max_session_s=1.2)) as url:
        too_long, closed = await session(url, ann.token, to_the_bound)
        # The third half second passed 1.2 s: refused, and the session ended with the
        # two turns before it kept.
        assert too_long.error.code == "session_too_long", too_long
        assert closed.rcvd is not None and closed.rcvd.reason == "session_too_long"
        [rid] = await until(lambda: live_records(db))
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + int(1.0 * RATE) * 2  # the two turns' WAV
    assert await end_reason(db, rid) == "too_long"
    async with serving(live_app(db, config, max_append_bytes=RATE)) as url:
        too_large, undecodable = await session(url, ann.token, appends)
    assert too_large.error.code == "input_audio_buffer_append_too_large", too_large
    assert undecodable.error.code == "invalid_value", undecodable


@scenario("A session update is checked, all of it or nothing")
async def test_session_updates_are_checked(db: Database, ann: NewOwner, config: Config) -> None:
    def update(**given: Any) -> Callable[[Any], Awaitable[None]]:
        def send(connection: Any) -> Awaitable[None]:
            return connection.session.update(
                session={"type": "transcription", "audio": {"input": given}}
            )

        return send

    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        answers = []
        for send in (
            update(transcription={"language": "rus", "prompt": "Kenobi"}),
            update(format={"type": "audio/pcmu"}),
            update(format={"type": "audio/pcm", "rate": 16000}),
            update(turn_detection={"type": "semantic_vad"}),
            update(transcription={"language": "Ru", "prompt": "Kenobi"}),
        ):
            await send(connection)
            answers.append(await next_event(connection))
        await connection.send({"type": "session.update", "session": {"type": "realtime"}})
        answers.append(await next_event(connection))
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.3)).decode())
        await connection.input_audio_buffer.commit()
        answers.append(await next_event(connection))
        answers.append(await next_event(connection))
        return answers

    async with serving(live_app(db, config)) as url:
        language, law, rate, vad, good, realtime, _, delta = await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    where = "session.audio.input"
    assert (language.error.code, language.error.param) == (
        "invalid_value",
        f"{where}.transcription.language",
    )
    assert (law.error.param, rate.error.param) == (f"{where}.format", f"{where}.format")
    assert (vad.error.code, vad.error.param) == ("unsupported", f"{where}.turn_detection")
    assert realtime.error.param == "session.type"
    # The refused updates changed nothing; the good one is the session's now.
    assert good.type == "session.updated"
    assert good.session.audio.input.transcription.language == "ru"
    assert good.session.audio.input.transcription.prompt == "Kenobi"
    assert delta.delta == "4800 samples ru Kenobi", delta
    row = await db.fetchrow("recording", rid)
    assert row["language"] == "ru"  # the kept record's hint is the session's


@scenario("A cleared turn is not recognized, and the session keeps its audio")
async def test_clear_forgets_the_turn_not_the_session(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.5)).decode())
        await connection.input_audio_buffer.clear()
        cleared = await next_event(connection)
        await connection.input_audio_buffer.commit()
        empty = await next_event(connection)
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.25)).decode())
        await connection.input_audio_buffer.commit()
        return [cleared, empty, await next_event(connection), await next_event(connection)]

    async with serving(live_app(db, config)) as url:
        cleared, empty, committed, delta = await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    assert cleared.type == "input_audio_buffer.cleared"
    assert empty.error.code == "input_audio_buffer_commit_empty", empty
    assert committed.type == "input_audio_buffer.committed"
    assert delta.delta.startswith("4000 samples"), delta  # the quarter second only
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + int(0.75 * RATE) * 2  # both kept


@scenario("A dropped connection keeps the session")
async def test_a_dropped_connection_keeps_the_session(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> None:
        await next_event(connection)
        for audio in chunks(tone(1.0)):
            await connection.input_audio_buffer.append(audio=audio)
        await connection.input_audio_buffer.commit()
        await next_event(connection)  # committed: every append arrived before it
        # The connection cut, no closing handshake: the transport of `websockets`,
        # which the SDK connects with.
        connection._connection.transport.abort()

    # An upload's size bound is not a session's (its own bound holds it): a session
    # over it is kept all the same.
    config = attrs.evolve(config, max_upload_bytes=1024)
    async with serving(live_app(db, config)) as url:
        await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    row = await db.fetchrow("recording", rid)
    assert row["owner_id"] == ann.id and row["size_bytes"] == 44 + RATE * 2
    source = await db.run(
        lambda con: con.fetchval("SELECT source_path FROM recordings WHERE id = $1", rid)
    )
    async with blobs_of(config).local_file(source) as kept:
        with av.open(str(kept)) as container:
            stream = container.streams.audio[0]
            assert (stream.rate, stream.channels) == (RATE, 1)


@scenario("An idle session is closed and kept")
async def test_an_idle_session_is_closed_and_kept(
    db: Database, ann: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> list[Any]:
        await next_event(connection)
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.5)).decode())
        told = await next_event(connection)  # after the idle bound, unasked
        with pytest.raises(ConnectionClosedOK):
            await next_event(connection)
        return told

    async with serving(live_app(db, config, idle_s=0.5)) as url:
        told = await session(url, ann.token, script)
        [rid] = await until(lambda: live_records(db))
    assert told.type == "error" and told.error.code == "session_idle", told
    row = await db.fetchrow("recording", rid)
    assert row["size_bytes"] == 44 + int(0.5 * RATE) * 2
    assert await end_reason(db, rid) == "idle"


@scenario("An owner's sessions at once are bounded")
async def test_an_owners_sessions_are_bounded(
    db: Database, ann: NewOwner, ben: NewOwner, config: Config
) -> None:
    async def script(connection: Any) -> tuple[int, bytes, str]:
        await next_event(connection)
        # While Ann's one session is open: a second of hers is refused, Ben's is not.
        ann_again = openai.AsyncOpenAI(api_key=ann.token, base_url=base, max_retries=0)
        with pytest.raises(InvalidStatus) as refused:
            async with ann_again.realtime.connect(extra_query={"intent": "transcription"}):
                pass
        ben_client = openai.AsyncOpenAI(api_key=ben.token, base_url=base, max_retries=0)
        async with ben_client.realtime.connect(extra_query={"intent": "transcription"}) as bens:
            bens_first = (await next_event(bens)).type
        return refused.value.response.status_code, refused.value.response.body, bens_first

    async def hello(connection: Any) -> str:
        return (await next_event(connection)).type

    app = live_app(db, config, owner_sessions=1)

    async def all_closed() -> bool:
        # The server ends a session after the client's close returned.
        return not app.state.live.open

    async with serving(app) as url:
        base = f"{url}/v1"
        status, body, bens_first = await session(url, ann.token, script)
        assert status == 429 and b'"too_many_sessions"' in body, body
        assert bens_first == "session.created"
        # Closed, her place is free again.
        await until(all_closed)
        assert await session(url, ann.token, hello) == "session.created"


@scenario("A session open when the service stops is kept")
async def test_a_session_open_at_shutdown_is_kept(
    db: Database, ann: NewOwner, config: Config
) -> None:
    appended, token = trio.Event(), trio.lowlevel.current_trio_token()

    async def script(connection: Any) -> None:
        await next_event(connection)
        await connection.input_audio_buffer.append(audio=base64.b64encode(tone(0.5)).decode())
        await connection.input_audio_buffer.commit()
        await next_event(connection)  # committed: the half second arrived
        token.run_sync_soon(appended.set)  # to the test's trio loop, from this thread
        with pytest.raises(ConnectionClosed):
            while True:
                told.append(await next_event(connection, seconds=60))

    told: list[Any] = []
    async with trio.open_nursery() as nursery:
        async with serving(live_app(db, config)) as url:
            nursery.start_soon(session, url, ann.token, script)
            await appended.wait()
        # Leaving `serving` cancelled the server, the session's task with it.
    [rid] = await until(lambda: live_records(db))
    row = await db.fetchrow("recording", rid)
    assert row["owner_id"] == ann.id and row["size_bytes"] == 44 + int(0.5 * RATE) * 2
    # Told why (the stopping server waits a second for it), and kept with why.
    assert [e.error.code for e in told if e.type == "error"] == ["server_shutting_down"]
    assert await end_reason(db, rid) == "shutdown"


async def end_reason(db: Database, rid: uuid.UUID) -> str:
    """Why the session of record `rid` ended (`transcriber.live.endings`)."""
    return str(
        await db.run(
            lambda con: con.fetchval(
                "SELECT end_reason FROM live_sessions WHERE recording_id = $1", rid
            )
        )
    )
