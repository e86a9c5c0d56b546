"""The asyncio loop that trio-asyncio runs inside trio, made to run the asyncio
callbacks that are ready in one trio scheduling step, as asyncio's own loop does.

trio-asyncio 0.16 hands each callback to trio through a memory channel and takes one
trio scheduling step for each (`_main_loop_one`). One asyncpg query is some two dozen
callbacks (the task's steps, the protocol's data, its waiter futures), so on this
bridge a `SELECT 1` took 4-8 times the client CPU of plain asyncio. Taking every callback
that is ready before going back to trio cut the client's CPU per query by a quarter to
two fifths, through pooled and pinned connections alike.

At most BATCH callbacks run in a step, and a step ends at a due timer, so neither trio
nor asyncio's timers wait behind a long run of callbacks. Imported for its effect by
transcriber.db.database, so every loop the program opens has it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import trio
import trio_asyncio
from trio_asyncio import _base

BATCH = 64
"""Callbacks run in one trio scheduling step at most."""

_EXPECTED = "0.16.0"
_one_by_one = _base.BaseTrioEventLoop._main_loop_one


async def _main_loop_ready(self: Any, no_wait: bool = False) -> None:
    # The first callback as trio-asyncio takes it (waiting for one, or for a timer);
    # then, without waiting, those already queued.
    await _one_by_one(self, no_wait)
    for _ in range(BATCH - 1):
        if not self._q_recv._state.data:  # statistics() would build an object each time
            return
        if self._timers and self._timers[0]._when <= self.time():
            return
        await _one_by_one(self, True)


def _call_soon(self: Any, callback: Any, *args: Any, context: Any = None) -> asyncio.Handle:
    # As trio-asyncio's, without asyncio's check that `callback` is no coroutine: it
    # inspects the callable on every call (a twentieth of the client's CPU in the
    # drain), for a mistake asyncio's own code and asyncpg do not make.
    handle = asyncio.Handle(callback, args, self, context=context)
    self._queue_handle(handle)
    return handle


# Private names of trio-asyncio and trio: checked here, so that an upgrade that moves
# them fails at import, not in a running loop.
if trio_asyncio.__version__ != _EXPECTED or not hasattr(
    trio.open_memory_channel[object](1)[1], "_state"
):
    raise ImportError(
        f"transcriber.db.bridge patches trio-asyncio {_EXPECTED}, found {trio_asyncio.__version__}"
    )
_base.BaseTrioEventLoop._main_loop_one = _main_loop_ready
_base.BaseTrioEventLoop.call_soon = _call_soon
