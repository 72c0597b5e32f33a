"""Write-back to a SQLite table: UPDATE / DELETE by primary key in short transactions.

The read-write connection exists only inside `transaction()`: `BEGIN IMMEDIATE` with a busy
timeout takes the write lock up front (so the rows read inside it cannot change before the
write), the caller does a small batch, and the transaction commits at once. Every statement
is built with sqlglot from quoted identifiers and bound parameters; no name or value from
memwatch.toml is ever spliced into SQL text. The journal mode and every other setting of
the bot's database are left alone.
"""
from __future__ import annotations

import contextlib
import itertools
import re
import sqlite3
import urllib.parse
from typing import Any, Iterator

from sqlglot import exp

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.sqlite_files import special_sidecar
from memwatch_overlay.connectors.sqlite import DEFAULT_BUSY_TIMEOUT, ROWID, _pk_text
from memwatch_overlay.connectors.sqlguard import column, table
from memwatch_overlay.connectors.writer import Image, Key, SourceLocked, SourceWriter, WriteTxn

DIALECT = "sqlite"
_INT = re.compile(r"^-?\d+$")
_REAL = re.compile(r"^-?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$")


def _ref(name: str) -> exp.Expression:
    """A column reference; the rowid sentinel is SQLite's implicit `rowid`."""
    return exp.column("rowid") if name == ROWID else column(name)


def _eq(name: str) -> exp.Expression:
    return exp.EQ(this=_ref(name), expression=exp.Placeholder())


def _where(names: list[str]) -> exp.Expression:
    return exp.and_(*[_eq(n) for n in names])


def _bind(value: Any) -> Any:
    """A plain value as SQLite binds it (booleans as 0/1)."""
    if isinstance(value, bool):
        return int(value)
    return value


def _candidates(name: str, text: str) -> list[Any]:
    """Values a text pk may be stored as: the text itself, or the number it spells."""
    out: list[Any] = [] if name == ROWID else [text]
    if _INT.match(text):
        out.append(int(text))
    elif _REAL.match(text) and name != ROWID:
        out.append(float(text))
    return out


class SqliteWriter(SourceWriter):
    kind = "sqlite"
    hash_check = True       # images hold the very values the connector reads

    def __init__(self, connector, table_name: str | None = None,
                 busy_timeout: float = DEFAULT_BUSY_TIMEOUT):
        super().__init__(connector, table_name)
        self.busy_timeout = busy_timeout
        self._info: list[tuple[str, str]] | None = None
        self._sql: dict[tuple, str] = {}     # statements are built by sqlglot once per shape

    # -- schema (read-only connection of the connector) ------------------------------
    def _table_info(self) -> list[tuple[str, str]]:
        if self._info is None:
            rows = self.connector.conn.execute(
                "SELECT name, type, hidden FROM pragma_table_xinfo(?)", (self.table,)).fetchall()
            if not rows:
                names = ", ".join(t.name for t in self.connector.describe()) or "none"
                raise ConnectorError(f"{self.source.target}: no table {self.table!r} (tables: {names})")
            # hidden 0 = ordinary column; generated and virtual-table hidden columns cannot be written
            self._info = [(name, decl or "") for name, decl, hidden in rows if hidden == 0]
        return self._info

    def columns(self) -> list[str]:
        return [name for name, _ in self._table_info()]

    def declared_type(self, col: str) -> str:
        return dict(self._table_info()).get(col, "")

    def key_columns(self) -> list[str]:
        if self.source.id:
            missing = [c for c in self.source.id if c not in self.columns()]
            if missing:   # SQLite would read an unknown "quoted" name as a string literal
                raise ConnectorError(f"source {self.source.name!r}: id = {missing[0]!r}: no column "
                                     f"{missing[0]!r} in {self.table} (columns: {', '.join(self.columns())})")
            return list(self.source.id)
        info = self.connector.table_info(self.table)
        if info.pk:
            return list(info.pk)
        if info.rowid:
            return [ROWID]
        raise ConnectorError(f"source {self.source.name!r}: table {self.table!r} has no primary key; "
                             f"set `id` in its [[sources]] entry")

    # -- statements (built with sqlglot once per shape, then reused as text) ---------
    def _cached(self, shape: tuple, build) -> str:
        sql = self._sql.get(shape)
        if sql is None:
            sql = self._sql[shape] = build().sql(dialect=DIALECT)
        return sql

    def sql_select(self, keys: tuple[str, ...]) -> str:
        """SELECT typeof(k), k, …, typeof(c), c, … FROM t WHERE k = ? AND …"""
        def build():
            out = []
            for name in [*keys, *self.columns()]:
                out += [exp.func("typeof", _ref(name)), _ref(name)]
            return exp.select(*out).from_(table(self.table)).where(_where(list(keys)))
        return self._cached(("select", keys), build)

    def sql_update(self, cols: tuple[str, ...], keys: tuple[str, ...]) -> str:
        return self._cached(("update", cols, keys), lambda: exp.Update(
            this=table(self.table), expressions=[_eq(c) for c in cols], where=exp.Where(this=_where(list(keys)))))

    def sql_delete(self, keys: tuple[str, ...]) -> str:
        return self._cached(("delete", keys), lambda: exp.Delete(
            this=table(self.table), where=exp.Where(this=_where(list(keys)))))

    def sql_insert(self, cols: tuple[str, ...]) -> str:
        def build():
            names = [exp.to_identifier("rowid") if c == ROWID else exp.to_identifier(c, quoted=True) for c in cols]
            row = exp.Tuple(expressions=[exp.Placeholder() for _ in cols])
            return exp.Insert(this=exp.Schema(this=table(self.table), expressions=names),
                              expression=exp.Values(expressions=[row]))
        return self._cached(("insert", cols), build)

    def split(self, row: tuple, keys: tuple[str, ...]) -> tuple[Key, Image]:
        pairs = [(row[i], row[i + 1]) for i in range(0, len(row), 2)]
        key = {k: pairs[i] for i, k in enumerate(keys)}
        image = {c: pairs[len(keys) + i] for i, c in enumerate(self.columns())}
        return key, image

    def locate(self, pk: dict[str, str]) -> tuple[Key, Image] | None:
        """Equality lookups by key, once per way the text pk may be stored (text, integer…)."""
        keys = tuple(self.key_columns())
        options = [_candidates(name, pk.get(name, "")) for name in keys]
        sql = self.sql_select(keys)
        found = {}
        for params in itertools.product(*options):
            try:
                rows = self.connector.conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                raise ConnectorError(f"{self.source.target}: {exc}") from None
            for row in rows:
                key, image = self.split(row, keys)
                if all(_pk_text(key[k][1]) == pk.get(k, "") for k in keys):
                    found[tuple(key.values())] = (key, image)
        return next(iter(found.values())) if len(found) == 1 else None

    def holds(self, image: Image, col: str, value: Any) -> bool:
        return image.get(col) == _typed_like(value)

    def sample(self, col: str) -> Any:
        from memwatch_overlay.core.timeparse import parse_timestamp
        stmt = (exp.select(column(col)).from_(table(self.table))
                .where(exp.Not(this=exp.Is(this=column(col), expression=exp.Null()))).limit(20))
        for (value,) in self.connector.conn.execute(stmt.sql(dialect=DIALECT)).fetchall():
            try:
                if parse_timestamp(value) is not None:
                    return value
            except ValueError:
                continue
        return None

    # -- writing -----------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator["SqliteTxn"]:
        path = self.source.resolved_path
        if path is None or not path.exists():
            raise ConnectorError(f"{self.source.target}: no such file")
        problem = special_sidecar(path)
        if problem:
            raise ConnectorError(f"{problem}; refusing to open {path}")
        uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=rw"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=self.busy_timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.DatabaseError as exc:
            raise ConnectorError(f"{self.source.target}: cannot open for write-back ({exc})") from None
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise SourceLocked(f"{self.source.target}: busy ({exc}); retried later") from None
            txn = SqliteTxn(self, conn)
            try:
                yield txn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise SourceLocked(f"{self.source.target}: commit failed ({exc}); retried later") from None
        finally:
            conn.close()


