"""The API benchmark: card latency for 50 clients — as a closed loop (each reads again
at once: the most the API answers) and as an open loop (each reads every 0.5 s: pages
watching their recordings) — with nothing else running and while two recognitions
run, and the server's peak memory while a 1 GiB body is uploaded — into the local
folder, and into an object store (the one of TRANSCRIBER_STORAGE_URL and AWS_* when set,
else moto's S3 server started here on loopback, if the dev extra is installed).

    transcriber bench-api [--clients 50] [--seconds 20] [--every 0.5] [--upload-gib 1]

Servers are real `transcriber serve` processes on loopback, on a fresh embedded
database; the audio is made here (the English sample, repeated), never committed.
"""

from __future__ import annotations

import gc
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import trio

from transcriber.audio.recognize import bundled_model
from transcriber.bench.recognition import make_audio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[max(0, round(p / 100 * len(xs) + 0.5) - 1)]


class Server:
    """`transcriber serve` in a child process."""

    def __init__(self, env: dict[str, str], workers: int):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "transcriber",
                "serve",
                "--http",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(workers),
            ],
            env=env,
            stderr=subprocess.DEVNULL,
        )

    async def ready(self) -> None:
        async with httpx.AsyncClient(base_url=self.url) as c:
            with trio.fail_after(120):
                while True:
                    try:
                        if (await c.get("/healthz")).status_code == 200:
                            return
                    except httpx.TransportError:
                        pass
                    await trio.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def summary(latencies: list[float], seconds: float) -> dict[str, Any]:
    ms = [x * 1e3 for x in latencies]
    return {
        "seconds": seconds,
        "requests": len(ms),
        "requests_per_s": len(ms) / seconds,
        "p50_ms": percentile(ms, 50),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
    }


async def read_cards(
    url: str, headers: dict[str, str], ids: list[str], clients: int, seconds: float
) -> dict[str, Any]:
    """Closed loop: `clients` readers, each reading a card again as soon as it has one,
    for `seconds`. It measures how many reads the API answers at most, and what a reader
    waits then. Each reader has its connection open and has read once before the clock
    starts: opening 50 connections at once is not a card read."""
    latencies: list[float] = []
    start = trio.Event()
    deadline = 0.0

    async def client(n: int, task_status: trio.TaskStatus[None]) -> None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as c:
            (await c.get(f"/v1/recordings/{ids[n % len(ids)]}")).raise_for_status()
            task_status.started()
            await start.wait()
            while trio.current_time() < deadline:
                t = time.perf_counter()
                answer = await c.get(f"/v1/recordings/{ids[n % len(ids)]}")
                latencies.append(time.perf_counter() - t)
                answer.raise_for_status()

    async with trio.open_nursery() as nursery:
        for n in range(clients):
            await nursery.start(client, n)  # one connection opening at a time
        deadline = trio.current_time() + seconds
        start.set()
    return {"clients": clients, **summary(latencies, seconds)}


async def poll_cards(
    url: str, headers: dict[str, str], ids: list[str], clients: int, every_s: float, seconds: float
) -> dict[str, Any]:
    """Open loop: `clients` pages, each reading its card every `every_s` (at a random
    phase), whether or not the last read has been answered — the load of people watching
    their recordings. A read's latency runs from when it was due, so a stalled server
    counts the wait of every read it delayed."""
    latencies: list[float] = []
    rng = random.Random(0)
    start = trio.Event()
    begin = 0.0  # when the clock starts, once every page has its connection

    async def one(c: httpx.AsyncClient, rid: str, due: float) -> None:
        answer = await c.get(f"/v1/recordings/{rid}")
        latencies.append(trio.current_time() - due)
        answer.raise_for_status()

    async def client(n: int, phase: float, task_status: trio.TaskStatus[None]) -> None:
        rid = ids[n % len(ids)]
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as c:
            (await c.get(f"/v1/recordings/{rid}")).raise_for_status()
            task_status.started()
            await start.wait()
            async with trio.open_nursery() as reads:
                due = begin + phase
                while due < begin + seconds:
                    await trio.sleep_until(due)
                    reads.start_soon(one, c, rid, due)
                    due += every_s

    async with trio.open_nursery() as nursery:
        for n in range(clients):
            await nursery.start(client, n, rng.uniform(0, every_s))
        begin = trio.current_time()
        start.set()
    return {"clients": clients, "every_s": every_s, **summary(latencies, seconds)}


async def both_loads(
    url: str, headers: dict[str, str], ids: list[str], clients: int, seconds: float, every_s: float
) -> dict[str, Any]:
    gc.freeze()  # the readers' own full collections would count as the server's latency
    return {
        "closed_loop": await read_cards(url, headers, ids, clients, seconds),
        "open_loop": await poll_cards(url, headers, ids, clients, every_s, seconds),
    }


