"""`transcriber owner …`: owners of recordings and their API tokens."""

from __future__ import annotations

import typer

from transcriber.cli.running import Refused, with_database
from transcriber.db.database import Database
from transcriber.owners import (
    NewOwner,
    NoSuchOwner,
    OwnerExists,
    OwnerSummary,
    add_owner,
    list_owners,
    revoke,
    rotate_token,
)

owner_app = typer.Typer(no_args_is_help=True, help="Owners of recordings and their API tokens.")


@owner_app.command("add")
def owner_add(name: str) -> None:
    """Create an owner and print their API token (shown once, only its hash is kept)."""

    async def work(db: Database) -> NewOwner:
        try:
            return await add_owner(db, name)
        except OwnerExists:
            raise Refused(f"owner {name!r} exists already") from None

    show_token(with_database(work))


def show_token(owner: NewOwner) -> None:
    typer.echo(owner.token)
    typer.echo(
        f"owner {owner.name} (id {owner.id}): keep this token, it is not shown again", err=True
    )


@owner_app.command("list")
def owner_list() -> None:
    """Owners: name, since when, revoked or not, their recordings and stored bytes."""
    owners: list[OwnerSummary] = with_database(list_owners)
    typer.echo(
        f"{'name':<20} {'created':<20} {'revoked':<20} {'recordings':>10} {'stored_bytes':>14}"
    )
    for o in owners:
        revoked = o.revoked_at.isoformat(timespec="seconds") if o.revoked_at else "-"
        typer.echo(
            f"{o.name:<20} {o.created_at.isoformat(timespec='seconds'):<20} "
            f"{revoked:<20} {o.recordings:>10} {o.stored_bytes:>14}"
        )


@owner_app.command("revoke")
def owner_revoke(name: str) -> None:
    """Stop NAME's token at once; their recordings and journal stay for the operator
    (`rotate` gives them a new token)."""

    async def work(db: Database) -> None:
        try:
            await revoke(db, name)
        except NoSuchOwner:
            raise Refused(f"no owner {name!r}") from None

    with_database(work)
    typer.echo(f"owner {name} revoked: their token no longer works")


@owner_app.command("rotate")
def owner_rotate(name: str) -> None:
    """Give NAME a new token (printed once); the old one stops working at once."""

    async def work(db: Database) -> NewOwner:
        try:
            return await rotate_token(db, name)
        except NoSuchOwner:
            raise Refused(f"no owner {name!r}") from None

    show_token(with_database(work))
