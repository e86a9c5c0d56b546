"""The operator's command line, run as a real process against a real database."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import uuid
from typing import Any

import pytest
import trio

from tests.helpers.cli_process import cli
from tests.helpers.pg_pipeline import accept, journal, state, table
from transcriber.db.database import Database
from transcriber.pipeline import operator
from transcriber.pipeline.pg_queue import PgQueue


async def stopped_record(db: Database, owner_id: int) -> Any:
    rid = await accept(db, owner_id)
    queue = PgQueue(db, table())
    job = await queue.read(await queue.claim())
    assert await queue.stop(job, "attempts_exhausted", "RuntimeError: boom\nsecond line")
    return rid


@pytest.mark.scenario("operations", "Stopped records show their reason and first error line")
async def test_resume_a_stopped_record(db: Database, db_url: str, owner_id: int) -> None:
    rid = await stopped_record(db, owner_id)
    listed = await cli(db_url, "stopped")
    assert listed.returncode == 0
    assert str(rid) in listed.stdout and "attempts_exhausted" in listed.stdout
    assert "RuntimeError: boom" in listed.stdout and "second line" not in listed.stdout

    done = await cli(db_url, "resume", str(rid))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"resumed {rid} at received"
    assert (await state(db, rid))["stopped_at"] is None
    last = (await journal(db, rid))[-1]
    assert (last["origin"], last["kind"]) == ("human", "resumed")


HELD = (
    "stopped_at, stop_reason, stop_error, claim_token, lease_expires_at, attempts, "
    "retry_at, milestone_entered_at, progress"
)


async def held(db: Database, rid: Any) -> dict[str, Any]:
    """What a run holds a record by: the columns resume resets."""
    row = await db.run(
        lambda con: con.fetchrow(f"SELECT {HELD} FROM recordings WHERE id = $1", rid)
    )
    return dict(row)


async def test_the_operator_resumes_without_a_queue(db: Database, owner_id: int) -> None:
    # The operator's action takes the database alone: no worker's queue, no step table.
    rid = await stopped_record(db, owner_id)
    # Everything a run can leave on a stopped record at once.
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET attempts = 3, retry_at = now() + interval '1 hour', "
            "progress = 0.5, lease_expires_at = now() + interval '1 hour' WHERE id = $1",
            rid,
        )
    )
    assert (await held(db, rid))["claim_token"] is not None
    at = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    done = await operator.resume(db, rid, by="ann", now=at)
    assert (done.id, done.milestone) == (rid, "received")
    assert await held(db, rid) == {
        "stopped_at": None,
        "stop_reason": None,
        "stop_error": None,
        "claim_token": None,
        "lease_expires_at": None,
        "attempts": 0,
        "retry_at": None,
        "milestone_entered_at": at,
        "progress": None,
    }
    last = (await journal(db, rid))[-1]
    assert (last["origin"], last["kind"], last["detail"]["by"]) == ("human", "resumed", "ann")
    # Again: not stopped any more, refused, nothing changed.
    before = (await held(db, rid), await journal(db, rid))
    with pytest.raises(operator.NotStopped, match="is not stopped \\(at received\\)"):
        await operator.resume(db, rid, by="ann")
    with pytest.raises(operator.NotStopped, match="no recording"):
        await operator.resume(db, uuid.UUID(int=7), by="ann")
    assert (await held(db, rid), await journal(db, rid)) == before


@pytest.mark.scenario("operations", "A refused resume changes nothing")
async def test_resume_refusals_change_nothing(db: Database, db_url: str, owner_id: int) -> None:
    running = await accept(db, owner_id)
    before = await journal(db)
    for arg, expected in [
        (str(uuid.UUID(int=7)), f"no recording {uuid.UUID(int=7)}"),
        (str(running), f"recording {running} is not stopped (at received)"),
        ("not-an-id", "'not-an-id' is not a recording id"),
    ]:
        result = await cli(db_url, "resume", arg)
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], result.stderr
    assert await journal(db) == before


@pytest.mark.scenario("operations", "An unreachable database is one clear line")
async def test_unreachable_database_exits_2_with_one_line() -> None:
    result = await cli("postgresql://ann:s3cret@127.0.0.1:1/transcriber", "status")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback
    assert "postgresql://ann:***@127.0.0.1:1/transcriber" in lines[0]
    assert "s3cret" not in result.stderr


@pytest.mark.scenario("operations", "Status counts each milestone")
async def test_owner_status_and_journal(db: Database, db_url: str, owner_id: int) -> None:
    added = await cli(db_url, "owner", "add", "bob")
    assert added.returncode == 0
    token = added.stdout.strip()
    assert token.startswith("tr_") and len(token) > 40
    again = await cli(db_url, "owner", "add", "bob")
    assert again.returncode == 1 and "exists already" in again.stderr

    rid = await stopped_record(db, owner_id)
    await accept(db, owner_id, "b.wav")
    # A finished record: never waiting, and not read (the history may be millions long).
    await db.run(
        lambda con: con.execute(
            "INSERT INTO recordings (owner_id, filename, milestone) "
            "VALUES ($1, 'done.wav', 'transcribed')",
            owner_id,
        )
    )
    status = await cli(db_url, "status")
    assert status.returncode == 0
    lines = {line.split()[0]: line.split()[1:5] for line in status.stdout.splitlines()[1:]}
    assert lines["received"] == ["1", "0", "0", "1"]  # waiting, in flight, pausing, stopped
    # Every milestone has its line, in the pipeline's order, those without records zeros.
    assert list(lines) == ["received", "normalized", "recognized", "transcribed"]
    assert lines["normalized"] == lines["recognized"] == lines["transcribed"] == ["0"] * 4

    shown = await cli(db_url, "journal", str(rid))
    assert shown.returncode == 0
    assert [line.split()[4] for line in shown.stdout.splitlines()] == ["accepted", "stopped"]


@pytest.mark.scenario("operations", "Resume several at once")
@pytest.mark.scenario("operations", "Resume by reason")
async def test_resume_several_and_by_reason(db: Database, db_url: str, owner_id: int) -> None:
    first, second = await stopped_record(db, owner_id), await stopped_record(db, owner_id)
    unknown = uuid.UUID(int=9)
    some = await cli(db_url, "resume", str(first), str(unknown))
    assert some.returncode == 1  # one could not be resumed ...
    assert some.stdout.strip() == f"resumed {first} at received"  # ... the other was
    assert f"no recording {unknown}" in some.stderr

    # Stop the first again, with another reason: --reason picks only its own.
    queue = PgQueue(db, table())
    job = await queue.read(await queue.claim())
    assert job.claim.id == first
    assert await queue.stop(job, "other_reason", "x")
    by_reason = await cli(db_url, "resume", "--reason", "attempts_exhausted")
    assert by_reason.returncode == 0, by_reason.stderr
    lines = by_reason.stdout.strip().splitlines()
    assert lines == [
        "1 records stopped with reason attempts_exhausted",
        f"resumed {second} at received",
    ]
    assert (await state(db, first))["stop_reason"] == "other_reason"


@pytest.mark.scenario("operations", "The journal since a time")
async def test_journal_since_and_json(db: Database, db_url: str, owner_id: int) -> None:
    old, new = await accept(db, owner_id, "old.wav"), await accept(db, owner_id, "new.wav")
    await db.run(
        lambda con: con.execute(
            "UPDATE journal SET at = now() - interval '2 hours' WHERE recording_id = $1", old
        )
    )
    recent = await cli(db_url, "journal", "--since", "1h", "--json")
    assert recent.returncode == 0, recent.stderr
    import json

    events = [json.loads(line) for line in recent.stdout.splitlines()]
    assert [(e["recording_id"], e["kind"]) for e in events] == [(str(new), "accepted")]
    bad = await cli(db_url, "journal", "--since", "soon")
    assert bad.returncode == 1 and "not a duration" in bad.stderr


@pytest.mark.scenario("operations", "The journal follows live")
async def test_journal_follow_shows_another_process_event(
    db: Database, db_url: str, owner_id: int
) -> None:
    first = await accept(db, owner_id, "first.wav")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    env["TRANSCRIBER_DATABASE_URL"] = db_url
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "transcriber", "journal", "--follow"],
        env=env,
        stdout=subprocess.PIPE,
    )
    try:
        lines = LineReader(proc.stdout)
        with trio.fail_after(30):
            assert str(first) in await lines.next()  # the history first ...
        second = await accept(db, owner_id, "second.wav")  # ... then, written elsewhere,
        with trio.fail_after(30):
            assert str(second) in await lines.next()  # the new event, live
    finally:
        proc.terminate()
        await proc.wait()


class LineReader:
    def __init__(self, stream: Any):
        self.stream = stream
        self.buffer = b""

    async def next(self) -> str:
        while b"\n" not in self.buffer:
            chunk = await self.stream.receive_some(4096)
            if not chunk:
                raise EOFError("the process closed its output")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()


async def test_submit_accepts_files_for_the_daemon(
    db: Database, db_url: str, tmp_path: Any
) -> None:
    audio = tmp_path / "talk.wav"
    audio.write_bytes(b"RIFF not really audio")
    env_home = str(tmp_path / "home")
    result = await cli(db_url, "submit", str(audio), "--title", "Standup", home=env_home)
    assert result.returncode == 0, result.stderr
    rid, name = result.stdout.split()
    assert name == "talk.wav"
    row = await state(db, uuid.UUID(rid))
    assert (row["milestone"], row["title"]) == ("received", "Standup")
    unknown = await cli(db_url, "submit", str(audio), "--owner", "nobody", home=env_home)
    assert unknown.returncode == 1 and "no owner 'nobody'" in unknown.stderr
