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
— is an `error` event and the session goes on, but an append past the session's bound,
which ends it (`session_too_long`). Appends keep arriving while a turn is
recognized; turns complete in order.

The session is a record of its owner from before `session.created`, whose session
object names it (`record_id`); its audio goes into the store as it arrives, and when
the socket closes, however it closes, the record enters the pipeline (`kept.Kept`,
transcriber.live).
The middleware lets the websocket scope through untouched (`middleware.Guard` serves
`http` only): this route authenticates itself."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio
from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse

from transcriber.audio.voice import Judge, SileroVoice, Started, TurnDetector
from transcriber.http.live import events
from transcriber.http.live.errors import error_body
from transcriber.http.live.kept import Kept, Stop
from transcriber.http.live.recognizer import LiveRecognizer, to_whisper, whisper_decode
from transcriber.http.live.session import Caller, Refusal, caller
from transcriber.http.live.stream import Stream
from transcriber.http.live.turns import BYTES_PER_S, RATE, LiveLimits, Refused, Turns
from transcriber.http.ws_close import clean
from transcriber.intake import NoRoom
from transcriber.live import LeaseLost, endings, start
from transcriber.storage.blobs import StorageError

log = logging.getLogger(__name__)
router = APIRouter()

KEEP_TIMEOUT_S = 60.0
"""How long ending a closed session's record may take; it runs shielded, whatever ended
the socket (past it, the lease runs out and a daemon's sweep ends it)."""
TELL_TIMEOUT_S = 5.0
SHUTDOWN_TELL_S = 1.0
"""How long a stopping daemon waits to tell a session's client why it ends."""

SESSION_TOO_LONG = "session_too_long"
"""The refusal of an append past the session's bound (`TRANSCRIBER_MAX_DURATION_S`),
which also ends the session."""
INSUFFICIENT_QUOTA = "insufficient_quota"
"""The refusal of an append past the room the owner's quota left the session, which
also ends it (`endings.QUOTA`); at the start, the session's refusal."""
SESSION_IDLE = "session_idle"
"""What a client that sent nothing for the idle bound is told before its socket closes."""
ENDING = {SESSION_TOO_LONG: endings.TOO_LONG, INSUFFICIENT_QUOTA: endings.QUOTA}
"""The refusals that end a session, and the end's reason."""
SHUTTING_DOWN = Stop(
    "server_shutting_down",
    "the server is stopping: the session ends, its audio kept and transcribed",
    endings.SHUTDOWN,
)

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
    who = await caller(app.state.db, websocket)
    if isinstance(who, Refusal):
        await _deny(websocket, who.status, who.message, who.code)
        return
    owner = who.owner
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
        await _session(websocket, live, who)
    finally:
        live.leave(owner)


def _cancelled(e: BaseException) -> bool:
    """Whether `e` is (or holds only) trio's cancellation: the server stopping."""
    if isinstance(e, BaseExceptionGroup):
        return e.split(trio.Cancelled)[1] is None
    return isinstance(e, trio.Cancelled)


async def _session(websocket: WebSocket, live: Live, who: Caller) -> None:
    """The session on an accepted socket, a record of its owner from its start, and
    that record ended when the socket closes, with why (`transcriber.live.endings`)."""
    app = websocket.app
    try:
        record = await start(app.state.db, app.state.config, who.owner, RATE)
    except (NoRoom, StorageError) as e:
        code = INSUFFICIENT_QUOTA if isinstance(e, NoRoom) else "storage_unavailable"
        await _tell(websocket, code, getattr(e, "message", str(e)))
        return
    kept = Kept(record)
    session = Session(websocket, live, Turns(live.limits), kept)
    session.fit(record.room_s)
    reason = endings.DROPPED
    try:
        with kept.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kept.hold)
                nursery.start_soon(kept.keep_flushing)
                nursery.start_soon(kept.watch, who.allowed, session.fit)
                reason = await session.run()
                nursery.cancel_scope.cancel()
        if kept.why is not None:
            await _tell(websocket, kept.why.code, kept.why.message)
    except BaseException as e:
        # The server stopping cancels the session; anything else that escapes (a send
        # to a client that went away) is the connection lost.
        if _cancelled(e):
            kept.stop(SHUTTING_DOWN)
            with trio.move_on_after(SHUTDOWN_TELL_S) as told:
                told.shield = True
                await _tell(websocket, SHUTTING_DOWN.code, SHUTTING_DOWN.message, 1001)
        else:
            log.info("live session %s lost its client: %r", record.id, e)
        raise
    finally:
        with trio.move_on_after(KEEP_TIMEOUT_S) as scope:
            scope.shield = True
            try:
                if kept.gone:
                    await record.abandon()
                else:
                    why = kept.why.reason if kept.why else reason
                    ended = await record.end(why, session.turns.language, session.turns.prompt)
                    log.info("live session of owner %s ended (%s): %s", who.owner, why, ended)
            except LeaseLost:
                log.warning("live session %s was taken over before it ended", record.id)
                await record.abandon()
            except Exception:
                # Its lease runs out, and a daemon's sweep ends it.
                log.exception("live session %s could not be ended here", record.id)


