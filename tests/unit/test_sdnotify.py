"""sd_notify against a datagram socket made by the test, in place of systemd."""

from __future__ import annotations

import os
import socket

import pytest
import trio

from actors.sdnotify import Notifier, watchdog
from tests.helpers.notify_socket import received


def test_ready_status_stopping(systemd: tuple[socket.socket, str]) -> None:
    sock, path = systemd
    n = Notifier({"NOTIFY_SOCKET": path})
    n.ready("serving")
    n.status("3 waiting")
    n.stopping()
    assert received(sock) == [
        {"READY": "1", "STATUS": "serving"},
        {"STATUS": "3 waiting"},
        {"STOPPING": "1"},
    ]


def test_abstract_socket_address() -> None:
    name = f"transcriber-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.setblocking(False)
    try:
        Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert received(sock) == [{"READY": "1"}]
    finally:
        sock.close()


def test_without_notify_socket_nothing_is_sent() -> None:
    n = Notifier({})
    assert not n.enabled and n.watchdog_s is None
    n.ready()  # no socket, no error


def test_watchdog_interval_is_ours_only() -> None:
    assert Notifier({"WATCHDOG_USEC": "20000000"}).watchdog_s == 20.0
    assert Notifier({"WATCHDOG_USEC": "20000000", "WATCHDOG_PID": "1"}).watchdog_s is None


@pytest.mark.scenario("operations", "The watchdog is petted only while the database answers")
async def test_watchdog_pets_only_while_healthy(
    systemd: tuple[socket.socket, str], autojump_clock: trio.abc.Clock
) -> None:
    sock, path = systemd
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "10000000"})
    health = [True, True, False, False, True]

    async def healthy() -> bool:
        return health.pop(0) if health else True

    async def status() -> str:
        return "waiting=0"

    with trio.move_on_after(24.9):  # pets at 0, 5, 10, 15, 20 s: half of 10 s
        await watchdog(notifier, healthy, status)
    got = received(sock)
    assert [m.get("WATCHDOG") for m in got] == ["1", "1", None, None, "1"]
    assert got[2]["STATUS"].startswith("unhealthy")
    assert got[0]["STATUS"] == "waiting=0"
