"""Reading the datagram socket that stands in for systemd's notify socket (the
`systemd` fixture in tests/conftest.py)."""

from __future__ import annotations

import socket


def received(sock: socket.socket) -> list[dict[str, str]]:
    """The messages waiting on the socket, each as its fields."""
    messages = []
    while True:
        try:
            data = sock.recv(4096)
        except BlockingIOError:
            return messages
        messages.append(dict(line.split("=", 1) for line in data.decode().splitlines()))
