"""Daemons on several hosts (capability `blob-storage`): two `transcriber serve`
processes with homes of their own (no shared folder), one PostgreSQL, one bucket of
moto's S3 server, and an OpenAI-compatible recognizer.

As root (CI) each daemon runs in a network namespace of its own
(tests/helpers/network_namespaces.py) and reaches PostgreSQL, the store and the
recognizer over TCP at its link's address, as a daemon on another machine would;
elsewhere the same two processes run on loopback.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sys
import urllib.parse
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from tests.helpers.generated_audio import SAMPLES
from tests.helpers.moto_store import EchoRecognizer, MotoStore
from tests.helpers.network_namespaces import (
    LOOPBACK,
    Host,
    forward,
    namespaces_available,
    separate_host,
)
from tests.helpers.pg_pipeline import journal
from transcriber.db.database import Database
from transcriber.owners import NewOwner, add_owner

ROOT = Path(__file__).resolve().parents[2]
AUDIO = (SAMPLES / "en.ogg").read_bytes()


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("blob-storage", title)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@attrs.define(eq=False)
class Daemon:
    name: str
    home: Path
    url: str
    proc: trio.Process

    def log(self) -> str:
        return (self.home.parent / f"{self.name}.log").read_text(errors="replace")

    def claimed(self, step: str) -> set[str]:
        return set(re.findall(rf"event=claimed \S+ id=(\S+) milestone=\S+ step={step}", self.log()))


async def start_daemon(name: str, host: Host, tmp_path: Path, env: dict[str, str]) -> Daemon:
    home = tmp_path / name
    port = free_port()
    log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - the child holds it
    proc = await trio.lowlevel.open_process(
        host.command(
            [
                sys.executable,
                "-m",
                "transcriber",
                "serve",
                "--http",
                f"{host.address}:{port}",
                "--workers",
                "2",
                "--grace",
                "1",
            ]
        ),
        env={**env, "TRANSCRIBER_HOME": str(home)},
        cwd=ROOT,
        stderr=log,
    )
    log.close()
    daemon = Daemon(name, home, f"http://{host.address}:{port}", proc)
    async with httpx.AsyncClient() as c:
        with trio.fail_after(60):
            while True:
                try:
                    if (await c.get(daemon.url + "/healthz")).status_code == 200:
                        return daemon
                except httpx.TransportError:
                    pass
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited: {daemon.log()}")
                await trio.sleep(0.1)


async def upload(daemon: Daemon, owner: NewOwner, n: int) -> list[str]:
    ids = []
    async with httpx.AsyncClient(
        base_url=daemon.url, timeout=30, headers={"Authorization": f"Bearer {owner.token}"}
    ) as c:
        for _ in range(n):
            # Each its own name: the same request again would name the first record.
            name = f"{uuid.uuid4().hex}.ogg"
            r = await c.post("/v1/recordings", files={"file": (name, AUDIO, "audio/ogg")})
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
    return ids


async def settled(db: Database, ids: list[str]) -> None:
    """Until every record is transcribed or stopped."""
    with trio.fail_after(120):
        while await db.run(
            lambda con: con.fetchval(
                "SELECT count(*) FROM recordings WHERE id = ANY($1::uuid[]) "
                "AND milestone <> 'transcribed' AND stopped_at IS NULL",
                ids,
            )
        ):
            await trio.sleep(0.1)


async def until(condition: Any, limit_s: float = 60) -> None:
    with trio.fail_after(limit_s):
        while not condition():
            await trio.sleep(0.05)


def reached_once(events: list[Any], ids: list[str]) -> None:
    reached = Counter(
        (str(e["recording_id"]), e["milestone"]) for e in events if e["kind"] == "milestone_reached"
    )
    for rid in ids:
        assert (reached[(rid, "normalized")], reached[(rid, "transcribed")]) == (1, 1), rid


def reached_at(url: str, host: str, port: int) -> str:
    """`url` over TCP at `host`:`port` (user, password and database kept)."""
    parts = urllib.parse.urlsplit(url)
    user = parts.netloc.rpartition("@")[0]
    return urllib.parse.urlunsplit(
        parts._replace(netloc=f"{user}@{host}:{port}" if user else f"{host}:{port}", query="")
    )


def database_target(url: str) -> int | str:
    """Where the test's PostgreSQL listens: a TCP port on loopback, or a Unix socket."""
    parts = urllib.parse.urlsplit(url)
    socket_dir = urllib.parse.parse_qs(parts.query).get("host", [None])[0]
    if socket_dir:
        [path] = [
            p for p in Path(socket_dir).glob(f".s.PGSQL.{parts.port or '*'}") if p.is_socket()
        ]
        return str(path)
    assert parts.port is not None
    return parts.port


