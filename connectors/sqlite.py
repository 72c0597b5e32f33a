"""SQLite sources, opened read-only: `file:…?mode=ro` with a busy timeout and `query_only`.

Never `immutable=1` (a live bot writes this file) and never a long-held transaction:
each read() is one statement whose cursor is drained and closed before it returns.
"""
from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any, Iterator

from sqlglot import exp

from ..overlay.errors import ConnectorError
from ..rules.config import SourceConfig
from . import sqlguard
from .base import Record, TableInfo
from .tabular import ROWID, TIME_FIELDS, TableConnector, _opt_text, _pk_text  # noqa: F401 (re-exported)

DEFAULT_BUSY_TIMEOUT = 5.0   # seconds a read waits for a writer's lock
FETCH_BATCH = 1000


def open_readonly(path: Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> sqlite3.Connection:
    """A read-only connection that cannot write even by mistake."""
    if not path.exists():
        raise ConnectorError(f"{path}: no such file")
    if path.is_dir():
        raise ConnectorError(f"{path}: is a directory, not a SQLite file")
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, check_same_thread=False)
        conn.execute("PRAGMA query_only = 1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise ConnectorError(f"{path}: not a readable SQLite database ({exc})") from None
    return conn


def list_tables(conn: sqlite3.Connection) -> list[TableInfo]:
    out = []
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'view') "
        "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
    for name, sql in rows:
        info = conn.execute("SELECT name, pk FROM pragma_table_info(?)", (name,)).fetchall()
        cols = [c for c, _ in info]
        pk = [c for c, n in sorted((r for r in info if r[1]), key=lambda r: r[1])]
        without_rowid = bool(sql and "WITHOUT ROWID" in sql.upper())
        is_view = sql is not None and sql.lstrip().upper().startswith("CREATE VIEW")
        out.append(TableInfo(name, cols, pk, rowid=not without_rowid and not is_view))
    return out


class SqliteConnector(TableConnector):
    """A table (or one read-only SELECT) of a SQLite file, mapped by memwatch.toml."""

    kind = "sqlite"
    description = "SQLite file: a table or a read-only SELECT, columns mapped in memwatch.toml"
    dialect = "sqlite"
    # Columns a preset reads beyond the mapping (memlife's superseded_by...); absent ones are skipped.
    extra_columns: tuple[str, ...] = ()

    def __init__(self, source: SourceConfig, busy_timeout: float = DEFAULT_BUSY_TIMEOUT):
        super().__init__(source)
        self.busy_timeout = busy_timeout
        self.conn: sqlite3.Connection | None = None
        self._tables: list[TableInfo] | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        path = self.source.resolved_path
        if path is None:
            raise ConnectorError(f"source {self.source.name!r}: no path given")
        self.conn = open_readonly(path, self.busy_timeout)

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def describe(self) -> list[TableInfo]:
        if self._tables is None:
            self._tables = list_tables(self.conn)
        return self._tables

    # -- reading -----------------------------------------------------------------------
    def query_columns(self) -> list[str]:
        """Columns the mapping may name: the table's, or the query's result columns."""
        if self.source.query is not None:
            stmt = sqlguard.select_rows(None, self.source.query, [], self.dialect)
            stmt = stmt.select("*", append=False).limit(0)
            cur = self._execute(stmt.sql(dialect=self.dialect), ())
            cols = [d[0] for d in cur.description]
            cur.close()
            return cols
        if not self.source.table:
            raise ConnectorError(f"source {self.source.name!r}: give `table` or `query` in its [[sources]] entry")
        return self.table_info(self.source.table).columns

    def _execute(self, sql: str, params: tuple) -> sqlite3.Cursor:
        try:
            return self.conn.execute(sql, params)
        except sqlite3.OperationalError as exc:
            raise ConnectorError(f"{self.source.target}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise ConnectorError(f"{self.source.target}: unreadable ({exc})") from None

    def iter_rows(self, sql: str, params: tuple = ()) -> Iterator[dict[str, Any]]:
        """Stream rows as dicts, FETCH_BATCH at a time; counts rows_read."""
        cur = self._execute(sql, params)
        names = [d[0] for d in cur.description]
        try:
            while True:
                try:
                    batch = cur.fetchmany(FETCH_BATCH)
                except sqlite3.DatabaseError as exc:
                    raise ConnectorError(f"{self.source.target}: read failed ({exc})") from None
                if not batch:
                    break
                self.rows_read += len(batch)
                for row in batch:
                    yield dict(zip(names, row))
        finally:
            cur.close()

    def base_select(self) -> tuple[exp.Select, list[str], bool]:
        """The mapped columns (plus `extra_columns`), without a cursor filter or order.

        Returns the statement, the pk columns and whether rowid is selected as ROWID.
        """
        columns = self.query_columns()
        mapping = self.mapping(columns)
        pks = self.pk_columns(columns)
        wanted = []
        extra_cols = [c for c in self.extra_columns if c in columns]
        for col in [*(p for p in pks if p != ROWID), *(c for c, _ in mapping.values()), *extra_cols]:
            if col not in wanted:
                wanted.append(col)
        use_rowid = self.source.query is None and self.table_info(self.source.table).rowid
        extra = [sqlguard.sqlglot_rowid()] if use_rowid else []
        stmt = sqlguard.select_rows(self.source.table, self.source.query, wanted, self.dialect,
                                    where=self.source.where, extra=extra)
        return stmt, pks, use_rowid

    def build_select(self, cursor: dict | None) -> tuple[str, tuple, list[str]]:
        stmt, pks, use_rowid = self.base_select()
        params: tuple = ()
        if use_rowid:
            if cursor and cursor.get("rowid") is not None:
                stmt = stmt.where(exp.GT(this=exp.column("rowid"), expression=exp.Placeholder()))
                params = (int(cursor["rowid"]),)
            stmt = stmt.order_by(exp.column("rowid"))
        return stmt.sql(dialect=self.dialect), params, pks

    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        sql, params, pks = self.build_select(cursor)
        mapping = self.mapping(self.query_columns())
        last_rowid = (cursor or {}).get("rowid")
        for row in self.iter_rows(sql, params):
            if ROWID in row:
                last_rowid = row[ROWID]
            rec = self.row_to_record(row, pks, mapping)
            if rec is not None:
                yield rec
        self.cursor = {"rowid": last_rowid}
