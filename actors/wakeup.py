"""Wake-ups for idle workers: a hint that work may be there, with a jittered poll behind.

Hints come from the queue's notifications (a new record, a resume) and from the
workers themselves (one that found work wakes a peer, because there may be more; one
that scheduled a retry asks to be woken when it is due). A hint can be lost or come
early without harm: the claim decides, and the poll catches anything missed.
"""

from __future__ import annotations

import bisect
import random

import trio
from trio.lowlevel import ParkingLot


class Wakeup:
    def __init__(self, poll_s: float = 5.0, *, rng: random.Random | None = None):
        self.poll_s = poll_s
        self._rng = rng or random.Random()
        self._lot = ParkingLot()
        self._due: list[float] = []
        self.seq = 0
        """Counts hints; a worker reads it before claiming and waits only if unchanged,
        so a hint that arrives between an empty claim and the wait is not lost."""
        self.closed = False

    def wake_one(self) -> None:
        self.seq += 1
        self._lot.unpark(count=1)

    def wake_all(self) -> None:
        self.seq += 1
        self._lot.unpark_all()

    def wake_at(self, when: float) -> None:
        """Wake a waiter at trio time `when` (a retry pause ending)."""
        bisect.insort(self._due, when)
        self._lot.unpark(count=1)  # so a waiter recomputes its deadline

    def close(self) -> None:
        """Stop claiming: every waiter returns now, and later waits return at once."""
        self.closed = True
        self.wake_all()

    @property
    def waiting(self) -> int:
        return len(self._lot)

    async def wait(self, seen_seq: int) -> None:
        """Return on a hint newer than `seen_seq`, a due time, the poll, or close.

        Cancellation: a plain checkpoint; nothing to undo.
        """
        while not self.closed and self.seq == seen_seq:
            if self._take_due():
                return
            deadline = trio.current_time() + self.poll_s * self._rng.uniform(0.5, 1.5)
            if self._due:
                deadline = min(deadline, self._due[0])
            with trio.move_on_at(deadline) as scope:
                await self._lot.park()
            if scope.cancelled_caught:
                self._take_due()
                return
        await trio.lowlevel.checkpoint()

    def _take_due(self) -> bool:
        """Forget the due times that have come; True if there were any."""
        now = trio.current_time()
        due = bisect.bisect_right(self._due, now)
        del self._due[:due]
        return due > 0
