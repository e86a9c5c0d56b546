"""A coroutine run on asyncio's own event loop, for the benchmarks' asyncio clients (the
openai SDK's realtime client, asyncpg in the queue benchmark's producer).

`asyncio.run` asks the event loop policy for its loop, and once trio-asyncio is
imported (the database layer imports it) the policy answers with trio-asyncio's
synchronous loop: a trio run underneath asyncio, which is not what a client of the
SDK or of pgqueuer runs, and which broke its own queue's invariant under load in the
tests. The loop is named here instead."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """`coro` run to its end on a fresh selector loop of this thread, then closed."""
    with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        return runner.run(coro)
