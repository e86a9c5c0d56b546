"""A supervisor nursery: one-for-one restarts with backoff, and a graceful drain."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable

import attrs
import trio

from actors.log import describe, event
from actors.metrics import RuntimeMetrics
from actors.steps import Backoff


@attrs.frozen
class Child:
    name: str
    run: Callable[[], Awaitable[None]] = attrs.field(eq=False)
    """Returns when its work is over (it is not restarted); raises to be restarted."""


RESTART_BACKOFF = Backoff(base_s=0.5, cap_s=30.0)
"""A crashed child's first pause ½–1 s before its restart, doubling up to 30 s."""


@attrs.define(eq=False)
class Supervisor:
    """Runs children in one nursery; a crashed child is restarted alone, after a pause
    that doubles with each crash in a row and resets once it has run `stable_s`."""

    restart: Backoff = RESTART_BACKOFF
    stable_s: float = 60.0
    rng: random.Random = attrs.field(factory=random.Random)
    restarts: dict[str, int] = attrs.field(factory=dict)
    metrics: RuntimeMetrics = attrs.field(factory=RuntimeMetrics)
    """The product's: the one its /metrics shows (its own unless given)."""
    _nursery: trio.Nursery | None = None
    _running: int = 0
    _all_done: trio.Event = attrs.field(factory=trio.Event)

    async def run(
        self,
        children: list[Child],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run until every child has returned, or until cancelled.

        Cancellation: cancels every child; none is restarted after that.
        """
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for child in children:
                self.start(child)
            task_status.started()
        self._nursery = None

    def start(self, child: Child) -> None:
        assert self._nursery is not None, "the supervisor is not running"
        self._running += 1
        self.metrics.actor_restarts.labels(child.name)  # shown at 0 from its start
        self._nursery.start_soon(self._keep, child, name=child.name)

    async def _keep(self, child: Child) -> None:
        crashes = 0
        try:
            while True:
                started = trio.current_time()
                try:
                    await child.run()
                    return
                except Exception as e:
                    if trio.current_time() - started >= self.stable_s:
                        crashes = 0
                    pause = self.restart.delay(crashes, self.rng)
                    crashes += 1
                    self.restarts[child.name] = self.restarts.get(child.name, 0) + 1
                    self.metrics.actor_restarts.labels(child.name).inc()
                    event(
                        logging.ERROR,
                        "actor_restart",
                        actor=child.name,
                        error=describe(e),
                        restart_in_s=round(pause, 3),
                        crashes_in_a_row=crashes,
                    )
                    await trio.sleep(pause)
        finally:
            self._running -= 1
            if self._running == 0:
                self._all_done.set()

    async def drain(self, grace_s: float) -> bool:
        """Wait up to `grace_s` for the children to return (the caller has told them to
        stop, e.g. by closing their wake-up), then cancel the rest.

        Returns True when all returned in time. Cancellation: returns early, children
        keep running under their own nursery.
        """
        if self._running == 0:
            return True
        with trio.move_on_after(grace_s):
            await self._all_done.wait()
            return True
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
        return False
