"""A client's close frame, told apart from a lost connection.

Hypercorn (0.18) answers a client's close frame and then hands the application
`websocket.disconnect` with code 1006 — the code of a connection lost without one — so a
session could not tell the SDK's `close()` from a cut cable, and its record said
`closed` for both. `install` wraps two methods of Hypercorn's `WSStream` so that the
disconnect carries the client's own close code (1000 from the SDK) when the client sent
a close frame, and 1006 only when it did not. Nothing else changes: the close is
answered as before, and an application that reads no code is served as before.

Installed when the live face is imported (transcriber.http.live.realtime). Should
Hypercorn change the methods this wraps, nothing is wrapped (`install` says False) and
every end is `dropped`: tests/integration/test_live_end.py fails loudly then."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ABNORMAL = 1006
"""A connection lost without a close frame (RFC 6455 §7.1.5)."""

_installed = False


def install() -> bool:
    """Wrap Hypercorn's WSStream once; whether it is wrapped."""
    global _installed
    if _installed:
        return True
    try:
        from hypercorn.protocol import ws_stream
        from hypercorn.protocol.events import StreamClosed
    except ImportError:
        return False
    stream = ws_stream.WSStream
    # wsproto's names as Hypercorn's module imported them (wsproto is its dependency).
    CloseConnection = getattr(ws_stream, "CloseConnection", None)
    ConnectionState = getattr(ws_stream, "ConnectionState", None)
    if (
        CloseConnection is None
        or ConnectionState is None
        or not all(hasattr(stream, name) for name in ("_send_wsproto_event", "handle"))
    ):
        return False
    send_event, handle = stream._send_wsproto_event, stream.handle

    async def _send_wsproto_event(self: Any, event: Any) -> None:
        # Hypercorn answers a client's close frame with this CloseConnection while the
        # connection is REMOTE_CLOSING; any other close (the application's, a frame too
        # large) is this server's own.
        connection = getattr(self, "connection", None)
        if (
            isinstance(event, CloseConnection)
            and connection is not None
            and connection.state == ConnectionState.REMOTE_CLOSING
        ):
            self.transcriber_peer_close = int(event.code)
        await send_event(self, event)

    async def handle_closed(self: Any, event: Any) -> None:
        peer = getattr(self, "transcriber_peer_close", None)
        if (
            isinstance(event, StreamClosed)
            and peer is not None
            and not self.closed
            and self.app_put is not None
            and self.state == ws_stream.ASGIWebsocketState.CONNECTED
        ):
            self.closed = True
            await self.app_put({"type": "websocket.disconnect", "code": peer})
            return
        await handle(self, event)

    stream._send_wsproto_event = _send_wsproto_event  # type: ignore[method-assign]
    stream.handle = handle_closed  # type: ignore[method-assign]
    _installed = True
    return True


def clean(message: Mapping[str, Any]) -> bool:
    """Whether a `websocket.disconnect` followed a close frame from the client."""
    return int(message.get("code", ABNORMAL)) != ABNORMAL
