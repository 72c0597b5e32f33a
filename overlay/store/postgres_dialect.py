"""The overlay's SQL dialect layer: one set of statements, run on SQLite or on Postgres.

The overlay's SQL is written once, in SQLite's dialect (the repositories of overlay/store/,
the only modules that query `store.conn`). On SQLite, `store.conn` is the plain `sqlite3.Connection`: no
wrapper on the hot path. On Postgres it is a `PgConnection`, which looks like a sqlite3
connection to its callers (`execute`, `executemany`, `in_transaction`, rows readable by
index and by name, `cursor.lastrowid`) and rewrites each statement once (cached):

- `?` placeholders -> `%s` (a literal `%` -> `%%`), outside string literals;
- `IS ?` / `IS NOT ?` -> `IS NOT DISTINCT FROM %s` / `IS DISTINCT FROM %s`;
- `group_concat` -> `string_agg`, `char(n)` -> `chr(n)`, `instr` -> `strpos`;
- scalar `max(a, b)` / `min(a, b)` -> `greatest` / `least` (aggregates keep one argument);
- `CASE WHEN ? THEN` (an integer flag) -> `CASE WHEN ? <> 0 THEN`;
- SQLite's index hint `+column` -> `column`;
- temp tables: `temp.t` -> `pg_temp.t`, `WITHOUT ROWID` dropped, `INSERT OR IGNORE INTO …`
  -> `INSERT INTO … ON CONFLICT DO NOTHING`;
- whole fragments registered with `register_fragment` (the JSON annotations subquery);
- `BEGIN IMMEDIATE` -> `BEGIN`; `INSERT INTO <table with an id>` gets `RETURNING id`
  so `cursor.lastrowid` works.

Migrations go through `ddl_to_postgres`: INTEGER -> BIGINT (INTEGER PRIMARY KEY becomes an
identity column), REAL -> DOUBLE PRECISION (epoch seconds need 53 bits), BLOB -> BYTEA,
TEXT -> TEXT COLLATE "C" (byte order, so ORDER BY gives SQLite's order).

Why not sqlglot's transpiler: sqlglot 30 writes `ON CONFLICT (a NULLS FIRST, …)`, which
Postgres rejects, leaves SQLite's `strftime(…, 'unixepoch')` untouched and writes
`JSON_OBJECT('k': v)` (Postgres 16+ only); the rewrites the overlay needs are few and
every statement is exercised against a real server by tests/test_overlay_postgres.py.
"""
from __future__ import annotations

import functools
import itertools
import re
from typing import Any, Iterable

from memwatch_overlay.core.errors import OverlayError
from memwatch_overlay.core.redact import redact_dsn

PG_PREFIXES = ("postgresql://", "postgres://")
# Tables whose `id` is an identity column: an INSERT into them returns the new id.
ID_TABLES = frozenset({"sources", "facts", "contradictions", "runs", "actions", "sync_events"})
_FRAGMENTS: dict[str, str] = {}


def is_dsn(target: Any) -> bool:
    return isinstance(target, str) and target.startswith(PG_PREFIXES)


def register_fragment(sqlite_sql: str, postgres_sql: str) -> None:
    """Replace `sqlite_sql` (an exact substring) by `postgres_sql` in statements sent to Postgres."""
    _FRAGMENTS[sqlite_sql] = postgres_sql
    to_postgres.cache_clear()


_WORD_REWRITES = [
    (re.compile(r"\bIS\s+NOT\s+\?", re.I), "IS DISTINCT FROM ?"),
    (re.compile(r"\bIS\s+\?", re.I), "IS NOT DISTINCT FROM ?"),
    (re.compile(r"\bgroup_concat\s*\(", re.I), "string_agg("),
    (re.compile(r"\bchar\s*\((\d+)\)", re.I), r"chr(\1)"),
    (re.compile(r"\binstr\s*\(", re.I), "strpos("),
    (re.compile(r"\bWHEN\s+\?\s+THEN\b", re.I), "WHEN ? <> 0 THEN"),
    (re.compile(r"\btemp\.(\w)", re.I), r"pg_temp.\1"),
    # SQLite's index hint `+column` (unary plus) is not defined on text in Postgres
    (re.compile(r"(\b(?:AND|OR|NOT|WHERE|ON|BY)\s+|[(,=]\s*)\+(?=[A-Za-z_])", re.I), r"\1"),
    (re.compile(r"\s+WITHOUT\s+ROWID\b", re.I), ""),
    (re.compile(r"^\s*BEGIN\s+IMMEDIATE\s*$", re.I), "BEGIN"),
]
_OR_IGNORE = re.compile(r"^(\s*INSERT)\s+OR\s+IGNORE\b", re.I)
_MINMAX = re.compile(r"\b(max|min)\s*\(", re.I)
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)", re.I)


