"""CPU work off the trio thread, stoppable: a cancelled caller stops the thread too.

trio cannot interrupt a thread, so the work polls `Control.stopped` between bounded
pieces (a packet, a segment). On cancellation the caller sets it and waits, shielded,
until the work has returned — so no CPU is spent on a record after its step was
cancelled. A stop takes effect at the next check: for recognition, the end of the
current segment.
"""

from __future__ import annotations

import contextlib
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
        self._drafts: list[str] = []
        self._on_stop: list[Callable[[], None]] = []

    def check(self) -> None:
        """Call between pieces of work: raises Stopped when the caller gave up."""
        if self._stop.is_set():
            raise Stopped

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def on_stop(self, action: Callable[[], None]) -> None:
        """Run `action` when the caller gives up (at once if it has): for work that
        waits on something else than this flag, such as another process."""
        with self._lock:
            if not self._stop.is_set():
                self._on_stop.append(action)
                return
        action()

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            actions, self._on_stop = self._on_stop, []
        for action in actions:
            action()

    def report(self, fraction: float) -> None:
        with self._lock:
            self._fraction = fraction

    def take_report(self) -> float | None:
        with self._lock:
            fraction, self._fraction = self._fraction, None
            return fraction

    def draft(self, text: str) -> None:
        """A piece of the work's output as it comes (a recognized segment's text), for a
        caller that shows it before the work is done; the work's result is what counts."""
        with self._lock:
            self._drafts.append(text)

    def take_drafts(self) -> list[str]:
        with self._lock:
            drafts, self._drafts = self._drafts, []
            return drafts


async def run_in_thread(
    work: Callable[[Control], T],
    progress: Callable[[float], Awaitable[None]] | None = None,
    *,
    drafts: Callable[[list[str]], Awaitable[None]] | None = None,
    report_every_s: float = 1.0,
) -> T:
    """Run `work(control)` in a thread; forward its progress reports, and its drafts
    when asked, at most every `report_every_s` (drafts not yet forwarded when the work
    returns are dropped: its result holds them).

    Cancellation: sets the stop flag, waits for the work to return (it checks the flag
    between pieces), then raises Cancelled. The thread is started at once, outside
    trio's thread limiter, so there is always a running work to wait for: a cancel can
    never find it still queued.
    """
    control = Control()
    done = trio.Event()
    token = trio.lowlevel.current_trio_token()
    result: outcome.Outcome[T] | None = None

    def deliver(finished: outcome.Outcome[T]) -> None:
        nonlocal result
        result = finished
        with contextlib.suppress(trio.RunFinishedError):
            token.run_sync_soon(done.set)

    async def forward_progress() -> None:
        while True:
            await trio.sleep(report_every_s)
            fraction = control.take_report()
            if progress is not None and fraction is not None:
                await progress(fraction)
            if drafts is not None and (pieces := control.take_drafts()):
                await drafts(pieces)

    trio.lowlevel.start_thread_soon(lambda: work(control), deliver, name="transcriber-work")
    try:
        async with trio.open_nursery() as nursery:
            if progress is not None or drafts is not None:
                nursery.start_soon(forward_progress)
            await done.wait()
            nursery.cancel_scope.cancel()
    except BaseException:
        control.stop()
        with trio.CancelScope(shield=True):
            await done.wait()
        raise
    assert result is not None
    return result.unwrap()