class SqliteTxn(WriteTxn):
    """Statements on one open write transaction; keys carry their own column names."""

    def __init__(self, writer: SqliteWriter, conn: sqlite3.Connection):
        self.w = writer
        self.conn = conn

    def _run(self, sql: str, params: list) -> sqlite3.Cursor:
        try:
            return self.conn.execute(sql, params)
        except sqlite3.DatabaseError as exc:
            raise ConnectorError(f"{self.w.source.target}: write-back failed ({exc})") from None

    def _one(self, cur: sqlite3.Cursor, what: str, key: Key) -> None:
        if cur.rowcount != 1:
            raise ConnectorError(f"{self.w.source.target}: {what} by key {self.w.plain(key)} touched "
                                 f"{cur.rowcount} rows; `id` must name a unique key")

    def read(self, key: Key) -> Image | None:
        names = tuple(key)
        rows = self._run(self.w.sql_select(names), [v for _, v in key.values()]).fetchall()
        if len(rows) != 1:
            return None
        return self.w.split(rows[0], names)[1]

    def update(self, key: Key, values: dict[str, Any]) -> None:
        if not values:
            return
        cols = tuple(values)
        params = [_bind(values[c]) for c in cols] + [v for _, v in key.values()]
        self._one(self._run(self.w.sql_update(cols, tuple(key)), params), "UPDATE", key)

    def restore(self, key: Key, image: Image) -> None:
        current = self.read(key) or {}
        self.update(key, {c: tv[1] for c, tv in image.items() if current.get(c) != tv})

    def delete(self, key: Key) -> None:
        self._one(self._run(self.w.sql_delete(tuple(key)), [v for _, v in key.values()]), "DELETE", key)

    def insert(self, key: Key, image: Image) -> None:
        cols = list(image)
        values = [image[c][1] for c in cols]
        for k, (_, v) in key.items():    # the rowid of a table without a declared key
            if k not in image:
                cols.append(k)
                values.append(v)
        self._run(self.w.sql_insert(tuple(cols)), values)


def _typed_like(value: Any) -> tuple[str, Any]:
    """The (SQLite type, value) a plain value is stored as, to spot no-op writes."""
    if value is None:
        return ("null", None)
    if isinstance(value, bool):
        return ("integer", int(value))
    if isinstance(value, int):
        return ("integer", value)
    if isinstance(value, float):
        return ("real", value)
    if isinstance(value, (bytes, bytearray)):
        return ("blob", bytes(value))
    return ("text", value)
