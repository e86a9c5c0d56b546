"""The `sql/` folder: migrations (NNNN_name.sql) and named queries (queries.sql)."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_(\w+)\.sql$")


@attrs.frozen
class Migration:
    version: int
    name: str
    sql: str


def load_queries(path: Path = SQL_DIR / "queries.sql") -> dict[str, str]:
    """Every `-- name: x` block of the file, by name; a name given twice is an error."""
    text = path.read_text()
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        if name in queries:
            raise ValueError(f"{path}: query {name!r} is defined twice")
        queries[name] = body.strip()
    return queries


def load_migrations(folder: Path = SQL_DIR) -> list[Migration]:
    found = []
    for path in sorted(folder.glob("*.sql")):
        m = _MIGRATION.match(path.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), path.read_text()))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"{folder}: two migrations share a version: {versions}")
    return found


def schema_text(folder: Path = SQL_DIR) -> str:
    """Every migration, in order: a later definition of an object replaces an earlier."""
    return "\n".join(m.sql for m in load_migrations(folder))