@pytest.fixture
async def daemons(
    db_url: str, moto: MotoStore, tmp_path: Path
) -> AsyncIterator[tuple[list[Daemon], EchoRecognizer]]:
    bucket = moto.new_bucket()
    pg_target = database_target(db_url)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TRANSCRIBER_", "AWS_"))}
    with EchoRecognizer() as recognizer, contextlib.ExitStack() as hosts:
        async with trio.open_nursery() as nursery:
            started: list[Daemon] = []
            try:
                for name in ("a", "b"):
                    if namespaces_available():
                        host = hosts.enter_context(separate_host())
                        pg = await nursery.start(forward, host.gateway, pg_target)
                        s3 = await nursery.start(forward, host.gateway, moto.port)
                    else:
                        host, pg, s3 = LOOPBACK, None, moto.port
                    env = {
                        **base,
                        **moto.env(),
                        "AWS_ENDPOINT_URL": f"http://{host.gateway}:{s3}",
                        "TRANSCRIBER_DATABASE_URL": db_url
                        if pg is None
                        else reached_at(db_url, host.gateway, pg),
                        "TRANSCRIBER_STORAGE_URL": f"s3://{bucket}/transcriber",
                        "TRANSCRIBER_RECOGNIZER_URL": f"http://{host.gateway}:{recognizer.port}",
                    }
                    started.append(await start_daemon(name, host, tmp_path, env))
                yield started, recognizer
            finally:
                recognizer.gate.set()
                with trio.CancelScope(shield=True):
                    for d in started:
                        if d.proc.returncode is None:
                            d.proc.send_signal(signal.SIGTERM)
                    for d in started:
                        with trio.move_on_after(30):
                            await d.proc.wait()
                        if d.proc.returncode is None:
                            d.proc.kill()
                            await d.proc.wait()
                nursery.cancel_scope.cancel()


@scenario("Daemons on two hosts share one bucket")
@scenario("A daemon killed mid-step leaves its record to the other, read from the store")
@scenario("The object store stopped mid-run loses nothing")
async def test_daemons_on_two_hosts_share_one_bucket(
    db: Database, moto: MotoStore, daemons: tuple[list[Daemon], EchoRecognizer]
) -> None:
    (a, b), recognizer = daemons
    owner = await add_owner(db, "ann")

    # A burst through the first daemon's API is transcribed by both, each record once.
    burst = await upload(a, owner, 20)
    await settled(db, burst)
    events = await journal(db)
    reached_once(events, burst)
    rows = await db.run(
        lambda con: con.fetch("SELECT id, milestone, source_path, audio_path FROM recordings")
    )
    assert all(r["milestone"] == "transcribed" for r in rows)
    assert all(
        r["source_path"].startswith("s3://") and r["audio_path"].startswith("s3://") for r in rows
    )
    for step in ("normalize", "recognize"):
        assert a.claimed(step) and b.claimed(step), step  # both daemons worked
    for d in (a, b):  # nothing of the recordings on either host
        assert not (d.home / "uploads").exists() and not (d.home / "audio").exists()
        assert not any((d.home / "scratch").iterdir())

    # One daemon killed mid-step: the other finishes its record, reading from the store.
    recognizer.gate.clear()
    [held] = await upload(a, owner, 1)
    await until(lambda: recognizer.held == 1)
    [holder] = [d for d in (a, b) if held in d.claimed("recognize")]
    [survivor] = [d for d in (a, b) if d is not holder]
    holder.proc.send_signal(signal.SIGKILL)
    await holder.proc.wait()
    # Its lease would run out after two minutes; the test lets that time pass at once.
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET lease_expires_at = now() WHERE id = $1", held
        )
    )
    recognizer.gate.set()
    await settled(db, [held])
    assert held in survivor.claimed("recognize")
    reached_once(await journal(db), [held])

    # The store stopped mid-run, then started again: each record transcribed once.
    recognizer.gate.clear()
    busy = await upload(survivor, owner, 2)  # both of its workers wait in recognition
    await until(lambda: recognizer.held == 2)
    waiting = await upload(survivor, owner, 2)  # accepted, not started
    moto.stop()
    try:
        async with httpx.AsyncClient(
            base_url=survivor.url, timeout=30, headers={"Authorization": f"Bearer {owner.token}"}
        ) as c:
            refused = await c.post("/v1/recordings", files={"file": ("x.ogg", AUDIO)})
        assert refused.status_code == 503 and "store is unavailable" in refused.text
        recognizer.gate.set()  # the busy ones commit; the workers meet the store gone
        await until(lambda: survivor.log().count("StorageError") >= 2)
    finally:
        moto.start()
    await settled(db, busy + waiting)
    events = await journal(db)
    reached_once(events, busy + waiting)
    failed = [e for e in events if e["kind"] == "attempt_failed"]
    assert failed and all("object store" in e["detail"]["error"] for e in failed)
    total = await db.run(lambda con: con.fetchval("SELECT count(*) FROM recordings"))
    assert total == len(burst) + 1 + len(busy) + len(waiting)  # the refused one: no record
