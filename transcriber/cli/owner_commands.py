"""`transcriber owner …`: owners of recordings and their API tokens."""

from __future__ import annotations

import typer

from transcriber.cli.running import Refused, operator_name, with_database
from transcriber.db.database import Database
from transcriber.owners import (
    NewOwner,
    NoSuchOwner,
    OwnerExists,
    OwnerSummary,
    Rotated,
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
    """Stop NAME's token at once and end every share link they made, for good (journaled
    as human); their recordings and journal stay for the operator (`rotate` gives them
    a new token, not their links back)."""

    async def work(db: Database) -> int:
        try:
            return await revoke(db, name, by=operator_name())
        except NoSuchOwner:
            raise Refused(f"no owner {name!r}") from None

    links = with_database(work)
    typer.echo(f"owner {name} revoked: their token no longer works, {links} share links ended")


@owner_app.command("rotate")
def owner_rotate(name: str) -> None:
    """Give NAME a new token (printed once); the old one stops working at once. Their
    live share links stay (a new token, not a new person): if the old token was used by
    someone else, `revoke` first, or end their links with `transcriber share`."""

    async def work(db: Database) -> Rotated:
        try:
            return await rotate_token(db, name)
        except NoSuchOwner:
            raise Refused(f"no owner {name!r}") from None

    rotated = with_database(work)
    show_token(rotated.owner)
    typer.echo(
        f"{rotated.live_links} live share links of {name} stay; "
        f"`transcriber share list --owner {name}` lists them",
        err=True,
    )
