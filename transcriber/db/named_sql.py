"""The `sql/` folder: migrations (NNNN_name.sql) and named queries, one file per area
(<area>.sql, each query a `-- name: x` block).

The folder sits at the top of the repository and is read as the resources of the package
`transcriber.sql` (transcriber/sql links to it; the wheel carries a copy), so a checkout,
an editable install and an installed wheel read it the same way: one lookup, no fallback.

The service loads every area but the bench-only ones (BENCH_AREAS); the benchmarks ask
for those in addition.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib.resources import files
from importlib.resources.abc import Traversable

import attrs

BENCH_AREAS = ("bench",)
"""Areas only the benchmarks load: they bypass the pipeline and its journal."""

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_(\w+)\.sql$")
_AREA = re.compile(r"^([a-z_]+)\.sql$")


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str


def sql_folder() -> Traversable:
    """The sql/ folder, as the package `transcriber.sql`'s resources."""
    return files("transcriber.sql")


def areas(folder: Traversable | None = None) -> list[str]:
    """Every area file's name (sql/<area>.sql), sorted."""
    found = (_AREA.match(f.name) for f in (folder or sql_folder()).iterdir())
    return sorted(m.group(1) for m in found if m)


def load_queries(
    extra_areas: Iterable[str] = (), *, folder: Traversable | None = None
) -> dict[str, str]:
    """The named queries of the service's areas (every area but BENCH_AREAS) and of
    `extra_areas`, by name. A name defined twice, in one file or two, is an error; so
    is an extra area that has no file. (`folder`: another sql/ folder, for tests.)"""
    folder = folder or sql_folder()
    known = areas(folder)
    wanted = [a for a in known if a not in BENCH_AREAS]
    for extra in extra_areas:
        if extra not in known:
            raise ValueError(f"no area {extra!r} in sql/ (areas: {', '.join(known)})")
        if extra not in wanted:
            wanted.append(extra)
    queries: dict[str, str] = {}
    where: dict[str, str] = {}
    for area in wanted:
        file = f"{area}.sql"
        parts = _NAME.split(folder.joinpath(file).read_text())
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in queries:
                raise ValueError(
                    f"sql/{file}: query {name!r} is already defined in sql/{where[name]}"
                )
            queries[name] = body.strip()
            where[name] = file
    return queries


def load_migrations() -> list[Migration]:
    found = []
    for file in sorted(sql_folder().iterdir(), key=lambda f: f.name):
        m = _MIGRATION.match(file.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), file.read_text()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"sql/: two migrations share a version: {versions}")
    return found


def schema_text() -> str:
    """Every migration, in order: a later definition of an object replaces an earlier."""
    return "\n".join(m.sql for m in load_migrations())
