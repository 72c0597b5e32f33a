"""Write-back to a Postgres table: UPDATE / DELETE by primary key in short transactions.

The connector's session stays read-only; writes use a second session opened only inside
`transaction()`, with `lock_timeout` (the busy timeout: a row the bot holds makes the
batch wait that long, then it is retried later) and `statement_timeout`. Rows are read
again with `SELECT … FOR UPDATE` inside the transaction, so the bot cannot change one
between our check and our write. Statements are built with sqlglot (quoted identifiers,
`%s` parameters).

Images hold every column as `(type, text)`: Postgres' own text form of the value and
the column's type (`format_type`). Text I/O round-trips every built-in type exactly, and
values are bound as untyped text, so the server converts them with the column's own input
function: an undo puts back exactly what was there.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import psycopg
from psycopg import conninfo as pg_conninfo
from sqlglot import exp

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.connectors.postgres import (
    APPLICATION_NAME,
    DEFAULT_CONNECT_TIMEOUT,
    _one_line,
    scrub,
)
from memwatch_overlay.connectors.sqlguard import column, table
from memwatch_overlay.connectors.writer import Image, Key, SourceLocked, SourceWriter, WriteTxn

DIALECT = "postgres"
LOCK_TIMEOUT_MS = 5000
STATEMENT_TIMEOUT_MS = 30000
_COLUMNS_SQL = (
    "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a "
    "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' "
    "ORDER BY a.attnum")
_BUSY = (psycopg.errors.LockNotAvailable, psycopg.errors.SerializationFailure,
         psycopg.errors.DeadlockDetected, psycopg.errors.QueryCanceled)


def _where(names) -> exp.Expression:
    return exp.and_(*[exp.EQ(this=column(n), expression=exp.Placeholder()) for n in names])


def _text(value: Any) -> str | None:
    """An action's plain value as untyped text (the column's input function converts it)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    return str(value)


