"""The overlay's schema migrations: one module per version, `vNN_what.py`, taking NN-1 to NN.

Each module holds `SQL` (statements in the overlay's SQLite dialect; Postgres gets them
through `postgres_dialect.ddl_to_postgres`) and may hold `POSTGRES_SQL` (used instead on
Postgres) and `after(store)` (data work in the same transaction, after the statements).

The version is the file name's number, so two branches that each add a migration add two
files: a clash is a duplicate number (refused here at import, and by
tests/test_migrations.py), never one entry silently replacing another as in a list or a
dict literal. Claim the next number in the team's migrations list before adding one.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

_NAME = re.compile(r"v(\d+)_[a-z0-9_]+")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str                       # the module's name, e.g. v05_daemon_schedule
    sql: str
    postgres_sql: str | None = None
    after: Callable | None = None   # after(store): data work inside the migration's transaction

    def statements_for(self, dialect: str) -> str:
        if dialect == "postgres" and self.postgres_sql is not None:
            return self.postgres_sql
        return self.sql


def _load(module: ModuleType, version: int) -> Migration:
    return Migration(version, module.__name__.rsplit(".", 1)[-1], module.SQL,
                     getattr(module, "POSTGRES_SQL", None), getattr(module, "after", None))


def load_migrations(path: list[str] | None = None, package: str = __name__) -> dict[int, Migration]:
    """{version: Migration}, every `vNN_*` module of this package (or of `package` at
    `path`); a duplicate number is an error, and so are gaps and a start other than v1."""
    found: dict[int, Migration] = {}
    for info in pkgutil.iter_modules(__path__ if path is None else path):
        m = _NAME.fullmatch(info.name)
        if m is None:
            raise ImportError(f"overlay migration module {info.name!r} is not named vNN_what")
        version = int(m[1])
        if version in found:
            raise ImportError(f"two overlay migrations for v{version}: {found[version].name} and {info.name}")
        found[version] = _load(importlib.import_module(f"{package}.{info.name}"), version)
    if sorted(found) != list(range(1, len(found) + 1)):
        raise ImportError(f"overlay migrations must be v1..vN without gaps, found {sorted(found)}")
    return dict(sorted(found.items()))


MIGRATIONS_BY_VERSION = load_migrations()
SCHEMA_VERSION = max(MIGRATIONS_BY_VERSION)
# {version: SQLite statements}: what each migration runs (tests build old overlays from these).
MIGRATIONS: dict[int, str] = {v: m.sql for v, m in MIGRATIONS_BY_VERSION.items()}
