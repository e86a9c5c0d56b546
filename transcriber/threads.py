"""CPU work off the trio thread, stoppable: a cancelled caller stops the thread too.

trio cannot interrupt a thread, so the work polls `Control.stopped` between bounded
pieces (a packet, a segment). On cancellation the caller sets it and waits, shielded,
until the thread has noticed — so no CPU is spent on a record after its step was
cancelled, and no thread outlives the step.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import outcome
import trio

T = TypeVar("T")


class Stopped(Exception):
    """Raised inside the thread's work when the caller asked it to stop."""


class Control:
    def __init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._fraction: float | None = None

    def check(self) -> None:
        """Call between pieces of work: raises Stopped when the caller gave up."""
        if self._stop.is_set():
            raise Stopped

    def report(self, fraction: float) -> None:
        with self._lock:
            self._fraction = fraction

    def take_report(self) -> float | None:
        with self._lock:
            fraction, self._fraction = self._fraction, None
            return fraction


async def run_in_thread(work: Callable[[Control], T],
                        progress: Callable[[float], Awaitable[None]] | None = None,
                        *, report_every_s: float = 1.0) -> T:
    """Run `work(control)` in a thread; forward its progress reports at most every
    `report_every_s`.

    Cancellation: sets the stop flag, waits for the thread to return (it checks the
    flag between pieces), then raises Cancelled.
    """
    control = Control()
    finished = trio.Event()
    token = trio.lowlevel.current_trio_token()

    def in_thread() -> T:
        try:
            return work(control)
        finally:
            trio.from_thread.run_sync(finished.set, trio_token=token)

    async def forward_progress() -> None:
        assert progress is not None
        while True:
            await trio.sleep(report_every_s)
            fraction = control.take_report()
            if fraction is not None:
                await progress(fraction)

    try:
        async with trio.open_nursery() as nursery:
            if progress is not None:
                nursery.start_soon(forward_progress)
            # Captured, so the work's own exception is not wrapped in a nursery's group.
            result = await outcome.acapture(trio.to_thread.run_sync, in_thread,
                                            abandon_on_cancel=True)
            nursery.cancel_scope.cancel()
        return result.unwrap()
    except BaseException:
        control._stop.set()
        with trio.CancelScope(shield=True):
            await finished.wait()
        raise
