"""The operator's commands on the pipeline's records: migrate, status, stopped, resume,
journal. Each calls transcriber.pipeline.operator."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from actors.log import value as logfmt_value
from transcriber.cli.running import fail, operator_name, record_id, with_database
from transcriber.db.database import Database
from transcriber.db.migrations import migrate as apply_migrations
from transcriber.pipeline import operator


def parse_duration(text: str) -> dt.timedelta:
    """`90s`, `15m`, `2h`, `3d` (a bare number is seconds)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "s")
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 2h or 3d") from None
    if value < 0:
        raise ValueError(f"{text!r} is negative")
    return dt.timedelta(seconds=value * units[unit])


def ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def migrate() -> None:
    """Apply the database migrations that are missing."""

    async def work(db: Database) -> list[str]:
        return await apply_migrations(db)  # open_session migrated already; says so

    with_database(work)
    typer.echo("database is up to date")


def status() -> None:
    """Per milestone: waiting, in flight, pausing before a retry, stopped; oldest waiting."""
    milestones = with_database(operator.status)
    typer.echo(
        f"{'milestone':<12} {'waiting':>8} {'in_flight':>9} {'pausing':>8} "
        f"{'stopped':>8} {'oldest_waiting':>15}"
    )
    for m in milestones:
        typer.echo(
            f"{m.milestone:<12} {m.waiting:>8} {m.in_flight:>9} "
            f"{m.pausing:>8} {m.stopped:>8} {ago(m.oldest_waiting_s):>15}"
        )


def stopped(
    reason: Annotated[str | None, typer.Option(help="only this stop reason")] = None,
) -> None:
    """Stopped records: id, milestone, reason, since, first line of the error."""

    async def work(db: Database) -> list[operator.StoppedRecord]:
        return await operator.stopped(db, reason)

    for r in with_database(work):
        error = (r.error or "").strip().splitlines()
        typer.echo(
            f"{r.id}  {r.milestone:<11} {r.reason:<22} "
            f"{r.at.isoformat(timespec='seconds')}  {error[0] if error else ''}"
        )


def resume(
    recordings: Annotated[list[str] | None, typer.Argument(metavar="ID...")] = None,
    reason: Annotated[
        str | None, typer.Option(help="also every record stopped with this reason")
    ] = None,
) -> None:
    """Return stopped records to work from the milestone each reached (journaled as
    human). Exit 1 if any could not be resumed; the others are."""
    if not recordings and reason is None:
        fail("name the records to resume (IDs) or a stop reason (--reason)", 1)
    ids = [record_id(r) for r in recordings or []]

    async def work(db: Database) -> int:
        targets = list(ids)
        if reason is not None:
            found = await operator.stopped(db, reason)
            typer.echo(f"{len(found)} records stopped with reason {reason}")
            targets += [r.id for r in found if r.id not in ids]
        refused = 0
        for rid in targets:
            try:
                done = await operator.resume(db, rid, by=operator_name())
            except operator.NotStopped as e:
                refused += 1
                typer.echo(f"transcriber: {e}", err=True)
                continue
            typer.echo(f"resumed {done.id} at {done.milestone}")
        return refused

    if with_database(work):
        raise typer.Exit(1)


def format_event(e: operator.JournalEvent, as_json: bool) -> str:
    if as_json:
        return json.dumps(
            {
                "id": e.id,
                "recording_id": str(e.recording_id),
                "at": e.at.isoformat(),
                "origin": e.origin,
                "kind": e.kind,
                "milestone": e.milestone,
                "claim_token": str(e.claim_token) if e.claim_token else None,
                "detail": e.detail,
            }
        )
    at = e.at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    detail = " ".join(f"{k}={logfmt_value(v)}" for k, v in (e.detail or {}).items())
    token = f" token={str(e.claim_token)[:8]}" if e.claim_token else ""
    return (
        f"{at} {e.recording_id} {e.origin:<8} {e.kind:<17} {e.milestone or '-':<11}{token} {detail}"
    ).rstrip()


def journal(
    recording: Annotated[str | None, typer.Argument(metavar="[ID]")] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="keep printing new events")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object a line")] = False,
    since: Annotated[
        str | None, typer.Option(help="only events of the last DURATION: 90s, 15m, 2h, 3d")
    ] = None,
) -> None:
    """The record journal of one record, or of all; live with --follow."""
    rid = None if recording is None else record_id(recording)
    window = None
    if since is not None:
        try:
            window = parse_duration(since)
        except ValueError as e:
            fail(str(e), 1)

    def show(events: Sequence[operator.JournalEvent]) -> None:
        for e in events:
            typer.echo(format_event(e, as_json))
        sys.stdout.flush()

    async def work(db: Database) -> None:
        await operator.read_journal(db, rid, show, since=window, follow=follow)

    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends a followed journal
        with_database(work)