@functools.lru_cache(maxsize=1024)
def to_postgres(sql: str) -> str:
    """A statement in the overlay's SQLite dialect, rewritten for Postgres (see module doc)."""
    for old, new in _FRAGMENTS.items():
        sql = sql.replace(old, new)
    if _OR_IGNORE.match(sql):
        sql = _OR_IGNORE.sub(r"\1", sql) + " ON CONFLICT DO NOTHING"
    parts = _split_literals(sql)
    out = []
    for i, part in enumerate(parts):
        if i % 2:                       # a quoted literal: only `%` needs escaping
            out.append(part.replace("%", "%%"))
            continue
        for pattern, repl in _WORD_REWRITES:
            part = pattern.sub(repl, part)
        part = _scalar_minmax(part)
        out.append(part.replace("%", "%%").replace("?", "%s"))
    return "".join(out)


def _scalar_minmax(sql: str) -> str:
    """max(a, b) -> greatest(a, b): SQLite's scalar max/min have several arguments."""
    out, pos = [], 0
    for m in _MINMAX.finditer(sql):
        if m.start() < pos:
            continue
        depth, i, top_comma = 1, m.end(), False
        while i < len(sql) and depth:
            c = sql[i]
            depth += c == "("
            depth -= c == ")"
            top_comma |= c == "," and depth == 1
            i += 1
        if top_comma:
            out.append(sql[pos:m.start()])
            out.append("greatest(" if m[1].lower() == "max" else "least(")
            pos = m.end()
    out.append(sql[pos:])
    return "".join(out)


def _split_literals(sql: str) -> list[str]:
    """[code, 'literal', code, 'literal', …] (single quotes; '' inside a literal kept)."""
    parts, buf, in_lit, i = [], [], False, 0
    while i < len(sql):
        ch = sql[i]
        if ch == "'":
            if in_lit and i + 1 < len(sql) and sql[i + 1] == "'":
                buf.append("''")
                i += 2
                continue
            if in_lit:
                buf.append(ch)
                parts.append("".join(buf))
                buf = []
            else:
                parts.append("".join(buf))
                buf = [ch]
            in_lit = not in_lit
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return parts


_TYPES = {"INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION", "BLOB": "BYTEA", "TEXT": 'TEXT COLLATE "C"'}
# A column definition: `name TYPE …` at the start of a line (or after ADD COLUMN).
_COLUMN = re.compile(r"^(\s*(?:ALTER\s+TABLE\s+\w+\s+ADD\s+COLUMN\s+)?\w+\s+)(INTEGER|REAL|BLOB|TEXT)\b(.*)$", re.I)


def ddl_to_postgres(statement: str) -> str:
    """One migration statement (CREATE/ALTER/INDEX) in Postgres types."""
    lines = []
    for line in statement.splitlines():
        code = line.partition("--")[0].rstrip()
        m = _COLUMN.match(code)
        if m:
            head, typ, rest = m.groups()
            if typ.upper() == "INTEGER" and re.match(r"\s+PRIMARY\s+KEY\s*,?\s*$", rest, re.I):
                code = f"{head}BIGINT GENERATED BY DEFAULT AS IDENTITY{rest}"
            else:
                code = f"{head}{_TYPES[typ.upper()]}{rest}"
        lines.append(code)
    return "\n".join(lines)


# -- rows and cursors ------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _row_class(names: tuple[str, ...]) -> type:
    index = {n: i for i, n in enumerate(names)}

    class PgRow(tuple):
        """A row readable like sqlite3.Row: by position, by column name, keys()."""
        __slots__ = ()

        def __getitem__(self, key):
            if isinstance(key, str):
                try:
                    key = index[key]
                except KeyError:
                    raise IndexError(f"no such column: {key}") from None
            return tuple.__getitem__(self, key)

        def keys(self):
            return list(names)

    return PgRow


def _row_factory(cursor):
    if cursor.description is None:
        return tuple
    cls = _row_class(tuple(c.name for c in cursor.description))
    return cls


class PgCursor:
    """The psycopg cursor, plus sqlite3's `lastrowid`."""

    def __init__(self, cur, lastrowid: int | None = None):
        self._cur = cur
        self.lastrowid = lastrowid

    def __iter__(self):
        return iter(self._cur)

    def __getattr__(self, name):
        return getattr(self._cur, name)


_stream_ids = itertools.count(1)


def _closing_iter(cur):
    try:
        yield from cur
    finally:
        cur.close()


