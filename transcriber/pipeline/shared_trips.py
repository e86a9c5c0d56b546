"""The queue's shared trips: workers of one process that commit or ask for work at the
same moment share one trip to the database. Their commits go in one statement (each
fenced by its own token and journaled on its own), their claims in one claim statement (a
fresh token per record, one record per asking worker), their reads in one read. There is
no timer: an ask that finds no trip out leaves at once; asks made while a trip is out
leave together when it is back. An idle queue answers as fast as ever; a busy one pays one
round of statements for many workers instead of one each.

Held here: who leads a trip and who waits for it, how many are out at once, and what a
trip cut or failed, or an ask whose caller has gone, leaves to release. The statements a
trip sends, and every other write of the queue, are the queue's own (pg_queue.py, the one
module that runs the queue's queries).
"""

from __future__ import annotations

import abc
import contextlib
import uuid
from collections.abc import AsyncIterator, Hashable, Sequence
from typing import TYPE_CHECKING

import attrs
import trio

from actors import RELEASE_TIMEOUT_S, Job, Step
from transcriber.db.database import Database, Pinned

if TYPE_CHECKING:
    from transcriber.pipeline.pg_queue import Saved


@attrs.define(eq=False)
class Ask:
    """One caller's part of a shared trip: a commit to write, a record wanted, or both;
    and, once the trip is back, the answers."""

    commit: tuple[Job, Step, Saved | None] | None
    wants_job: bool
    wake: trio.Event = attrs.field(factory=trio.Event)
    answered: bool = False
    resend: bool = False
    """The trip was cut (its leader was cancelled): send what is unanswered again."""
    committed: bool | None = None
    job_answered: bool = False
    job: Job | None = None
    error: BaseException | None = None
    gone: bool = False
    """Its caller stopped waiting (cancelled, and the trip outlasted its patience): a
    record the trip claims for it is released at once."""


@attrs.define(eq=False)
class Trip:
    """Tokens a trip's claim statements were sent with and not yet handed to an ask:
    what a cut trip may have claimed for nobody, released by token."""

    offered: list[uuid.UUID] = attrs.field(factory=list)

    def tokens(self, n: int) -> list[uuid.UUID]:
        """Fresh claim tokens, one per record wanted: made here so that a caller whose
        reply was lost still knows what its statement may have claimed."""
        fresh = [uuid.uuid4() for _ in range(n)]
        self.offered += fresh
        return fresh

    def take(self) -> list[uuid.UUID]:
        """The tokens offered and not handed on, forgotten here: the caller releases them."""
        taken, self.offered = self.offered, []
        return taken