async def _tell(websocket: WebSocket, code: str, message: str, close: int | None = None) -> None:
    """An error event and the socket closed (with `code` as its reason), if the client
    is still there."""
    if close is None:
        close = 1011 if code == "storage_unavailable" else 1000
    with trio.move_on_after(TELL_TIMEOUT_S):
        try:
            await websocket.send_text(json.dumps(events.error(code, message)))
            await websocket.close(close, code)
        except Exception:  # the client went first
            pass


class Session:
    """One socket's session: reads client events until the socket closes; its turns are
    followed by its stream (`stream.Stream`: deltas of the words that will not change,
    then each turn completed, in order) in a task of its own. With server VAD the turns
    start and end where the VAD hears speech start and stop."""

    def __init__(self, websocket: WebSocket, live: Live, turns: Turns, kept: Kept):
        self.websocket = websocket
        self.live = live
        self.turns = turns
        self.kept = kept
        self.sending = trio.Lock()
        self.id = events.new_id("sess")
        self.stream = Stream(live.recognizer, live.limits, self.send)
        self.detector: TurnDetector | None = None
        self.prefix = bytearray()
        """With server VAD, before speech: the last `prefix_padding_ms` of audio, which
        the turn starts with when speech is heard."""

    async def send(self, message: dict[str, Any]) -> None:
        # Every completed turn and every accepted update passes here, whoever made it:
        # the live draft, and the hints a daemon taking the session over ends it with.
        if message["type"] == "conversation.item.input_audio_transcription.completed":
            await self.kept.text(message["transcript"])
        elif message["type"] == "session.updated":
            await self.kept.configure(self.turns.language, self.turns.prompt)
        async with self.sending:
            await self.websocket.send_text(json.dumps(message))

    async def run(self) -> str:
        """Until the client closes, the connection drops, it idles out or it reaches a
        bound that ends it; why it ended (`transcriber.live.endings`). Raises what a
        send to a client that went away raises. Cancellation: the turns still being
        recognized are given up with the socket."""
        await self.send(events.event("session.created", session=self.described()))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.stream.run)
            while True:
                message = None
                with trio.move_on_after(self.live.limits.idle_s):
                    message = await self.websocket.receive()
                if message is None:
                    await self.idle()
                    reason = endings.IDLE
                    break
                if message["type"] == "websocket.disconnect":
                    reason = endings.CLOSED if clean(message) else endings.DROPPED
                    break
                ending = await self.handle(message)
                if ending is not None:
                    # The session holds its most audio (the service's bound, or the
                    # owner's room): it ends here, kept like any other (a client that
                    # kept appending would hold it open forever).
                    await self.websocket.close(1000, ending)
                    reason = ENDING[ending]
                    break
            nursery.cancel_scope.cancel()
        return reason

    async def idle(self) -> None:
        """The client said nothing for the idle bound: told so, and the socket closed
        (the session is kept as any other)."""
        idle_s = self.live.limits.idle_s
        await self.send(
            events.error(
                SESSION_IDLE,
                f"the session sent nothing for {idle_s:g} s: it is closed and kept",
            )
        )
        await self.websocket.close(1000, "idle")

    def fit(self, room_s: float) -> None:
        """The session held to `room_s` seconds of audio in all, the room its owner's
        quota leaves it, where that is fewer than the service's bound: an append past
        it is `insufficient_quota` and ends the session."""
        bound = self.live.limits
        self.turns.limits = (
            bound if room_s >= bound.max_session_s else attrs.evolve(bound, max_session_s=room_s)
        )

    def described(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "realtime.transcription_session",
            # The session's record, from its first second: a client goes to its page.
            "record_id": str(self.kept.id),
        } | self.turns.described()

    async def handle(self, message: Mapping[str, Any]) -> str | None:
        """One client event answered; the error's code when the session is to end: it
        holds its most audio (`session_too_long`), or the most the owner's quota has
        room for (`insufficient_quota`)."""
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
            code, text = refused.code, refused.message
            if code == SESSION_TOO_LONG and self.turns.limits is not self.live.limits:
                code = INSUFFICIENT_QUOTA
                text = (
                    f"your quota leaves this session room for "
                    f"{self.turns.limits.max_session_s:.1f} s of audio: it ends here, and "
                    "what it holds is kept and transcribed"
                )
            await self.send(
                events.error(code, text, param=refused.param, client_event_id=client_event_id)
            )
            return code if code in ENDING else None
        return None

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
            await self.kept.write(pcm)
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
