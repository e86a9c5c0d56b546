"""`transcriber share …`: every owner's read-only links as the operator sees them (ids,
owner, times, openings, state; never a note) and ending them at once, journaled as
human with who ran the command. The owner's own links are on their record page and the
API; `owner revoke` ends all of an owner's links at once."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated

import typer

from transcriber.cli.running import Refused, fail, operator_name, with_database
from transcriber.db.database import Database
from transcriber.owners import owner_named
from transcriber.pipeline import operator_shares
from transcriber.pipeline.operator_shares import OwnerLink, Revoked

share_app = typer.Typer(
    no_args_is_help=True,
    help="Owners' read-only share links: list them and revoke any (no note or text shown).",
)


def when(t: dt.datetime | None) -> str:
    return "-" if t is None else t.isoformat(timespec="seconds")


@share_app.command("list")
def share_list(
    owner: Annotated[str | None, typer.Option(help="only this owner's links")] = None,
) -> None:
    """Links, newest first (at most 1000): id, record, owner, created, expires, opened,
    last opened, state (live, expired, revoked, owner_revoked)."""

    async def work(db: Database) -> list[OwnerLink]:
        if owner is not None and await owner_named(db, owner) is None:
            raise Refused(f"no owner {owner!r}")
        return await operator_shares.links(db, owner)

    found = with_database(work)
    typer.echo(
        f"{'id':<36}  {'record':<36}  {'owner':<16} {'created':<25} {'expires':<25} "
        f"{'opened':>6} {'last_opened':<25} state"
    )
    for s in found:
        typer.echo(
            f"{s.id}  {s.recording_id}  {s.owner:<16} {when(s.created_at):<25} "
            f"{when(s.expires_at):<25} {s.opened:>6} {when(s.last_opened_at):<25} {s.state}"
        )
    if len(found) >= operator_shares.LIST_MAX:
        typer.echo(f"(the newest {operator_shares.LIST_MAX} only)", err=True)


def share_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        fail(f"{text!r} is not a share link's id (a UUID; `transcriber share list`)", 1)


@share_app.command("revoke")
def share_revoke(
    shares: Annotated[list[str], typer.Argument(metavar="SHARE_ID...")],
) -> None:
    """End these links at once, whoever's they are (journaled on each record as
    share_revoked, origin human). Revoking one again changes nothing. Exit 1 if any id
    is no link; the others are revoked."""
    ids = [share_id(s) for s in shares]

    async def work(db: Database) -> Revoked:
        return await operator_shares.revoke(db, ids, by=operator_name())

    done = with_database(work)
    for i in done.ended:
        typer.echo(f"revoked {i}")
    for i in done.already:
        typer.echo(f"{i} was revoked already")
    for i in done.unknown:
        typer.echo(f"transcriber: no share link {i}", err=True)
    if done.unknown:
        raise typer.Exit(1)