def _params(params: Iterable | None) -> tuple:
    # bool -> int: the overlay stores flags in INTEGER (BIGINT) columns, as SQLite does.
    if params is None:
        return ()
    return tuple(int(p) if isinstance(p, bool) else p for p in params)


class PgConnection:
    """A psycopg connection in autocommit mode that speaks the overlay's SQLite dialect."""

    dialect = "postgres"

    def __init__(self, dsn: str):
        try:
            import psycopg
            from psycopg.types.numeric import FloatLoader
        except ImportError:
            raise OverlayError("a Postgres overlay needs psycopg: pip install 'memwatch-overlay[postgres]'") from None
        self._psycopg = psycopg
        self.dsn = dsn
        try:
            self.raw = psycopg.connect(dsn, autocommit=True, row_factory=_row_factory, connect_timeout=10,
                                       application_name="memwatch-overlay")
        except psycopg.Error as exc:
            raise OverlayError(f"{redact_dsn(dsn)}: cannot open the overlay database "
                               f"({redact_dsn(_first_line(exc))})") from None
        # avg()/sum() over integers are numeric in Postgres: read them as float, like SQLite.
        self.raw.adapters.register_loader("numeric", FloatLoader)
        # No JIT: the planner's cost estimates for the overlay's page-sized statements (score
        # pages, the summary, the rescore's UPDATE) cross jit_above_cost, and compiling them
        # took longer than running them.
        try:
            self.raw.execute("SET jit = off")
        except psycopg.Error as exc:
            self.raw.close()
            raise OverlayError(f"{redact_dsn(dsn)}: cannot open the overlay database "
                               f"({redact_dsn(_first_line(exc))})") from None

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE

    def execute(self, sql: str, params: Iterable | None = None) -> PgCursor:
        stmt = to_postgres(sql)
        table = _INSERT.match(stmt)
        returning = table is not None and table[1].lower() in ID_TABLES and "RETURNING" not in stmt.upper()
        if returning:
            stmt += " RETURNING id"
        cur = self.raw.cursor()
        try:
            cur.execute(stmt, _params(params))
            row = cur.fetchone() if returning and cur.rowcount else None
            lastrowid = row[0] if row else None
        except self._psycopg.Error as exc:
            raise self._error(exc) from None
        return PgCursor(cur, lastrowid)

    def execute_plain(self, sql: str, params: Iterable | None = None) -> PgCursor:
        """execute() of a SELECT whose rows are plain tuples (no row class per row): for hot
        paths that read rows by position (sqlhelpers.plain_rows)."""
        cur = self.raw.cursor(row_factory=self._psycopg.rows.tuple_row)
        try:
            cur.execute(to_postgres(sql), _params(params))
        except self._psycopg.Error as exc:
            raise self._error(exc) from None
        return PgCursor(cur)

    def executemany(self, sql: str, seq: Iterable[Iterable]) -> PgCursor:
        cur = self.raw.cursor()
        try:
            cur.executemany(to_postgres(sql), [_params(p) for p in seq])
        except self._psycopg.Error as exc:
            raise self._error(exc) from None
        return PgCursor(cur)

    def run(self, sql: str, params: Iterable | None = None) -> None:
        """execute() without reading a result: no `RETURNING id` added to an INSERT (an INSERT …
        SELECT of many rows would send every new id back)."""
        try:
            self.raw.cursor().execute(to_postgres(sql), _params(params))
        except self._psycopg.Error as exc:
            raise self._error(exc) from None

    def copy_rows(self, table: str, columns: tuple[str, ...], rows: Iterable[Iterable]) -> None:
        """COPY `rows` into `table` (`temp.t` is written `pg_temp.t`, as in statements): one
        round trip for a page of rows instead of a statement per row (executemany)."""
        name = "pg_temp." + table[5:] if table.startswith("temp.") else table
        try:
            with self.raw.cursor().copy(f"COPY {name} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(_params(row))
        except self._psycopg.Error as exc:
            raise self._error(exc) from None

    def stream(self, sql: str, params: Iterable | None = None, itersize: int = 2000):
        """Rows of a SELECT through a server-side cursor, `itersize` at a time (audit output:
        a million facts never sit in this process). WITH HOLD: works outside a transaction."""
        cur = self.raw.cursor(name=f"memwatch_stream_{next(_stream_ids)}", withhold=True)
        cur.itersize = itersize
        try:
            cur.execute(to_postgres(sql), _params(params))
        except self._psycopg.Error as exc:
            cur.close()
            raise self._error(exc) from None
        return _closing_iter(cur)

    def _error(self, exc) -> OverlayError:
        return OverlayError(f"{redact_dsn(self.dsn)}: {redact_dsn(_first_line(exc))}")

    def close(self) -> None:
        self.raw.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
