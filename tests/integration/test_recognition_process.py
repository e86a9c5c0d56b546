"""Recognition in its child process, on the bundled model and real audio (capability
`audio`): a cancelled recognition stops its CPU work, the database answers while it
runs, a cancel that waits for a thread returns; and the one-shot `transcribe` command.
tests/integration/test_audio.py has normalizing and recognition end to end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import generated_audio
from tests.helpers.cli_process import cli
from tests.helpers.generated_audio import ROOT, SAMPLES
from transcriber.audio.processes import ProcessRecognizer
from transcriber.audio.threads import Control, Stopped, run_in_thread
from transcriber.db.database import Database


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("audio", title)


# --- Recognition in its process ---------------------------------------------------------------


@scenario("A cancelled recognition stops its CPU work")
async def test_cancelled_recognition_stops_its_cpu_work(
    warm_recognizer: ProcessRecognizer, long_speech: tuple[Path, float]
) -> None:
    path, duration = long_speech
    if not warm_recognizer.idle_pids():
        warm_recognizer.warm(1)
    [child] = warm_recognizer.idle_pids()  # the one that will recognize
    ran_in: list[threading.Thread] = []
    observed_stop: list[bool] = []
    returned: list[bool] = []
    reports: list[float] = []
    cancelled_at = 0.0

    def work(control: Control) -> Any:
        ran_in.append(threading.current_thread())
        try:
            return warm_recognizer.transcribe(path, duration, "en", control)
        except Stopped:
            observed_stop.append(True)
            raise
        finally:
            returned.append(True)

    with trio.CancelScope() as scope:

        async def progress(fraction: float) -> None:
            nonlocal cancelled_at
            reports.append(fraction)
            cancelled_at = time.monotonic()
            scope.cancel()

        with trio.fail_after(120):
            await run_in_thread(work, progress, report_every_s=0.05)
    # Read before any other checkpoint: the work had ended when run_in_thread returned.
    assert returned == [True]
    stopped_within = time.monotonic() - cancelled_at

    assert scope.cancelled_caught
    assert len(reports) == 1 and 0 < reports[0] < 0.5  # cancelled after the first batch
    assert observed_stop == [True]  # the work saw the stop and ended itself
    # The child recognizing was killed and reaped: not a cycle more is spent on it.
    assert stopped_within < 10, stopped_within
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    thread = ran_in[0]
    assert thread is not threading.main_thread()
    # Nothing of it computes here either. (trio parks its finished worker threads for
    # reuse, so the thread object may still be alive, idle: measure CPU, not liveness.)
    cpu = time.process_time()
    await trio.sleep(0.5)
    assert time.process_time() - cpu < 0.1


@scenario("Other work goes on while a recording is recognized")
async def test_database_answers_while_recognition_runs(
    db: Database, warm_recognizer: ProcessRecognizer, long_speech: tuple[Path, float]
) -> None:
    path, duration = long_speech
    running = trio.Event()
    finished = False
    latencies: list[float] = []

    async def recognize() -> None:
        nonlocal finished

        async def progress(fraction: float) -> None:
            running.set()

        await run_in_thread(
            lambda control: warm_recognizer.transcribe(path, duration, "en", control),
            progress,
            report_every_s=0.05,
        )
        finished = True

    async with trio.open_nursery() as nursery:
        nursery.start_soon(recognize)
        with trio.fail_after(60):
            await running.wait()  # recognition is under way, with most of the audio to go
        for _ in range(20):
            start = time.monotonic()
            await db.fetch("status")
            latencies.append(time.monotonic() - start)
        assert not finished  # all 20 were answered while recognition was in progress
        nursery.cancel_scope.cancel()
    assert len(latencies) == 20
    assert max(latencies) < 1.0, latencies


WAITING_FOR_A_THREAD = """
import os, threading, trio, trio.testing
from transcriber.audio.threads import run_in_thread

async def main():
    trio.to_thread.current_default_thread_limiter().total_tokens = 1
    release = threading.Event()
    returned = trio.Event()

    async def step():
        with trio.move_on_after(0.2):  # cancelled while waiting for a thread token
            await run_in_thread(lambda control: None)
        returned.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, release.wait)  # holds the one token
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(step)
        with trio.move_on_after(2.0):
            await returned.wait()
        print("returned" if returned.is_set() else "hung", flush=True)
        release.set()
        os._exit(0)  # a hung step cannot be cancelled: its wait is shielded

trio.run(main)
"""


async def test_cancel_while_waiting_for_a_thread_returns() -> None:
    # In a child process, which reports and exits: the hang is shielded, so it could
    # never be ended inside this one.
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, "-c", WAITING_FOR_A_THREAD],
            cwd=ROOT,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == "returned"


# --- The one-shot command -------------------------------------------------------------------


async def transcriber_cli(
    db_url: str, home: Path, *args: str, model: Path | None = None
) -> subprocess.CompletedProcess[str]:
    with trio.fail_after(180):
        return await cli(
            db_url,
            *args,
            home=str(home),
            model=None if model is None else str(model),
            cwd=str(ROOT),
        )


@scenario("The one-shot command prints the transcript")
async def test_transcribe_command_prints_vtt(db_url: str, tmp_path: Path, model_dir: Path) -> None:
    result = await transcriber_cli(
        db_url, tmp_path, "transcribe", str(SAMPLES / "en.ogg"), "--format", "vtt", model=model_dir
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("WEBVTT\n\n")
    cues = re.findall(
        r"^(\d\d:\d\d:\d\d\.\d{3}) --> (\d\d:\d\d:\d\d\.\d{3})$", result.stdout, re.MULTILINE
    )
    assert cues and cues[0][0] == "00:00:00.000"
    assert "March" in result.stdout
    assert "done" in result.stderr  # the progress bar's last state


@scenario("The one-shot command exits 1 with the stop reason")
async def test_transcribe_command_on_bad_input(db_url: str, tmp_path: Path) -> None:
    noise = generated_audio.random_as_mp3(tmp_path)
    result = await transcriber_cli(db_url, tmp_path / "home", "transcribe", str(noise))
    assert result.returncode == 1
    assert result.stdout == ""
    last = result.stderr.strip().splitlines()[-1]
    assert "undecodable_audio" in last and "noise.mp3" in last, result.stderr
