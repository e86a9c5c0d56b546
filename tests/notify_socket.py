"""A datagram socket in place of systemd's notify socket, for tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """The socket and its path, for NOTIFY_SOCKET."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify")
    sock.bind(path)
    sock.setblocking(False)
    yield sock, path
    sock.close()


def received(sock: socket.socket) -> list[dict[str, str]]:
    """The messages waiting on the socket, each as its fields."""
    messages = []
    while True:
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return messages
        messages.append(dict(line.split("=", 1) for line in data.decode().splitlines()))
