"""`transcriber watch …`: folders the daemons watch for an owner. Each new audio or video
file there becomes the owner's record once it stops growing, and its transcript is
written beside it (`STEM.srt`, `STEM.txt` …) when done (docs/watch.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from transcriber.cli.running import Refused, fail, with_database
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.storage.blobs import StorageError
from transcriber.storage.configured import blobs_of
from transcriber.watch.outputs import DEFAULT_FORMATS, FORMATS, BadFormats, parse_formats
from transcriber.watch.s3 import BadPrefix
from transcriber.watch.watches import (
    Added,
    NoSuchOwner,
    WatchRow,
    add_watch,
    list_watches,
    remove_watch,
)

watch_app = typer.Typer(
    no_args_is_help=True,
    help="Folders watched for an owner: new recordings there are transcribed beside them.",
)


@watch_app.command("add")
def watch_add(
    owner: str,
    folder: Annotated[str, typer.Argument(metavar="DIR")],
    formats: Annotated[
        str, typer.Option(help=f"what to write beside each file, of {','.join(FORMATS)}")
    ] = ",".join(DEFAULT_FORMATS),
) -> None:
    """Watch DIR (a local or mounted folder, as the daemons see it, or an S3 prefix
    s3://BUCKET/PREFIX/ read with the service's object store's credentials) for OWNER:
    each new audio or video file there that stops changing becomes OWNER's record, and
    its transcript is written beside it in FORMATS. DIR again: its formats change."""
    try:
        chosen = parse_formats(formats)
    except BadFormats as e:
        fail(str(e), 1)

    async def work(db: Database) -> Added:
        try:
            blobs = blobs_of(Config.from_env()) if folder.startswith("s3://") else None
            return await add_watch(db, owner, folder, chosen, blobs)
        except NoSuchOwner:
            raise Refused(f"no owner {owner!r}") from None
        except (BadPrefix, StorageError) as e:
            raise Refused(str(e)) from None

    added = with_database(work)
    verb = "watching" if added.created else "formats changed:"
    typer.echo(f"{verb} {added.folder} for {owner} (watch {added.id}: {','.join(chosen)})")
    if added.readable_here is not None:
        typer.echo(
            f"transcriber: warning: this command cannot list {added.folder} "
            f"({added.readable_here}); the daemons will say in `watch list` if they cannot",
            err=True,
        )


@watch_app.command("list")
def watch_list() -> None:
    """Watches: id, owner, formats, files taken, waiting for their transcript, stopped
    (their note written beside them, waiting for an operator's resume), the last scan,
    and the folder's state (ok, unreadable and why, paused, not scanned yet)."""
    rows: list[WatchRow] = with_database(list_watches)
    typer.echo(
        f"{'id':>5} {'owner':<16} {'formats':<16} {'taken':>6} {'waiting':>7} "
        f"{'stopped':>7} {'scanned':<25} folder  state"
    )
    for w in rows:
        scanned = w.scanned_at.isoformat(timespec="seconds") if w.scanned_at else "-"
        typer.echo(
            f"{w.id:>5} {w.owner:<16} {','.join(w.formats):<16} {w.taken:>6} "
            f"{w.waiting:>7} {w.stopped:>7} {scanned:<25} {w.folder}  {w.state}"
        )


@watch_app.command("remove")
def watch_remove(watch_id: Annotated[int, typer.Argument(metavar="WATCH_ID")]) -> None:
    """Stop watching (the id from `watch list`). The files it took stay taken, their
    records stay the owner's; transcripts not yet written are not written."""

    async def work(db: Database) -> bool:
        return await remove_watch(db, watch_id)

    if not with_database(work):
        fail(f"no watch {watch_id}", 1)
    typer.echo(f"watch {watch_id} removed")
