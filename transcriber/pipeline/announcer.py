"""The journal's notification for a pipeline's commits, sent after their transactions
on a pooled connection, not the commits' (the `announce` query): at once for the first
commit after a quiet spell, then at most once a gap for a steady stream of them.

Sent in the commits' own transactions, as every other journal event's is, it made every
commit of every worker and daemon wait for the others' WAL flushes: PostgreSQL holds one
lock of the whole cluster from a notifying transaction's commit until that commit is
flushed. Its listeners (`journal --follow`, the requests that wait on a record) only need
to hear that something happened, and read the journal or their record themselves.
"""

from __future__ import annotations

import logging

import attrs
import trio

from actors import describe
from actors.log import event
from transcriber.db.database import Database

GAP_S = 0.05
"""The least time between two announcements: a follower hears of a commit at most this
late, and a busy pipeline sends one notification for its many commits in that time."""


@attrs.define(eq=False)
class Announcer:
    db: Database
    gap_s: float = GAP_S
    sent: int = attrs.field(init=False, default=0)
    """Notifications sent; for tests and benchmarks."""
    _due: trio.Event = attrs.field(init=False, factory=trio.Event)

    def news(self) -> None:
        """Commits were made: they are announced with the next notification."""
        self._due.set()

    async def run(self) -> None:
        """Announce what `news` reports, until cancelled. A notification the database
        refuses or never answers is logged and not sent again: the listeners' poll
        covers it, and the next commit is announced anyway.

        Cancellation: news not yet sent is dropped (the poll covers it too).
        """
        while True:
            await self._due.wait()
            self._due = trio.Event()
            try:
                await self.db.fetchval("announce")
                self.sent += 1
            except Exception as e:
                event(logging.WARNING, "announce_failed", error=describe(e))
            await trio.sleep(self.gap_s)
