"""systemd's notify protocol (sd_notify): READY, STATUS, WATCHDOG, STOPPING as
datagrams to $NOTIFY_SOCKET. Without the variable every call does nothing."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping

import trio

from actors.log import event


class Notifier:
    def __init__(self, env: Mapping[str, str] | None = None):
        env = os.environ if env is None else env
        address = env.get("NOTIFY_SOCKET") or None
        if address and address.startswith("@"):
            address = "\0" + address[1:]  # the abstract namespace
        self.address = address
        usec = env.get("WATCHDOG_USEC")
        pid = env.get("WATCHDOG_PID")
        # The watchdog is meant for us unless it names another process.
        mine = pid is None or pid == str(os.getpid())
        self.watchdog_s = int(usec) / 1e6 if usec and mine else None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, **fields: str) -> None:
        if self.address is None:
            return
        message = "\n".join(f"{k}={v}" for k, v in fields.items()).encode()
        try:
            # A socket a message, as libsystemd's sd_notify does: rare, and nothing to
            # keep open or close.
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.sendto(message, self.address)
        except OSError as e:  # systemd gone or restarting: not a reason to stop serving
            event(logging.WARNING, "sd_notify_failed", error=str(e))

    def ready(self, status: str = "") -> None:
        self.send(READY="1", **({"STATUS": status} if status else {}))

    def stopping(self) -> None:
        self.send(STOPPING="1")

    def status(self, text: str) -> None:
        self.send(STATUS=text)


async def watchdog(
    notifier: Notifier,
    healthy: Callable[[], Awaitable[bool]],
    status: Callable[[], Awaitable[str]] | None = None,
    interval_s: float | None = None,
) -> None:
    """Pet the watchdog at half its interval, only while `healthy()` says so; systemd
    restarts the service if the pets stop. Never returns; cancel it.

    Cancellation: a plain sleep between pets.
    """
    interval = interval_s or (notifier.watchdog_s or 30.0) / 2
    while True:
        if await healthy():
            fields = {"WATCHDOG": "1"}
            if status is not None:
                fields["STATUS"] = await status()
            notifier.send(**fields)
        else:
            notifier.status("unhealthy: the database does not answer")
        await trio.sleep(interval)
