"""`transcriber operator …`: the operators of the service's screen (/ops) and their
tokens, as `owner …` does for owners; `transcriber daemons`: the daemons that run."""

from __future__ import annotations

import typer

from transcriber.cli.running import Refused, with_database
from transcriber.db.database import Database
from transcriber.operators import (
    NewOperator,
    NoSuchOperator,
    OperatorExists,
    OperatorSummary,
    add_operator,
    list_operators,
    revoke,
    rotate_token,
)

operator_app = typer.Typer(
    no_args_is_help=True,
    help="Operators of the screen at /ops and their tokens (operators are not owners).",
)


def show_token(operator: NewOperator) -> None:
    typer.echo(operator.token)
    typer.echo(
        f"operator {operator.name} (id {operator.id}): sign in at /ops with this token; "
        "it is not shown again",
        err=True,
    )


@operator_app.command("add")
def operator_add(name: str) -> None:
    """Create an operator and print their token (shown once, only its hash is kept)."""

    async def work(db: Database) -> NewOperator:
        try:
            return await add_operator(db, name)
        except OperatorExists:
            raise Refused(f"operator {name!r} exists already") from None

    show_token(with_database(work))


@operator_app.command("list")
def operator_list() -> None:
    """Operators: name, since when, revoked or not."""
    operators: list[OperatorSummary] = with_database(list_operators)
    typer.echo(f"{'name':<20} {'created':<20} {'revoked':<20}")
    for o in operators:
        revoked = o.revoked_at.isoformat(timespec="seconds") if o.revoked_at else "-"
        typer.echo(f"{o.name:<20} {o.created_at.isoformat(timespec='seconds'):<20} {revoked:<20}")


@operator_app.command("revoke")
def operator_revoke(name: str) -> None:
    """Stop NAME's token and every session signed in with it, at once."""

    async def work(db: Database) -> None:
        try:
            await revoke(db, name)
        except NoSuchOperator:
            raise Refused(f"no operator {name!r}") from None

    with_database(work)
    typer.echo(f"operator {name} revoked: their token and sessions no longer work")


@operator_app.command("rotate")
def operator_rotate(name: str) -> None:
    """Give NAME a new token (printed once); the old one and its sessions stop at once."""

    async def work(db: Database) -> NewOperator:
        try:
            return await rotate_token(db, name)
        except NoSuchOperator:
            raise Refused(f"no operator {name!r}") from None

    show_token(with_database(work))


def daemons() -> None:
    """The daemons of the last day: host, pid, state (running, silent: stopped beating,
    stopped), workers, model on device, and each worker's claim (record, step from,
    attempt, since, lease left)."""
    from transcriber.cli.operator_commands import ago
    from transcriber.pipeline import ops_screen

    listed: list[ops_screen.DaemonView] = with_database(ops_screen.daemons)
    if not listed:
        typer.echo("no daemon has registered in the last day")
    for d in listed:
        typer.echo(
            f"{d.id}  {d.host} pid {d.pid}  {d.state:<8} workers={d.workers} "
            f"{d.model or '-'} on {d.device or '-'}  version {d.version}  "
            f"started {d.started_at.isoformat(timespec='seconds')}  "
            f"last beat {ago(d.silent_s)} ago"
        )
        for c in d.claims:
            since = c.since.isoformat(timespec="seconds") if c.since else "-"
            typer.echo(
                f"    {c.worker:<10} {c.id}  {c.milestone:<11} attempt {c.attempt}  "
                f"since {since}  lease left {ago(c.lease_left_s)}"
            )
