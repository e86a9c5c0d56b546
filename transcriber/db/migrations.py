"""Apply the migrations of sql/: tracked, idempotent, one process at a time."""

from __future__ import annotations

import asyncpg

from transcriber.db.database import Database
from transcriber.db.named_sql import load_migrations


async def migrate(db: Database) -> list[str]:
    """Apply what is missing, in one transaction under an advisory lock, so two
    processes starting at once apply each migration once. Returns what was applied.

    Cancellation: the transaction rolls back; nothing is half applied.
    """
    migrations = load_migrations()

    async def apply(con: asyncpg.Connection) -> list[str]:
        async with con.transaction():
            await con.execute(db.sql("migrations_lock"))
            await con.execute(db.sql("migrations_table"))
            applied = {r["version"] for r in await con.fetch(db.sql("migrations_applied"))}
            done = []
            for m in migrations:
                if m.version in applied:
                    continue
                await con.execute(m.sql)
                await con.execute(db.sql("migration_record"), m.version, m.name)
                done.append(f"{m.version:04d}_{m.name}")
            return done

    return await db.run(apply)
