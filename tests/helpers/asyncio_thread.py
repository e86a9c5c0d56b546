"""The asyncio clients of a trio test (the openai SDK's realtime client, `websockets`):
a coroutine run by `asyncio.run` in a worker thread, within a bound. trio cannot cancel
a thread, so a client that waits on a server which never answers would hold its test
(and the test worker) forever; the bound ends the wait inside the thread instead, and
the test fails with asyncio's TimeoutError."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import trio

T = TypeVar("T")

BOUND_S = 120.0  # the longest session a test streams is about 20 s of audio


async def in_asyncio(coro: Coroutine[Any, Any, T], seconds: float = BOUND_S) -> T:
    """`coro`'s answer, run to its end or to `seconds` in a thread of its own."""
    return await trio.to_thread.run_sync(asyncio.run, asyncio.wait_for(coro, seconds))
