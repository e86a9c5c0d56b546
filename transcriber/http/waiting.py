"""Requests that hold their answer until the pipeline is done with a record (the
OpenAI-compatible endpoint), and how the service tells them it is stopping."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import trio


class Waiting:
    """Counts the requests that wait on a record; `stop` makes them answer at once.

    A stopping service cannot keep a client waiting for a record it will only finish
    after its restart, nor drop the connection without a word: the client is told the
    record's id and that it goes on.
    """

    def __init__(self) -> None:
        self.stopping = trio.Event()
        self._held = 0
        self._none = trio.Event()
        self._none.set()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Around a whole request, its answer's sending included."""
        if self._held == 0:
            self._none = trio.Event()
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if self._held == 0:
                self._none.set()

    async def stop(self, patience_s: float) -> bool:
        """Tell every waiting request to answer now, and wait until each has sent its
        answer, at most `patience_s`; True if all did. New requests are refused from now.

        Cancellation: only the waiting is cut; the requests answer anyway.
        """
        self.stopping.set()
        with trio.move_on_after(patience_s):
            while self._held:
                await self._none.wait()
            return True
        return False
