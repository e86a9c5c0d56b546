"""HTTP over a plain socket, for the tests that decide when each byte goes: raw
requests and answers, uploads that read the answer while still sending (as curl does;
httpx reads only once it has sent the whole body), and polling for what another task
or process brings about."""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from typing import Any

import httpx
import trio

from tests.helpers.api_clients import store_files
from transcriber.config import Config
from transcriber.owners import NewOwner

MiB = 1 << 20
CHUNK = b"\x55" * (64 * 1024)


async def until(condition: Any, what: str) -> None:
    """Poll for a state another task or process brings about (not a race to win)."""
    with trio.fail_after(10):
        while not condition():
            await trio.sleep(0.01)


async def exchange(base_url: str, head: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read one answer (status, headers, body) until its length or the
    connection's end."""
    url = httpx.URL(base_url)
    stream = await trio.open_tcp_stream(url.host, url.port)
    async with stream:
        await stream.send_all(head)
        data = b""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in data:
                chunk = await stream.receive_some(65536)
                assert chunk, f"closed without an answer: {data!r}"
                data += chunk
            top, _, rest = data.partition(b"\r\n\r\n")
            lines = top.decode("latin-1").split("\r\n")
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in lines[1:])
            }
            length = int(headers.get("content-length", "0"))
            while len(rest) < length:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                rest += chunk
    return int(lines[0].split()[1]), headers, rest[:length]


def request_head(base_url: str, line: str, **headers: str) -> bytes:
    fields = {"Host": httpx.URL(base_url).netloc.decode(), **headers}
    return (line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n").encode()


class RawUpload:
    """An upload over a plain socket, so the test decides when each byte goes and can
    read the answer while still sending, as curl does (httpx reads only once it has
    sent the whole body)."""

    def __init__(self, stream: trio.SocketStream):
        self.stream = stream
        self.sent = 0
        self._chunked = True
        self.headers: dict[str, str] = {}

    @classmethod
    async def start(
        cls,
        base_url: str,
        owner: NewOwner,
        *,
        content_type: str = "audio/wav",
        length: int | None = None,
        headers: dict[str, str] | None = None,
        path: str = "/v1/recordings",
    ) -> RawUpload:
        url = urllib.parse.urlsplit(base_url)
        assert url.hostname is not None and url.port is not None
        upload = cls(await trio.open_tcp_stream(url.hostname, url.port))
        fields = {
            "Host": url.netloc,
            "Authorization": f"Bearer {owner.token}",
            "Content-Type": content_type,
            **(headers or {}),
        }
        if length is None:
            fields["Transfer-Encoding"] = "chunked"
        else:
            fields["Content-Length"] = str(length)
            upload._chunked = False
        head = (
            f"POST {path} HTTP/1.1\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
            + "\r\n"
        )
        await upload.stream.send_all(head.encode())
        return upload

    async def send(self, data: bytes) -> None:
        framed = f"{len(data):x}\r\n".encode() + data + b"\r\n" if self._chunked else data
        await self.stream.send_all(framed)
        self.sent += len(data)

    async def end(self) -> None:
        if self._chunked:
            await self.stream.send_all(b"0\r\n\r\n")

    async def answer(self) -> tuple[int, dict[str, Any]]:
        """The status and JSON body of the answer."""
        data = b""
        while b"\r\n\r\n" not in data:
            data += await self._receive()
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        self.headers = {
            k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
        }
        length = next(
            int(line.split(":", 1)[1])
            for line in lines[1:]
            if line.lower().startswith("content-length:")
        )
        while len(body) < length:
            body += await self._receive()
        return status, json.loads(body[:length])

    async def _receive(self) -> bytes:
        chunk = await self.stream.receive_some(65536)
        if not chunk:
            raise EOFError("the server closed the connection without an answer")
        return chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


async def send_until_answered(upload: RawUpload, cap: int) -> tuple[int, dict[str, Any]]:
    """Keep sending chunks until the answer comes (or `cap` bytes went out)."""
    answered: list[tuple[int, dict[str, Any]]] = []
    async with trio.open_nursery() as nursery:

        async def read() -> None:
            answered.append(await upload.answer())
            nursery.cancel_scope.cancel()

        nursery.start_soon(read)
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while upload.sent < cap:
                await upload.send(CHUNK)
        await trio.sleep_forever()  # until the answer; the server closed or stopped reading
    return answered[0]


async def send_all_then_answer(upload: RawUpload, total: int) -> tuple[int, dict[str, Any]]:
    """Send the whole body before reading, as httpx and many clients do; a server that
    stops reading before answering and closing would leave this hanging."""
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while upload.sent < total:
            await upload.send(CHUNK)
        await upload.end()
    return await upload.answer()


async def read_line(stream: trio.abc.ReceiveStream) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = await stream.receive_some(1024)
        if not chunk:
            raise EOFError(data.decode(errors="replace"))
        data += chunk
    return data.decode().strip()


async def uploads_past_the_key_check(
    base_url: str, owner: NewOwner, config: Config, key: str
) -> list[RawUpload]:
    """Two uploads with the Idempotency-Key `key`, both past the key check and streaming
    (their first bytes on disk) before either may finish."""
    uploads = [
        await RawUpload.start(base_url, owner, headers={"Idempotency-Key": key}) for _ in range(2)
    ]
    for u in uploads:
        await u.send(b"x" * 1000)
    await until(lambda: len(store_files(config)) == 2, "both uploads on disk")
    return uploads
