"""The asyncio clients of a trio test (the openai SDK's realtime client, `websockets`):
a coroutine run to its end on asyncio's own loop in a worker thread, within a bound.

The loop is named (transcriber/bench/plain_asyncio.py): `asyncio.run` would get
trio-asyncio's synchronous loop, a second trio run in that thread, which under load
broke its own queue's invariant (`send_nowait`'s assertion) and left the client waiting
forever; CI hung on it. trio cannot cancel a thread, so the bound ends the wait inside
the thread: a server that never answers fails the test with asyncio's TimeoutError
instead of holding it, and its test worker, until CI's limit."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import trio

from transcriber.bench import plain_asyncio

T = TypeVar("T")

BOUND_S = 120.0  # the longest session a test streams is about 20 s of audio


async def in_asyncio(coro: Coroutine[Any, Any, T], seconds: float = BOUND_S) -> T:
    """`coro`'s answer, run to its end or to `seconds` in a thread of its own."""
    return await trio.to_thread.run_sync(plain_asyncio.run, asyncio.wait_for(coro, seconds))
