"""The daemon: READY once working, STOPPING and a graceful drain on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path

import pytest
import trio

from actors.sdnotify import Notifier
from tests.helpers.notify_socket import received
from tests.helpers.pg_pipeline import Gate, accept, journal, state, table
from transcriber.config import Config
from transcriber.daemon import ServeOptions, serve
from transcriber.db.database import Database
from transcriber.pipeline.runner import Pipeline


@pytest.mark.scenario("operations", "SIGTERM mid-step hands the record back")
async def test_sigterm_mid_step_releases_the_record(
    db: Database, db_url: str, owner_id: int, tmp_path: Path, systemd: tuple[socket.socket, str]
) -> None:
    sock, path = systemd
    never = Gate()  # a step that would run past any grace
    config = Config(database_url=db_url, home=tmp_path)
    options = ServeOptions(http=None, workers=1, grace_s=0.2)
    rid = await accept(db, owner_id)
    async with trio.open_nursery() as nursery:
        await nursery.start(
            lambda task_status: serve(
                config,
                options,
                steps_for=lambda c, **_: table(normalize=never),
                notifier=Notifier({"NOTIFY_SOCKET": path}),
                task_status=task_status,
            )
        )
        assert received(sock)[0]["READY"] == "1"
        await never.entered.wait()
        os.kill(os.getpid(), signal.SIGTERM)
    # serve returned: the step was cut after the grace and its claim handed back.
    assert not never.ran_to_end
    after = await state(db, rid)
    assert (after["milestone"], after["claim_token"], after["attempts"]) == ("received", None, 0)
    assert [e["kind"] for e in await journal(db, rid)] == ["accepted", "released"]
    assert {"STOPPING": "1"} in received(sock)
    # A second daemon takes it at once, not after the 300 s lease of normalize.
    second = Pipeline(db, table(), workers=1, poll_s=3600)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(second.run)
            while (await state(db, rid))["milestone"] != "transcribed":
                await trio.sleep(0.05)
            assert await second.drain(10)
    kinds = [e["kind"] for e in await journal(db, rid)]
    assert kinds == ["accepted", "released", "milestone_reached", "milestone_reached"]


@pytest.mark.scenario("operations", "Ready only once working")
async def test_serve_process_notifies_and_exits_0_on_sigterm(
    db_url: str, tmp_path: Path, systemd: tuple[socket.socket, str]
) -> None:
    sock, path = systemd
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env.update(TRANSCRIBER_DATABASE_URL=db_url, TRANSCRIBER_HOME=str(tmp_path), NOTIFY_SOCKET=path)
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "transcriber", "serve", "--no-api", "--workers", "1"], env=env
    )
    seen: list[dict[str, str]] = []
    try:
        with trio.fail_after(60):
            while not any(m.get("READY") == "1" for m in seen):
                await trio.sleep(0.05)
                seen += received(sock)
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(60):
            code = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert code == 0
    assert {"STOPPING": "1"} in received(sock)
