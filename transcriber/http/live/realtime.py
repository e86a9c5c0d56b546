"""`GET /v1/realtime?intent=transcription`: the WebSocket of OpenAI's realtime
transcription protocol (the `openai` SDK's `client.realtime.connect`).

Before the upgrade is accepted: the owner's bearer token (the SDK sends it as
`Authorization`) or the owner's page's session cookie from this site's own page
(`session.caller`), else a 401 (a foreign Origin: 403) in OpenAI's error shape and no
socket; a query without
`intent=transcription`, a 400. After it: `session.created`, then each client event in
turn — `session.update` → `session.updated`; `input_audio_buffer.append`;
`input_audio_buffer.commit` → `input_audio_buffer.committed`; while a turn is spoken
`conversation.item.input_audio_transcription.delta` (words two passes agreed on, which
will not change) and when it ends `.completed`; `input_audio_buffer.clear` →
`input_audio_buffer.cleared`. With `turn_detection: server_vad` the server sends
`input_audio_buffer.speech_started` / `speech_stopped` / `committed` itself. Anything
refused — unreadable JSON, an unknown or unsupported event, a bad field, a bound passed
— is an `error` event and the session goes on. Appends keep arriving while a turn is
recognized; turns complete in order.

When the socket closes, however it closes, the session's audio is kept (`kept.keep`).
The middleware lets the websocket scope through untouched (`middleware.Guard` serves
`http` only): this route authenticates itself."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

import trio
from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse

from transcriber.audio.voice import Judge, SileroVoice, Started, TurnDetector
from transcriber.http.live import events
from transcriber.http.live.errors import error_body
from transcriber.http.live.kept import Spool, keep
from transcriber.http.live.recognizer import LiveRecognizer, to_whisper, whisper_decode
from transcriber.http.live.session import Refusal, caller
from transcriber.http.live.stream import Stream
from transcriber.http.live.turns import BYTES_PER_S, RATE, LiveLimits, Refused, Turns

log = logging.getLogger(__name__)
router = APIRouter()

KEEP_TIMEOUT_S = 60.0
"""How long keeping a closed session's audio may take (the intake's own commit is
bounded too); it runs shielded, whatever ended the socket."""

SUPPORTED = frozenset(
    (
        "session.update",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "input_audio_buffer.clear",
    )
)


class Live:
    """What every session of an application shares: the live decoder (its model loaded
    on the first pass), the VAD's judge, and the bounds. `app.state.live`, made on the
    first session unless a test set its own."""

    def __init__(
        self,
        recognizer: LiveRecognizer,
        limits: LiveLimits,
        judge: Callable[[], Judge] = SileroVoice,
    ):
        self.recognizer = recognizer
        self.limits = limits
        self.judge = judge
        self._judge: Judge | None = None
        self.open: dict[int, int] = {}
        """The sessions open, by owner."""

    def enter(self, owner: int) -> str | None:
        """A place for one more session of `owner`; else why not (429): the owner holds
        their bound, or the service its bound of every owner's (what this machine
        decodes in real time, TRANSCRIBER_LIVE_MAX_SESSIONS)."""
        if sum(self.open.values()) >= self.limits.max_sessions:
            return (
                f"the service holds its most live sessions at once "
                f"({self.limits.max_sessions}): try again later"
            )
        if self.open.get(owner, 0) >= self.limits.owner_sessions:
            return f"at most {self.limits.owner_sessions} live sessions of an owner at once"
        self.open[owner] = self.open.get(owner, 0) + 1
        return None

    def leave(self, owner: int) -> None:
        self.open[owner] -= 1
        if not self.open[owner]:
            del self.open[owner]

    def voice(self) -> Judge:
        """The VAD's judge, loaded on the first session that asks for server VAD and
        shared (Silero keeps no state between calls)."""
        if self._judge is None:
            self._judge = self.judge()
        return self._judge


def live_of(app: Any) -> Live:
    live: Live | None = getattr(app.state, "live", None)
    if live is None:
        config = app.state.config
        live = Live(
            LiveRecognizer(whisper_decode(config)),
            LiveLimits(
                max_session_s=config.max_duration_s,
                max_sessions=config.live_max_sessions,
                policy=config.live_policy,
            ),
        )
        app.state.live = live
    return live


async def _deny(websocket: WebSocket, status: int, message: str, code: str) -> None:
    await websocket.send_denial_response(
        JSONResponse(
            error_body(status, message, code=code),
            status_code=status,
            headers={"cache-control": "private, no-store"},
        )
    )


@router.websocket("/v1/realtime")
async def realtime(websocket: WebSocket) -> None:
    app = websocket.app
    owner = await caller(app.state.db, websocket)
    if isinstance(owner, Refusal):
        await _deny(websocket, owner.status, owner.message, owner.code)
        return
    if websocket.query_params.get("intent") != "transcription":
        await _deny(
            websocket,
            400,
            "this endpoint serves transcription sessions: connect with intent=transcription",
            "invalid_intent",
        )
        return
    live = live_of(app)
    if (refused := live.enter(owner)) is not None:
        await _deny(websocket, 429, refused, "too_many_sessions")
        return
    try:
        await websocket.accept()
        await _session(websocket, live, owner)
    finally:
        live.leave(owner)


async def _session(websocket: WebSocket, live: Live, owner: int) -> None:
    """The session on an accepted socket, and its audio kept when it ends."""
    app = websocket.app
    session = Session(websocket, live, Turns(live.limits))
    try:
        await session.run()
    finally:
        with trio.move_on_after(KEEP_TIMEOUT_S) as scope:
            scope.shield = True
            try:
                kept = await keep(
                    app.state.db,
                    app.state.config,
                    owner,
                    session.spool,
                    RATE,
                    session.turns.language,
                    session.turns.prompt,
                )
                if kept is not None:
                    log.info("live session of owner %s kept as record %s", owner, kept)
            except Exception:
                log.exception("a live session of owner %s could not be kept", owner)
            finally:
                await session.spool.aclose()


class Session:
    """One socket's session: reads client events until the socket closes; its turns are
    followed by its stream (`stream.Stream`: deltas of the words that will not change,
    then each turn completed, in order) in a task of its own. With server VAD the turns
    start and end where the VAD hears speech start and stop."""

    def __init__(self, websocket: WebSocket, live: Live, turns: Turns):
        self.websocket = websocket
        self.live = live
        self.turns = turns
        self.spool = Spool()
        self.sending = trio.Lock()
        self.id = events.new_id("sess")
        self.stream = Stream(live.recognizer, live.limits, self.send)
        self.detector: TurnDetector | None = None
        self.prefix = bytearray()
        """With server VAD, before speech: the last `prefix_padding_ms` of audio, which
        the turn starts with when speech is heard."""

    async def send(self, message: dict[str, Any]) -> None:
        async with self.sending:
            await self.websocket.send_text(json.dumps(message))

    async def run(self) -> None:
        """Until the client closes or the connection drops. Cancellation: the turns
        still being recognized are given up with the socket."""
        await self.send(events.event("session.created", session=self.described()))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.stream.run)
            while True:
                message = None
                with trio.move_on_after(self.live.limits.idle_s):
                    message = await self.websocket.receive()
                if message is None:
                    await self.idle()
                    break
                if message["type"] == "websocket.disconnect":
                    break
                await self.handle(message)
            nursery.cancel_scope.cancel()

    async def idle(self) -> None:
        """The client said nothing for the idle bound: told so, and the socket closed
        (the session is kept as any other)."""
        idle_s = self.live.limits.idle_s
        await self.send(
            events.error(
                "session_idle",
                f"the session sent nothing for {idle_s:g} s: it is closed and kept",
            )
        )
        await self.websocket.close(1000, "idle")

    def described(self) -> dict[str, Any]:
        return {"id": self.id, "object": "realtime.transcription_session"} | (
            self.turns.described()
        )

    async def handle(self, message: Mapping[str, Any]) -> None:
        client_event_id = None
        try:
            text = message.get("text")
            if text is None:
                raise Refused("invalid_json", "events are JSON text messages, not binary")
            try:
                received = json.loads(text)
            except ValueError as e:
                raise Refused("invalid_json", f"the message is not JSON: {e}") from e
            if not isinstance(received, dict):
                raise Refused("invalid_json", "an event is a JSON object")
            if isinstance(received.get("event_id"), str):
                client_event_id = received["event_id"]
            await self.dispatch(received)
        except Refused as refused:
            await self.send(
                events.error(
                    refused.code,
                    refused.message,
                    param=refused.param,
                    client_event_id=client_event_id,
                )
            )

    async def dispatch(self, received: dict[str, Any]) -> None:
        kind = received.get("type")
        if not isinstance(kind, str) or not kind:
            raise Refused("missing_required_parameter", "an event needs its type", "type")
        if kind not in SUPPORTED:
            raise Refused(
                "invalid_event",
                f"{kind!r} is not an event of a transcription session here",
                "type",
            )
        if kind == "session.update":
            vad = self.turns.vad
            self.turns.update(received.get("session"))
            if self.turns.vad != vad:
                self.detector = (
                    TurnDetector(self.turns.vad, self.live.voice()) if self.turns.vad else None
                )
            await self.send(events.event("session.updated", session=self.described()))
        elif kind == "input_audio_buffer.append":
            pcm = self.turns.append(received.get("audio"), trio.current_time())
            await self.spool.write(pcm)
            if self.detector is None:
                await self.stream.add(self.turns.begin(), *self.hints(), pcm)
            else:
                await self.voiced(self.detector, pcm)
        elif kind == "input_audio_buffer.commit":
            await self.commit()
        else:
            self.turns.clear()
            self.stream.drop()
            self.prefix = bytearray()
            await self.send(events.event("input_audio_buffer.cleared"))

    def hints(self) -> tuple[str | None, str | None]:
        return self.turns.language, self.turns.prompt

    async def commit(self) -> None:
        item, previous = self.turns.commit()
        await self.send(events.committed(item, previous))
        self.stream.close(item, *self.hints())

    async def voiced(self, detector: TurnDetector, pcm: bytes) -> None:
        """An append with server VAD: the audio joins the turn while speech goes on,
        the prefix before it; speech starting opens a turn, stopping commits it (at
        the append's 100 ms or so: the VAD's windows are finer than the turns need)."""
        speaking = detector.speaking
        found = detector.feed(to_whisper(pcm, RATE))
        used = speaking
        if speaking:
            await self.stream.add(self.turns.begin(), *self.hints(), pcm)
        for change in found:
            if isinstance(change, Started):
                item = self.turns.begin()
                audio = bytes(self.prefix) + (b"" if used else pcm)
                self.prefix, used = bytearray(), True
                self.turns.turn_bytes = len(audio)
                await self.send(events.speech_started(item, change.at_ms))
                await self.stream.add(item, *self.hints(), audio)
            else:
                await self.send(events.speech_stopped(self.turns.begin(), change.at_ms))
                await self.commit()
        if detector.speaking and self.turns.turn_bytes >= self.live.limits.max_turn_s * BYTES_PER_S:
            await self.commit()  # a monologue: its turns bounded, the speech goes on
        if not detector.speaking and not used and self.turns.vad is not None:
            keep = self.turns.vad.prefix_padding_ms * BYTES_PER_S // 1000 // 2 * 2
            self.prefix = (self.prefix + pcm)[-keep:] if keep else bytearray()


__all__ = ["Live", "live_of", "router"]
