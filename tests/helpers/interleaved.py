"""A race forced at an exact point: the database, where something else commits just
before a named statement runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from transcriber.db.database import Database


class Interleaved:
    """The database, where something else commits just before the `n`th run of a named
    statement (`before[(name, n)]`, counted from 1): a race forced at that exact point."""

    def __init__(self, db: Database, before: dict[tuple[str, int], Callable[[], Awaitable[Any]]]):
        self._db = db
        self._before = before
        self._runs: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    async def _at(self, name: str) -> None:
        self._runs[name] += 1
        if (then := self._before.pop((name, self._runs[name]), None)) is not None:
            await then()

    async def fetchrow(self, name: str, *args: Any) -> Any:
        await self._at(name)
        return await self._db.fetchrow(name, *args)

    async def fetchval(self, name: str, *args: Any) -> Any:
        await self._at(name)
        return await self._db.fetchval(name, *args)
