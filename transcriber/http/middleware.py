"""ASGI middleware under the application."""

from typing import Any

import trio


class DrainRequestBody:
    """ASGI middleware that lets an early answer out while the client still sends.

    Hypercorn's trio worker queues a few chunks of the request body for the application
    and stops reading the socket until the application takes them. When the application
    answers before reading the body — 413 as soon as the limit is passed, 401, an
    idempotent replay — Hypercorn's last step of that answer waits for room in the full
    queue, and so does its reader: the connection hangs, and a client still sending
    never reads the answer. So while the last part of an answer is sent, the rest of the
    body is read here and thrown away (nothing of it is stored); once the answer is out,
    Hypercorn closes the connection (or keeps it, if the body had ended).
    """

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        ended = False

        async def tracked() -> dict[str, Any]:
            nonlocal ended
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                ended = True
            return message

        async def drain() -> None:
            while not ended:
                await tracked()

        async def send_draining(message: dict[str, Any]) -> None:
            last = message["type"] == "http.response.body" and not message.get("more_body")
            if not last or ended:
                await send(message)
                return
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain)
                await send(message)
                nursery.cancel_scope.cancel()

        await self.app(scope, tracked, send_draining)
