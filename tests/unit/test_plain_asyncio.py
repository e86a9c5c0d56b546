"""The asyncio clients of the benchmarks and of the live tests run on asyncio's own loop,
not on the trio-asyncio loop `asyncio.run` gets once trio-asyncio is imported (CI hung on
that loop's broken queue: transcriber/bench/plain_asyncio.py)."""

from __future__ import annotations

import asyncio

import trio
import trio_asyncio

from tests.helpers.asyncio_thread import in_asyncio
from transcriber.bench import plain_asyncio


async def loop_kind() -> type:
    return type(asyncio.get_running_loop())


async def test_a_worker_threads_client_runs_on_asyncios_own_loop() -> None:
    # The trap itself, so that this test fails if trio-asyncio stops setting it.
    trapped = await trio.to_thread.run_sync(asyncio.run, loop_kind())
    assert issubclass(trapped, trio_asyncio.BaseTrioEventLoop), trapped
    for kind in (
        await in_asyncio(loop_kind()),
        await trio.to_thread.run_sync(plain_asyncio.run, loop_kind()),
    ):
        assert issubclass(kind, asyncio.SelectorEventLoop), kind
        assert not issubclass(kind, trio_asyncio.BaseTrioEventLoop), kind


async def test_the_bound_ends_a_client_that_waits_forever() -> None:
    with trio.fail_after(10):
        try:
            await in_asyncio(asyncio.Event().wait(), seconds=0.2)
        except TimeoutError:
            return
    raise AssertionError("in_asyncio let a client wait past its bound")