class PostgresWriter(SourceWriter):
    kind = "postgres"

    def __init__(self, connector, table_name: str | None = None, lock_timeout_ms: int | None = None):
        super().__init__(connector, table_name)
        self.lock_timeout_ms = LOCK_TIMEOUT_MS if lock_timeout_ms is None else lock_timeout_ms
        info = connector.table_info(self.table)
        details = connector._details[info.name]
        self.relname, self.schema = details["relname"], details["schema"]
        self.info = info
        self._types: dict[str, str] | None = None
        self._sql: dict[tuple, str] = {}

    @property
    def qualified(self) -> exp.Table:
        return table(self.relname, self.schema)

    # -- schema (the connector's read-only session) ----------------------------------
    def types(self) -> dict[str, str]:
        if self._types is None:
            conn = self.connector.conn
            try:
                rows = conn.execute(_COLUMNS_SQL, (self.qualified.sql(dialect=DIALECT),)).fetchall()
                conn.rollback()
            except psycopg.Error as exc:
                raise self.connector._fail(exc, "cannot list columns") from None
            self._types = dict(rows)
        return self._types

    def columns(self) -> list[str]:
        return list(self.types())

    def declared_type(self, col: str) -> str:
        return self.types().get(col, "")

    def key_columns(self) -> list[str]:
        keys = list(self.source.id) if self.source.id else list(self.info.pk)
        if not keys:
            raise ConnectorError(f"source {self.source.name!r}: table {self.table!r} has no primary key; "
                                 f"set `id` in its [[sources]] entry")
        for k in keys:
            if k not in self.types():
                raise ConnectorError(f"source {self.source.name!r}: id = {k!r}: no column {k!r} in "
                                     f"{self.table} (columns: {', '.join(self.columns())})")
        return keys

    # -- statements ------------------------------------------------------------------
    def _cached(self, shape: tuple, build) -> str:
        sql = self._sql.get(shape)
        if sql is None:
            sql = self._sql[shape] = build().sql(dialect=DIALECT)
        return sql

    def sql_select(self, keys: tuple[str, ...], lock: bool) -> str:
        def build():
            cols = [exp.cast(column(c), "text") for c in [*keys, *self.columns()]]
            stmt = exp.select(*cols).from_(self.qualified).where(_where(keys))
            return stmt.lock(update=True) if lock else stmt
        return self._cached(("select", keys, lock), build)

    def sql_update(self, cols: tuple[str, ...], keys: tuple[str, ...]) -> str:
        return self._cached(("update", cols, keys), lambda: exp.Update(
            this=self.qualified, expressions=[exp.EQ(this=column(c), expression=exp.Placeholder()) for c in cols],
            where=exp.Where(this=_where(keys))))

    def sql_delete(self, keys: tuple[str, ...]) -> str:
        return self._cached(("delete", keys), lambda: exp.Delete(this=self.qualified, where=exp.Where(this=_where(keys))))

    def sql_insert(self, cols: tuple[str, ...]) -> str:
        return self._cached(("insert", cols), lambda: exp.Insert(
            this=exp.Schema(this=self.qualified, expressions=[exp.to_identifier(c, quoted=True) for c in cols]),
            expression=exp.Values(expressions=[exp.Tuple(expressions=[exp.Placeholder() for _ in cols])])))

    def split(self, row: tuple, keys: tuple[str, ...]) -> tuple[Key, Image]:
        types = self.types()
        key = {k: (types[k], row[i]) for i, k in enumerate(keys)}
        image = {c: (types[c], row[len(keys) + i]) for i, c in enumerate(self.columns())}
        return key, image

    def locate(self, pk: dict[str, str]) -> tuple[Key, Image] | None:
        keys = tuple(self.key_columns())
        conn = self.connector.conn
        try:
            rows = conn.execute(self.sql_select(keys, lock=False), [pk.get(k) for k in keys]).fetchall()
            conn.rollback()
        except psycopg.errors.DataError:      # the text pk does not even convert to the key's type
            conn.rollback()
            return None
        except psycopg.Error as exc:
            raise self.connector._fail(exc, "cannot look up a row") from None
        return self.split(rows[0], keys) if len(rows) == 1 else None

    def holds(self, image: Image, col: str, value: Any) -> bool:
        return col in image and image[col][1] == _text(value)

    def sample(self, col: str) -> Any:
        from memwatch_overlay.core.timeparse import parse_timestamp
        stmt = (exp.select(exp.cast(column(col), "text")).from_(self.qualified)
                .where(exp.Not(this=exp.Is(this=column(col), expression=exp.Null()))).limit(20))
        conn = self.connector.conn
        try:
            values = [r[0] for r in conn.execute(stmt.sql(dialect=DIALECT)).fetchall()]
            conn.rollback()
        except psycopg.Error as exc:
            raise self.connector._fail(exc, "cannot sample a column") from None
        for value in values:
            try:
                if parse_timestamp(value) is not None:
                    return value
            except ValueError:
                continue
        return None

    # -- writing -----------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection:
        dsn = self.connector.dsn
        params = pg_conninfo.conninfo_to_dict(dsn)
        params.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
        params.setdefault("application_name", APPLICATION_NAME + " write-back")
        try:
            conn = psycopg.connect(pg_conninfo.make_conninfo(**params), autocommit=True)
            conn.execute("SET TIME ZONE 'UTC'")
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(self.lock_timeout_ms)}ms",))
            conn.execute("SELECT set_config('statement_timeout', %s, false)", (f"{STATEMENT_TIMEOUT_MS}ms",))
            conn.autocommit = False
        except psycopg.Error as exc:
            raise ConnectorError(f"{scrub(self.source.target, dsn)}: cannot open for write-back: "
                                 f"{_one_line(exc, dsn)}") from None
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator["PostgresTxn"]:
        conn = self._connect()
        try:
            txn = PostgresTxn(self, conn)
            try:
                yield txn
                conn.commit()
            except _BUSY as exc:
                conn.rollback()
                raise SourceLocked(f"{scrub(self.source.target, self.connector.dsn)}: busy "
                                 f"({_one_line(exc, self.connector.dsn)}); retried later") from None
            except psycopg.Error as exc:
                conn.rollback()
                raise ConnectorError(f"{scrub(self.source.target, self.connector.dsn)}: write-back failed: "
                                     f"{_one_line(exc, self.connector.dsn)}") from None
            except BaseException:
                conn.rollback()
                raise
        finally:
            conn.close()


class PostgresTxn(WriteTxn):
    def __init__(self, writer: PostgresWriter, conn: psycopg.Connection):
        self.w = writer
        self.conn = conn

    def _one(self, cur, what: str, key: Key) -> None:
        if cur.rowcount != 1:
            raise ConnectorError(f"{self.w.source.name}: {what} by key {self.w.plain(key)} touched "
                                 f"{cur.rowcount} rows; `id` must name a unique key")

    def read(self, key: Key) -> Image | None:
        names = tuple(key)
        rows = self.conn.execute(self.w.sql_select(names, lock=True), [v for _, v in key.values()]).fetchall()
        return self.w.split(rows[0], names)[1] if len(rows) == 1 else None

    def update(self, key: Key, values: dict[str, Any]) -> None:
        if not values:
            return
        cols = tuple(values)
        params = [_text(values[c]) for c in cols] + [v for _, v in key.values()]
        self._one(self.conn.execute(self.w.sql_update(cols, tuple(key)), params), "UPDATE", key)

    def restore(self, key: Key, image: Image) -> None:
        current = self.read(key) or {}
        self.update(key, {c: tv[1] for c, tv in image.items() if current.get(c) != tv})

    def delete(self, key: Key) -> None:
        self._one(self.conn.execute(self.w.sql_delete(tuple(key)), [v for _, v in key.values()]), "DELETE", key)

    def insert(self, key: Key, image: Image) -> None:
        cols = tuple(image)
        self.conn.execute(self.w.sql_insert(cols), [image[c][1] for c in cols])
