"""Separate hosts for tests that need them: each a Linux network namespace of its own,
joined to the test's host by a veth pair on a /30 network, so a process in it reaches
the services of the test (PostgreSQL, the object store, a recognizer) over TCP at the
host's address, as a daemon on another machine would. Needs root and `ip`; where that
is not available the tests run the same processes on loopback instead.

The test's services listen on loopback; `forward` relays a port of the host's veth
address to them (and stops relaying when the service stops: the connection is refused
to the namespace too)."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import attrs
import trio


@attrs.frozen
class Host:
    """A namespace (None: plain loopback) and the addresses of both ends of its link."""

    namespace: str | None
    address: str
    """The namespace's own address (where its daemon listens)."""
    gateway: str
    """The test host's address as the namespace sees it (where its services are)."""

    def command(self, argv: list[str]) -> list[str]:
        return argv if self.namespace is None else ["ip", "netns", "exec", self.namespace, *argv]


LOOPBACK = Host(None, "127.0.0.1", "127.0.0.1")


def namespaces_available() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def separate_host() -> Iterator[Host]:
    """A new network namespace with a veth link to this one; removed on the way out."""
    tag = uuid.uuid4().hex[:6]
    name, outside, inside = f"tx-{tag}", f"tx{tag}h", f"tx{tag}n"
    net = f"10.{random.randrange(100, 250)}.{random.randrange(256)}.{random.randrange(0, 256, 4)}"
    base = net.rsplit(".", 1)[0]
    last = int(net.rsplit(".", 1)[1])
    gateway, address = f"{base}.{last + 1}", f"{base}.{last + 2}"
    _ip("netns", "add", name)
    try:
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", name)
        _ip("addr", "add", f"{gateway}/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("netns", "exec", name, "ip", "addr", "add", f"{address}/30", "dev", inside)
        _ip("netns", "exec", name, "ip", "link", "set", inside, "up")
        _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        yield Host(name, address, gateway)
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", outside], capture_output=True)


async def _pipe(source: trio.SocketStream, sink: trio.SocketStream) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await sink.send_eof()


async def forward(
    host: str, target: int | str, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """Relay connections to `host`:<a new port> to 127.0.0.1:`target` (a port), or to
    the Unix socket `target` (a path); started() with the new port. Runs until
    cancelled."""

    async def relay(client: trio.SocketStream) -> None:
        try:
            if isinstance(target, int):
                upstream = await trio.open_tcp_stream("127.0.0.1", target)
            else:
                upstream = await trio.open_unix_socket(target)
        except OSError:
            await client.aclose()  # the service is down: so it is for the namespace too
            return
        async with client, upstream, trio.open_nursery() as nursery:
            nursery.start_soon(_pipe, client, upstream)
            nursery.start_soon(_pipe, upstream, client)

    listeners = await trio.open_tcp_listeners(0, host=host)
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, relay, listeners)
        task_status.started(port)
