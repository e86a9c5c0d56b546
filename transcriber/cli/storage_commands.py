"""`transcriber storage …`: where the recordings' bytes live."""

from __future__ import annotations

import typer

from transcriber.cli.running import fail, with_database
from transcriber.config import Config
from transcriber.db.database import Database

storage_app = typer.Typer(no_args_is_help=True, help="Where the recordings' bytes live.")


@storage_app.command("migrate")
def storage_migrate() -> None:
    """Copy this home's uploads and audio into the object store of
    TRANSCRIBER_STORAGE_URL, verify each by sha256, then switch its record over.
    Resumable: run it again after an interruption."""
    from transcriber.storage.configured import blobs_of
    from transcriber.storage.s3 import S3Blobs
    from transcriber.storage.to_object_store import migrate_to_store

    config = Config.from_env()
    if not config.storage_url:
        fail("set TRANSCRIBER_STORAGE_URL=s3://BUCKET/PREFIX (and AWS_*) to migrate into", 1)

    async def work(db: Database) -> int:
        store = blobs_of(config)
        assert isinstance(store, S3Blobs)
        done = await migrate_to_store(db, store)
        typer.echo(
            f"switched {done.switched} refs to {config.storage_url} "
            f"({done.copied} files copied, the rest already there and verified)"
        )
        for error in done.errors:
            typer.echo(f"not migrated: {error}", err=True)
        return len(done.errors)

    if with_database(work):
        raise typer.Exit(1)
