"""`GET /v1/realtime?intent=transcription`: the WebSocket of OpenAI's realtime
transcription protocol (the `openai` SDK's `client.realtime.connect`).

Before the upgrade is accepted: the owner's bearer token (the SDK sends it as
`Authorization`), else a 401 in OpenAI's error shape and no socket; a query without
`intent=transcription`, a 400. After it: `session.created`, then each client event in
turn — `session.update` → `session.updated`; `input_audio_buffer.append`;
`input_audio_buffer.commit` → `input_audio_buffer.committed`, and when the turn is
recognized `conversation.item.input_audio_transcription.delta` (the turn's text, which
will not change) and `.completed`; `input_audio_buffer.clear` →
`input_audio_buffer.cleared`. Anything refused — unreadable JSON, an unknown or
unsupported event, a bad field, a bound passed — is an `error` event and the session
goes on. Appends keep arriving while a turn is recognized; turns complete in order.

The session is a record of its owner from before `session.created`, whose session
object names it (`record_id`); its audio goes into the store as it arrives, and when
the socket closes, however it closes, the record enters the pipeline (`kept.Kept`,
transcriber.live).
The middleware lets the websocket scope through untouched (`middleware.Guard` serves
`http` only): this route authenticates itself."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import trio
from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse

from transcriber.http.live import events
from transcriber.http.live.errors import error_body
from transcriber.http.live.kept import Kept
from transcriber.http.live.recognizer import LiveRecognizer, whisper_decode
from transcriber.http.live.turns import RATE, LiveLimits, Refused, Turns
from transcriber.intake import NoRoom
from transcriber.live import LeaseLost, start
from transcriber.owners import owner_of_token
from transcriber.storage.blobs import StorageError

log = logging.getLogger(__name__)
router = APIRouter()

KEEP_TIMEOUT_S = 60.0
"""How long ending a closed session's record may take; it runs shielded, whatever ended
the socket (past it, the lease runs out and a daemon's sweep ends it)."""
TELL_TIMEOUT_S = 5.0

SUPPORTED = frozenset(
    (
        "session.update",
        "input_audio_buffer.append",
        "input_audio_buffer.commit",
        "input_audio_buffer.clear",
    )
)


class Live:
    """What every session of an application shares: the recognizer (its model loaded
    on first use) and the bounds. `app.state.live`, made on the first session unless a
    test set its own."""

    def __init__(self, recognizer: LiveRecognizer, limits: LiveLimits):
        self.recognizer = recognizer
        self.limits = limits
        self.open: dict[int, int] = {}
        """The sessions open, by owner."""

    def enter(self, owner: int) -> bool:
        """A place for one more session of `owner`, or False when they hold their bound."""
        if self.open.get(owner, 0) >= self.limits.owner_sessions:
            return False
        self.open[owner] = self.open.get(owner, 0) + 1
        return True

    def leave(self, owner: int) -> None:
        self.open[owner] -= 1
        if not self.open[owner]:
            del self.open[owner]


def live_of(app: Any) -> Live:
    live: Live | None = getattr(app.state, "live", None)
    if live is None:
        config = app.state.config
        live = Live(
            LiveRecognizer(whisper_decode(config)),
            LiveLimits(max_session_s=config.max_duration_s),
        )
        app.state.live = live
    return live


def _token(websocket: WebSocket) -> str:
    scheme, _, token = websocket.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


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
    owner = await owner_of_token(app.state.db, _token(websocket))
    if owner is None:
        await _deny(websocket, 401, "a valid API token is required", "invalid_api_key")
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
    if not live.enter(owner):
        await _deny(
            websocket,
            429,
            f"at most {live.limits.owner_sessions} live sessions of an owner at once",
            "too_many_sessions",
        )
        return
    try:
        await websocket.accept()
        await _session(websocket, live, owner)
    finally:
        live.leave(owner)


async def _session(websocket: WebSocket, live: Live, owner: int) -> None:
    """The session on an accepted socket, a record of its owner from its start, and
    that record ended when the socket closes."""
    app = websocket.app
    try:
        record = await start(app.state.db, app.state.config, owner, RATE)
    except (NoRoom, StorageError) as e:
        code = "insufficient_quota" if isinstance(e, NoRoom) else "storage_unavailable"
        await _tell(websocket, code, getattr(e, "message", str(e)))
        return
    kept = Kept(record)
    session = Session(websocket, live, Turns(live.limits), kept)
    try:
        with kept.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(kept.hold)
                nursery.start_soon(kept.keep_flushing)
                await session.run()
                nursery.cancel_scope.cancel()
        if kept.why is not None:
            await _tell(websocket, *kept.why)
    finally:
        with trio.move_on_after(KEEP_TIMEOUT_S) as scope:
            scope.shield = True
            try:
                if kept.lost:
                    await record.abandon()
                else:
                    ended = await record.end(
                        kept.why[0] if kept.why else "closed",
                        session.turns.language,
                        session.turns.prompt,
                    )
                    log.info("live session of owner %s ended: record %s", owner, ended)
            except LeaseLost:
                log.warning("live session %s was taken over before it ended", record.id)
                await record.abandon()
            except Exception:
                # Its lease runs out, and a daemon's sweep ends it.
                log.exception("live session %s could not be ended here", record.id)


async def _tell(websocket: WebSocket, code: str, message: str) -> None:
    """An error event and the socket closed, if the client is still there."""
    with trio.move_on_after(TELL_TIMEOUT_S):
        try:
            await websocket.send_text(json.dumps(events.error(code, message)))
            await websocket.close(1011 if code == "storage_unavailable" else 1000, code)
        except Exception:  # the client went first
            pass


class Session:
    """One socket's session: reads client events until the socket closes; each
    committed turn is recognized in a task of its own."""

    def __init__(self, websocket: WebSocket, live: Live, turns: Turns, kept: Kept):
        self.websocket = websocket
        self.live = live
        self.turns = turns
        self.kept = kept
        self.sending = trio.Lock()
        self.id = events.new_id("sess")

    async def send(self, message: dict[str, Any]) -> None:
        # Every completed turn and every accepted update passes here, whoever made it:
        # the live draft, and the hints a daemon taking the session over ends it with.
        if message["type"] == "conversation.item.input_audio_transcription.completed":
            await self.kept.text(message["transcript"])
        elif message["type"] == "session.updated":
            await self.kept.configure(self.turns.language, self.turns.prompt)
        async with self.sending:
            await self.websocket.send_text(json.dumps(message))

    async def run(self) -> None:
        """Until the client closes or the connection drops. Cancellation: the turns
        still being recognized are given up with the socket."""
        await self.send(events.event("session.created", session=self.described()))
        async with trio.open_nursery() as nursery:
            while True:
                message = None
                with trio.move_on_after(self.live.limits.idle_s):
                    message = await self.websocket.receive()
                if message is None:
                    await self.idle()
                    break
                if message["type"] == "websocket.disconnect":
                    break
                await self.handle(message, nursery)
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
        return {
            "id": self.id,
            "object": "realtime.transcription_session",
            # The session's record, from its first second: a client goes to its page.
            "record_id": str(self.kept.id),
        } | self.turns.described()

    async def handle(self, message: Mapping[str, Any], nursery: trio.Nursery) -> None:
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
            await self.dispatch(received, nursery)
        except Refused as refused:
            await self.send(
                events.error(
                    refused.code,
                    refused.message,
                    param=refused.param,
                    client_event_id=client_event_id,
                )
            )

    async def dispatch(self, received: dict[str, Any], nursery: trio.Nursery) -> None:
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
            self.turns.update(received.get("session"))
            await self.send(events.event("session.updated", session=self.described()))
        elif kind == "input_audio_buffer.append":
            await self.kept.write(self.turns.append(received.get("audio")))
        elif kind == "input_audio_buffer.commit":
            item, previous, pcm = self.turns.commit()
            await self.send(events.committed(item, previous))
            nursery.start_soon(self.recognize, item, pcm, self.turns.language, self.turns.prompt)
        else:
            self.turns.clear()
            await self.send(events.event("input_audio_buffer.cleared"))

    async def recognize(
        self, item: str, pcm: bytes, language: str | None, prompt: str | None
    ) -> None:
        try:
            text = await self.live.recognizer.text(pcm, RATE, language, prompt)
        except Exception:
            log.exception("a live turn could not be recognized")
            await self.send(events.failed(item, "the turn could not be recognized"))
            return
        if text:
            await self.send(events.delta(item, text))
        await self.send(events.completed(item, text, len(pcm) / (RATE * 2)))


__all__ = ["Live", "live_of", "router"]
