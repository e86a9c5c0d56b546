"""Requests that hold their answer until the pipeline is done with a record (the
OpenAI-compatible endpoint): woken by the journal's notifications, told when the
service stops."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import trio

from actors import describe
from actors.log import event
from transcriber.db.database import JOURNAL_CHANNEL, Database

RECONNECT_S = 1.0


class Waiting:
    """The requests that wait on a record: `pause` wakes them when the journal says
    something happened (if `follow_journal` runs), `stop` makes them answer at once.

    A stopping service cannot keep a client waiting for a record it will only finish
    after its restart, nor drop the connection without a word: the client is told the
    record's id and that it goes on.
    """

    def __init__(self, poll_first_s: float = 0.1, poll_max_s: float = 1.0) -> None:
        self.poll_first_s = poll_first_s
        self.poll_max_s = poll_max_s
        """Besides the journal's notifications, a waiting request reads its record at
        intervals growing from the first to the max: a light poll for notifications
        lost with their connection, or when nothing follows the journal."""
        self.stopping = trio.Event()
        self._journal = trio.Event()
        self._held = 0
        self._owners: dict[int, int] = {}
        self._none = trio.Event()
        self._none.set()

    @contextlib.contextmanager
    def owners_place(self, owner: int, at_most: int) -> Iterator[bool]:
        """One of `owner`'s `at_most` places for a request that will wait, for the
        block: True if taken, False when all are (nothing taken then). A waiting request
        holds no place of the service's own budget, so this alone bounds how many one
        owner keeps: another owner's requests are served whatever this one waits on."""
        taken = self._owners.get(owner, 0)
        if taken >= at_most:
            yield False
            return
        self._owners[owner] = taken + 1
        try:
            yield True
        finally:
            self._owners[owner] -= 1
            if not self._owners[owner]:
                del self._owners[owner]

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

    def next_news(self) -> trio.Event:
        """Set by the journal's next notification. Taken before reading a record, so
        news that comes while it is read is not missed."""
        return self._journal

    async def pause(self, news: trio.Event, at_most_s: float) -> None:
        """Until `news` is set, the service stops, or `at_most_s` passed (the poll that
        covers notifications lost with a connection). Cancellation: nothing to undo."""
        if self.stopping.is_set() or news.is_set():
            return
        with trio.move_on_after(at_most_s):
            async with trio.open_nursery() as nursery:
                for happens in (news.wait, self.stopping.wait):
                    nursery.start_soon(_cancel_after, happens, nursery.cancel_scope)

    def _news(self) -> None:
        self._journal.set()
        self._journal = trio.Event()

    async def follow_journal(self, db: Database) -> None:
        """Wake the waiting requests at every journal notification, until cancelled; a
        lost connection is made again (meanwhile they poll). Each woken request reads
        its own record: the payload does not say whose event it is.

        Cancellation: the LISTEN connection is closed on the way out.
        """
        while True:
            try:
                async with db.listen(JOURNAL_CHANNEL) as listener:
                    self._news()  # anything may have happened while not listening
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(_cancel_after, listener.lost.wait, nursery.cancel_scope)
                        async for _ in listener.payloads:
                            self._news()
            except Exception as e:  # wake-ups are hints, the poll covers
                # Whatever broke the connection (a restart, the network) must not end the
                # service this runs in: listen again after a pause.
                event(logging.WARNING, "journal_follow_lost", error=describe(e, with_type=False))
            await trio.sleep(RECONNECT_S)

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


async def _cancel_after(happens: object, scope: trio.CancelScope) -> None:
    await happens()  # type: ignore[operator]
    scope.cancel()