@attrs.define(eq=False)
class SharedTrips(abc.ABC):
    """The trips of one queue: asks are sent with `_share`; a trip's statements are the
    queue's (`_send`), and so are the releases of what nobody holds."""

    db: Database
    trips_at_once: int = attrs.field(default=3, kw_only=True)
    """Trips out at the same time at most: enough for the database to work on one while
    the next is on the way and the answers of a third are handled, few enough that trips
    stay shared (a pipeline lowers it for few workers: runner.MIN_FULL_TRIP)."""
    full_trip: int = attrs.field(default=1, kw_only=True)
    """How many asks make a trip worth sending beside one already out (a pipeline sets
    its workers' share of the trips out at once)."""
    trips: int = attrs.field(init=False, default=0)
    """Shared trips made (commits and claims of workers asking at once); for benchmarks."""
    trip_asks: int = attrs.field(init=False, default=0)
    """Asks those trips answered."""
    _asks: list[Ask] = attrs.field(init=False, factory=list)
    _trips_out: int = attrs.field(init=False, default=0)
    _pins: list[Pinned] = attrs.field(init=False, factory=list)

    @contextlib.asynccontextmanager
    async def pinned(self) -> AsyncIterator[None]:
        """Inside this block the shared trips keep their connections (one per trip that
        may be out at once) instead of taking one from the pool each time. For a long
        run of work, such as a pipeline's.

        Cancellation: the connections go back to the pool on the way out, shielded.
        """
        async with contextlib.AsyncExitStack() as stack:
            self._pins = [
                await stack.enter_async_context(self.db.pinned()) for _ in range(self.trips_at_once)
            ]
            try:
                yield
            finally:
                self._pins = []

    @abc.abstractmethod
    async def _send(self, asks: list[Ask], trip: Trip, pin: Pinned | None) -> None:
        """One trip's statements for `asks` (on `pin` when given), retried while the
        database is unreachable; the answers written on the asks."""

    @abc.abstractmethod
    async def _release_shielded(self, tokens: Sequence[Hashable], why: str) -> None:
        """Release what claims with `tokens` took; shielded, at most RELEASE_TIMEOUT_S."""

    @abc.abstractmethod
    async def release(self, job: Job, why: str) -> bool:
        """Hand a claimed record back (its fenced write)."""

    async def _share(self, ask: Ask) -> Ask:
        """Send `ask` with the next trip (leading it if none is out) and wait for its
        answer; raises what the trip raised.

        Cancellation: an ask whose trip has not left is withdrawn. One whose trip is out
        waits for it, shielded, at most RELEASE_TIMEOUT_S, and a record claimed for it
        is released, so nothing stays claimed for a caller that is gone. A trip cut by
        its leader's cancellation sends its other asks again with the next trip, minus
        what it had already answered: every write is fenced, so a repeat is harmless.
        """
        while True:
            self._asks.append(ask)
            try:
                while not ask.answered:
                    if not self._may_leave():
                        await ask.wake.wait()
                        ask.wake = trio.Event()
                    else:
                        await self._lead()
            except trio.Cancelled:
                await self._abandon(ask)
                raise
            if not ask.resend:
                break
            ask.answered = ask.resend = False
        if ask.error is not None:
            raise ask.error
        return ask

    def _may_leave(self) -> bool:
        """Whether a trip may leave now with the asks waiting: at once when none is out;
        beside one that is out only with a full load (a trip that left half empty would
        cost the database a round of statements for few asks)."""
        return self._trips_out == 0 or (
            self._trips_out < self.trips_at_once and len(self._asks) >= self.full_trip
        )

    async def _lead(self) -> None:
        """Take every waiting ask on one trip, answer them all, pass the lead on.

        A trip that fails with anything but a cut connection (those `_send` retries): a
        statement the server cancelled or refused, after earlier ones of the same trip
        may have committed. What it claimed and handed to nobody is released at once,
        journaled; an ask keeps the parts the trip answered (a commit that succeeded is
        answered as such, with no record to go on with) and raises only for a part left
        unanswered.

        Cancellation: what the cut trip may have claimed is released at once (shielded,
        at most RELEASE_TIMEOUT_S); its asks are sent again with the next trip. A record
        the trip brought for an ask whose caller has gone meanwhile (its patience ran
        out while the trip was out, at any point of it) is released the same way.
        """
        self._trips_out += 1
        # One scheduling round before the trip takes its asks (not a timer: the tasks
        # already runnable run, then it leaves). The workers the last trip answered are
        # runnable together and ask again at once; without the round the first of them
        # would leave alone, the others on the next trip (two asks a trip on average for
        # four workers, in the drain). Shielded: no cancellation point is added here.
        await trio.lowlevel.cancel_shielded_checkpoint()
        asks, self._asks = self._asks, []
        pin = self._pins.pop() if self._pins else None
        trip = Trip()
        try:
            await self._send(asks, trip, pin)
            self.trips += 1
            self.trip_asks += len(asks)
        except trio.Cancelled:
            for a in asks:
                a.resend = True
            await self._release_shielded(trip.take(), "trip cut")
            raise
        except Exception as e:
            await self._release_shielded(trip.take(), "trip failed")
            for a in asks:
                if a.error is None and self._unanswered(a):
                    a.error = e
                elif a.wants_job and not a.job_answered:
                    a.job_answered = True  # its commit was answered: no record this time
        finally:
            if pin is not None:
                self._pins.append(pin)
            self._trips_out -= 1
            for a in asks:
                a.answered = True  # from here on no ask of this trip turns `gone`
            left = [a.job for a in asks if a.gone and a.job is not None]
            for a in asks:
                if a.gone:
                    a.job = None
                a.wake.set()
            if self._asks:
                self._asks[0].wake.set()  # the next leader
            if left:
                await self._release_shielded([j.claim.token for j in left], "worker stopping")

    @staticmethod
    def _unanswered(ask: Ask) -> bool:
        """Whether the failed trip answered nothing of `ask` that its caller needs: its
        commit (if it has one) is not known to have been written."""
        if ask.commit is not None:
            return ask.committed is None
        return ask.wants_job and not ask.job_answered

    async def _abandon(self, ask: Ask) -> None:
        """The caller of `ask` was cancelled: nothing may stay claimed for it.

        Cancellation: runs shielded, at most RELEASE_TIMEOUT_S.
        """
        with trio.CancelScope(shield=True) as scope:
            scope.deadline = trio.current_time() + RELEASE_TIMEOUT_S
            if ask in self._asks:  # its trip has not left: withdraw it
                self._asks.remove(ask)
                if self._asks and self._may_leave():
                    self._asks[0].wake.set()  # it may have been woken to lead
                if ask.commit is not None and ask.committed is None:
                    # Its commit never left: its record would stay claimed till the lease.
                    await self.release(ask.commit[0], "worker stopping")
                return
            try:
                while not ask.answered:
                    await ask.wake.wait()
                    ask.wake = trio.Event()
            finally:
                # Not answered in time (the trip retries while the server is away):
                # the trip releases what it claims for this ask itself.
                ask.gone = not ask.answered
            if ask.job is not None:
                await self.release(ask.job, "worker stopping")
