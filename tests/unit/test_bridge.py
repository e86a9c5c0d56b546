"""The asyncio loop on trio runs the callbacks that are ready in one trio step
(transcriber/db/bridge.py)."""

from __future__ import annotations

import trio
import trio.testing
import trio_asyncio

from transcriber.db import bridge


class LoopSteps(trio.abc.Instrument):
    """Counts the scheduling steps of trio-asyncio's loop task."""

    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith("_main_loop"):
            self.steps += 1


async def test_ready_callbacks_run_in_one_trio_step() -> None:
    ran: list[int] = []
    steps = LoopSteps()
    async with trio_asyncio.open_loop() as loop:
        await trio.testing.wait_all_tasks_blocked()  # the loop waits for callbacks
        trio.lowlevel.add_instrument(steps)
        try:
            for i in range(bridge.BATCH * 2):
                loop.call_soon(ran.append, i)
            await trio.testing.wait_all_tasks_blocked()
        finally:
            trio.lowlevel.remove_instrument(steps)
    assert ran == list(range(bridge.BATCH * 2))
    # One step per BATCH callbacks (one by one, trio-asyncio alone takes 128), and one
    # more that finds the queue empty and waits again.
    assert steps.steps <= 3, steps.steps