async def card_latency(
    env: dict[str, str], token: str, work: Path, clients: int, seconds: float, every_s: float
) -> dict[str, Any]:
    """Card reads with nothing else running (a server without workers), then the same
    reads of the same cards while both their recordings are recognized, each as a closed
    and as an open loop: side by side they say what recognition costs the API, apart
    from what the readers themselves cost on the same cores."""
    headers = {"Authorization": f"Bearer {token}"}
    ids = []
    idle = Server(env, workers=0)
    try:
        await idle.ready()
        async with httpx.AsyncClient(base_url=idle.url, headers=headers, timeout=60) as c:
            for i in range(2):
                audio = work / f"talk{i}.flac"
                make_audio(audio, 20)  # long enough to outlast the readers, batched
                data = await trio.Path(audio).read_bytes()
                answer = await c.post("/v1/recordings", files={"file": (audio.name, data)})
                answer.raise_for_status()
                ids.append(answer.json()["id"])
        alone = await both_loads(idle.url, headers, ids, clients, seconds, every_s)
    finally:
        idle.stop()
    server = Server(env, workers=2)
    try:
        await server.ready()
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as c:
            # Measure only while both are being recognized.
            with trio.fail_after(300):
                while True:
                    cards = [(await c.get(f"/v1/recordings/{i}")).json() for i in ids]
                    if all(k["milestone"] == "normalized" for k in cards):
                        break
                    await trio.sleep(0.2)
        during = await both_loads(server.url, headers, ids, clients, seconds, every_s)
        async with httpx.AsyncClient(base_url=server.url, headers=headers) as c:
            after = [(await c.get(f"/v1/recordings/{i}")).json() for i in ids]
        return {
            "without_recognition": alone,
            "during_recognition": during,
            "recognition_progress_after": [k["progress"] for k in after],
            "still_recognizing_after": all(k["milestone"] == "normalized" for k in after),
        }
    finally:
        server.stop()


async def upload_memory(env: dict[str, str], token: str, gib: float) -> dict[str, Any]:
    server = Server(env, workers=0)
    try:
        await server.ready()
        before = peak_rss_mib(server.proc.pid)
        size = int(gib * 1024**3)
        chunk = os.urandom(1 << 20)

        async def body() -> AsyncIterator[bytes]:
            sent = 0
            while sent < size:
                piece = chunk[: size - sent]
                sent += len(piece)
                yield piece

        t = time.perf_counter()
        async with httpx.AsyncClient(base_url=server.url, timeout=600) as c:
            answer = await c.post(
                "/v1/recordings",
                content=body(),
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/octet-stream",
                    "Content-Length": str(size),
                },
            )
        seconds = time.perf_counter() - t
        answer.raise_for_status()
        return {
            "bytes": size,
            "seconds": seconds,
            "mib_per_s": size / 2**20 / seconds,
            "server_peak_rss_mib_before": before,
            "server_peak_rss_mib": peak_rss_mib(server.proc.pid),
            "stored_size_bytes": answer.json()["size_bytes"],
        }
    finally:
        server.stop()


class ObjectStore:
    """The object store the upload goes to: the configured one, or moto's server in a
    child process (its memory is not the server's)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] = {}

    def start(self) -> dict[str, str]:
        if os.environ.get("TRANSCRIBER_STORAGE_URL"):
            return {
                k: v
                for k, v in os.environ.items()
                if k == "TRANSCRIBER_STORAGE_URL" or k.startswith("AWS_")
            }
        port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1",
        }
        from transcriber.storage.s3 import make_client

        client = make_client(env)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.create_bucket(Bucket="transcriber-bench")
                break
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.2)
        return {**env, "TRANSCRIBER_STORAGE_URL": "s3://transcriber-bench/bench"}

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


def main(
    clients: int = 50, seconds: float = 20.0, upload_gib: float = 1.0, every_s: float = 0.5
) -> int:
    work = Path(tempfile.mkdtemp(prefix="transcriber-bench-api-"))
    work.chmod(0o755)  # the embedded database's own user must reach the home inside
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env.update(
        TRANSCRIBER_HOME=str(work / "home"), TRANSCRIBER_MODEL=str(bundled_model(work / "models"))
    )
    token = subprocess.run(
        [sys.executable, "-m", "transcriber", "owner", "add", "bench"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()

    store = ObjectStore()

    async def run() -> dict[str, Any]:
        report = {
            "card_latency": await card_latency(env, token, work, clients, seconds, every_s),
            "upload": await upload_memory(env, token, upload_gib),
        }
        try:
            report["upload_to_object_store"] = await upload_memory(
                {**env, **store.start()}, token, upload_gib
            )
        finally:
            store.stop()
        return report

    report = trio.run(run)
    c, u, s = report["card_latency"], report["upload"], report["upload_to_object_store"]

    def line(r: dict[str, Any]) -> str:
        return (
            f"p50 {r['p50_ms']:6.1f} ms  p99 {r['p99_ms']:6.1f} ms  "
            f"{r['requests_per_s']:4.0f} req/s"
        )

    for name, title in (
        ("closed_loop", f"{clients} readers, each again at once"),
        ("open_loop", f"{clients} pages, each every {every_s:g} s"),
    ):
        alone, during = c["without_recognition"][name], c["during_recognition"][name]
        print(f"card GET, {title}:")
        print(f"  nothing else running     {line(alone)}")
        print(
            f"  2 recognitions running   {line(during)}  (p99 ratio "
            f"{during['p99_ms'] / alone['p99_ms']:.2f})"
        )
    print(f"  still recognizing after: {c['still_recognizing_after']}")
    print(
        f"upload of {u['bytes'] / 2**30:.2f} GiB: {u['seconds']:.1f} s "
        f"({u['mib_per_s']:.0f} MiB/s), server peak RSS {u['server_peak_rss_mib']:.0f} MiB"
    )
    print(
        f"the same into the object store: {s['seconds']:.1f} s ({s['mib_per_s']:.0f} MiB/s), "
        f"server peak RSS {s['server_peak_rss_mib']:.0f} MiB"
    )
    print(json.dumps(report))
    return 0
