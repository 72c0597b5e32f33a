"""Small pieces of SQL plumbing the overlay's repositories share: scoping a statement to
some ids, splitting a migration into statements, transactions on an autocommit
connection, and a SQLite setting changed for a block."""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence


class RepoBase:
    """What every repository mixin of OverlayStore reads from the store it is mixed into.

    For the type checker: the attributes OverlayStore sets, and (while checking only) the
    other mixins' methods, which a mixin reaches through `self` once they are combined."""

    conn: Any          # sqlite3.Connection, or postgres_dialect.PgConnection (the same calls, plus stream())
    dialect: str       # "sqlite" | "postgres"
    label: str         # what messages name the overlay by (a DSN without its password)

    if TYPE_CHECKING:
        def __getattr__(self, name: str) -> Any: ...


def scope(column: str, ids: list[int] | None) -> tuple[str, tuple]:
    """` AND column IN (?, …)` and its parameters; nothing for None, never-true for []."""
    if ids is None:
        return "", ()
    if not ids:
        return " AND 1 = 0", ()
    return f" AND {column} IN ({', '.join('?' * len(ids))})", tuple(ids)


ID_CHUNK = 900     # ids per `IN (…)`: well under SQLite's bound-variable limit


@contextmanager
def pragma_for(conn, name: str, value: int) -> Iterator[None]:
    """SQLite: PRAGMA `name` = `value` (an integer setting: threads, cache_size) while the
    block runs, then the value it had."""
    before = int(conn.execute(f"PRAGMA {name}").fetchone()[0])
    conn.execute(f"PRAGMA {name} = {int(value)}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA {name} = {before}")


def placeholders(n: int) -> str:
    return ", ".join("?" * n)


def id_chunks(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    """`ids` in slices of at most ID_CHUNK, one `IN (…)` each."""
    for i in range(0, len(ids), ID_CHUNK):
        yield ids[i:i + ID_CHUNK]


def split_sql(script: str) -> list[str]:
    """Split a migration into statements (they hold no semicolons inside literals)."""
    out = []
    for part in script.split(";"):
        lines = [ln for ln in part.splitlines() if ln.strip() and not ln.strip().startswith("--")]
        if lines:
            out.append("\n".join(lines))
    return out


class Transaction:
    """BEGIN IMMEDIATE … COMMIT/ROLLBACK on an autocommit connection; nests as a no-op."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.outer = False

    def __enter__(self):
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self.outer = True
        return self.conn

    def __exit__(self, exc_type, *rest):
        if not self.outer:
            return False
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")
        return False


def plain_rows(conn, dialect: str, sql: str, params: tuple = ()):
    """Rows of a SELECT read by position: plain tuples on SQLite (no sqlite3.Row and its
    lookups by name), plain tuples on Postgres too (no row class per row: a re-audit's key
    lookups, 100k keys 0.16 -> 0.08 s CPU)."""
    if dialect == "postgres":
        return conn.execute_plain(sql, params)
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(sql, params)
