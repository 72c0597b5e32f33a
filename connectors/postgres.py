"""Postgres sources (the `postgres` extra, psycopg 3), read-only and memory-bounded.

- Read-only twice over: the session sets `default_transaction_read_only = on` and every
  read runs in a `READ ONLY` transaction that ends (rollback) before read() returns, so
  the bot's vacuum and DDL are never held up by a transaction left open.
- Rows stream through a server-side (named) cursor, ITERSIZE rows per round trip.
- The session's TimeZone is UTC, so naive timestamps mean UTC, as everywhere else.
- Identifiers are quoted by sqlglot; `query`/`where` are validated in the postgres
  dialect; no client-side parameters are used, so a `%` in user SQL is just a `%`.
- The DSN's password never appears in a message: errors are scrubbed with redact_dsn
  and the literal password.

Incremental reads use a watermark (docs/postgres-sources.md): the newest
COALESCE(updated_at, created_at) seen, minus WATERMARK_OVERLAP seconds so rows
committed late by a long transaction are still picked up.
"""
from __future__ import annotations

import datetime as dt
import itertools
import os
from typing import Any, Iterable, Iterator

import psycopg
from psycopg import conninfo as pg_conninfo
from psycopg.rows import dict_row
from sqlglot import exp

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.rules.config import SourceConfig
from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.base import Record, TableInfo
from memwatch_overlay.connectors.tabular import TableConnector, _pk_text

DEFAULT_CONNECT_TIMEOUT = 10     # seconds; a DSN's own connect_timeout wins
DEFAULT_TIMEOUT_SECONDS = 120.0  # statement_timeout of a read (a source's timeout_seconds wins)
IDLE_IN_TRANSACTION_MS = 60_000  # a transaction left open by a killed client ends after this
CONNECTION_CHECK_MS = 2_000      # how often a running statement checks its client is still there
ITERSIZE = 10_000                # rows per server-side cursor round trip
WATERMARK_OVERLAP = 60.0         # seconds re-read below the watermark on each incremental read
FETCH_BATCH = 500                # keys per lookup statement of fetch()
APPLICATION_NAME = "memwatch-overlay"
WATERMARK_ALIAS = "__mw_watermark__"

# Type OIDs (pg_type) the watermark can compare directly or cast from.
TIMESTAMP_TYPES = {1114, 1184, 1082}           # timestamp, timestamptz, date
CASTABLE_TYPES = {25, 1043, 1042}              # text, varchar, bpchar holding ISO text
JSON_TYPES = {114, 3802}                       # json, jsonb

_CATALOG_SQL = """
SELECT n.nspname, c.relname, a.attname, a.atttypid, a.attnotnull,
       array_position(i.indkey::int2[], a.attnum) AS pk_pos
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND i.indisprimary
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
ORDER BY n.nspname, c.relname, a.attnum
"""
_names = itertools.count(1)


# -- connecting --------------------------------------------------------------------------

def scrub(text: str, dsn: str | None) -> str:
    """`text` with the DSN's password removed, in URL, key=value or literal form."""
    text = redact_dsn(text)
    password = _password_of(dsn)
    if password and len(password) >= 3:
        text = text.replace(password, "***")
    return text


def _password_of(dsn: str | None) -> str | None:
    if not dsn:
        return None
    try:
        return pg_conninfo.conninfo_to_dict(dsn).get("password")
    except psycopg.Error:
        return None


def _one_line(exc: BaseException, dsn: str | None) -> str:
    """A psycopg error as one line: the first meaningful line, password scrubbed."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = lines[0] if lines else type(exc).__name__
    for prefix in ("connection failed: ", "connection is bad: "):
        if text.startswith(prefix):
            text = text[len(prefix):]
    return scrub(text, dsn)


def connect(dsn: str, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> psycopg.Connection:
    """A read-only, UTC session with a statement timeout; ConnectorError (password-free)
    when it cannot be had.

    `statement_timeout` ends any one statement (a `pg_sleep` in a `where`, a runaway
    query) after `timeout_seconds`; `idle_in_transaction_session_timeout` ends the session if
    a transaction is left open (a client killed mid-read keeps no snapshot on the bot's
    database), and `client_connection_check_interval` lets the server notice a vanished
    client during a long statement instead of running on.
    """
    shown = scrub(redact_dsn(dsn), dsn)
    try:
        params = pg_conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise ConnectorError(f"{shown}: not a valid Postgres DSN ({_one_line(exc, dsn)})") from None
    params.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    params.setdefault("application_name", APPLICATION_NAME)
    try:
        conn = psycopg.connect(pg_conninfo.make_conninfo(**params), autocommit=True)
    except psycopg.Error as exc:
        raise ConnectorError(f"{shown}: cannot connect: {_one_line(exc, dsn)}") from None
    try:
        conn.execute("SET default_transaction_read_only = on")
        conn.execute("SET TIME ZONE 'UTC'")
        ms = max(1, int(timeout_seconds * 1000))
        conn.execute(f"SET statement_timeout = {ms}")
        conn.execute(f"SET idle_in_transaction_session_timeout = {max(ms, IDLE_IN_TRANSACTION_MS)}")
        if conn.info.server_version >= 140000:
            conn.execute(f"SET client_connection_check_interval = {CONNECTION_CHECK_MS}")
        conn.autocommit = False
        conn.read_only = True
    except psycopg.Error as exc:
        conn.close()
        raise ConnectorError(f"{shown}: cannot set up a read-only session: {_one_line(exc, dsn)}") from None
    return conn


_PRIVILEGE_SQL = """
SELECT r.rolsuper,
       EXISTS (SELECT 1 FROM pg_catalog.pg_proc p
               WHERE p.proname IN ('dblink', 'dblink_exec', 'dblink_connect', 'dblink_connect_u')
                 AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE')),
       EXISTS (SELECT 1 FROM pg_catalog.pg_foreign_data_wrapper w
               WHERE pg_catalog.has_foreign_data_wrapper_privilege(w.oid, 'USAGE'))
FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
"""


def privilege_warning(conn: psycopg.Connection) -> str | None:
    """A warning when the session's role could write despite READ ONLY, else None.

    A superuser can do anything a function lets it (COPY TO PROGRAM, untrusted languages);
    a role that may call dblink or use a foreign-data wrapper can open a second connection
    that no READ ONLY transaction covers. memwatch's `where`/`query` allow-list (only pure
    functions, rules/sql_functions.py) keeps its own SQL from doing so; the warning says the
    role is broader than a reader needs (docs/postgres-sources.md: a read-only role).
    """
    try:
        row = conn.execute(_PRIVILEGE_SQL).fetchone()
        conn.rollback()
    except psycopg.Error:
        try:
            conn.rollback()
        except psycopg.Error:
            pass
        return None
    if row is None:
        return None
    superuser, dblink, fdw = row
    why = [w for w, on in (("is a superuser", superuser), ("may call dblink", dblink),
                           ("may use a foreign-data wrapper (postgres_fdw)", fdw)) if on]
    if not why:
        return None
    return ("WARNING: this role " + " and ".join(why) + "; a read-only session does not bind a second "
            "connection. Connect memwatch as a role with SELECT only (docs/postgres-sources.md)")


def _qualified(schema: str, name: str) -> str:
    return name if schema == "public" else f"{schema}.{name}"


def list_tables(conn: psycopg.Connection) -> tuple[list[TableInfo], dict[str, dict]]:
    """Tables and views outside the system schemas, plus per-table column details.

    Names are `table` in the public schema and `schema.table` elsewhere. The details map
    each name to {"schema", "relname", "types": {col: oid}, "notnull": {col: bool}}.
    """
    rows = conn.execute(_CATALOG_SQL).fetchall()
    conn.rollback()
    tables: dict[str, TableInfo] = {}
    details: dict[str, dict] = {}
    for schema, rel, col, typ, notnull, pk_pos in rows:
        name = _qualified(schema, rel)
        if name not in tables:
            tables[name] = TableInfo(name, [], [], rowid=False)
            details[name] = {"schema": schema, "relname": rel, "types": {}, "notnull": {}, "pk": {}}
        tables[name].columns.append(col)
        details[name]["types"][col] = typ
        details[name]["notnull"][col] = notnull
        if pk_pos is not None:
            details[name]["pk"][col] = pk_pos
    for name, t in tables.items():
        t.pk = sorted(details[name]["pk"], key=details[name]["pk"].get)
    return list(tables.values()), details


def describe_dsn(dsn: str) -> list[TableInfo]:
    """The tables a Postgres database holds (for detection); closes its connection."""
    conn = connect(dsn)
    try:
        return list_tables(conn)[0]
    except psycopg.Error as exc:
        raise ConnectorError(f"{scrub(redact_dsn(dsn), dsn)}: cannot list tables: {_one_line(exc, dsn)}") from None
    finally:
        conn.close()


# -- the connector -----------------------------------------------------------------------

class PostgresConnector(TableConnector):
    """A table (or one read-only SELECT) of a Postgres database, mapped by memwatch.toml."""

    kind = "postgres"
    description = "Postgres table or read-only SELECT (psycopg 3); JSONB paths in the mapping"
    dialect = "postgres"

    def __init__(self, source: SourceConfig):
        super().__init__(source)
        self.conn: psycopg.Connection | None = None
        self.dsn: str | None = None
        self._tables: list[TableInfo] | None = None
        self._details: dict[str, dict] = {}
        self._column_types: dict[str, int] | None = None
        self._privilege_note: str | None = None   # a privileged role, told with the first read

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        dsn = self.source.resolved_dsn
        if not dsn:
            if self.source.dsn_env:
                raise ConnectorError(f"source {self.source.name!r}: environment variable "
                                     f"{self.source.dsn_env} (dsn_env) is not set")
            raise ConnectorError(f"source {self.source.name!r}: no dsn given")
        if self.source.path or self.source.records:
            key = "path" if self.source.path else "records"
            raise ConnectorError(f"source {self.source.name!r}: `{key}` does not apply to a postgres source")
        self.dsn = dsn
        self.conn = connect(dsn, self.source.timeout_seconds)
        # told with the first read (a sync counts the warnings its reads add)
        problem = privilege_warning(self.conn)
        self._privilege_note = f"{self.shown}: {problem}" if problem else None

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.rollback()
            except psycopg.Error:
                pass
            self.conn.close()
            self.conn = None

    @property
    def shown(self) -> str:
        """The DSN as messages show it (no password)."""
        return scrub(self.source.target, self.dsn)

    def _fail(self, exc: psycopg.Error, doing: str) -> ConnectorError:
        try:
            self.conn.rollback()
        except (psycopg.Error, AttributeError):
            pass
        message = _one_line(exc, self.dsn)
        if isinstance(exc, psycopg.errors.QueryCanceled):
            message += (f" (the read took longer than timeout_seconds = {self.source.timeout_seconds:g};"
                        " raise it in this source's [[sources]] entry if the store is that slow)")
        return ConnectorError(f"{self.shown}: {doing}: {message}")

    def describe(self) -> list[TableInfo]:
        if self._tables is None:
            try:
                self._tables, self._details = list_tables(self.conn)
            except psycopg.Error as exc:
                raise self._fail(exc, "cannot list tables") from None
        return self._tables

    def table_info(self, name: str) -> TableInfo:
        tables = self.describe()
        wanted = name[len("public."):] if name.lower().startswith("public.") else name
        for t in tables:
            if t.name == wanted:
                return t
        for t in tables:
            if t.name.lower() == wanted.lower():
                return t
        seen = ", ".join(t.name for t in tables) or "none"
        raise ConnectorError(f"{self.shown}: no table {name!r} (tables: {seen})")

    # -- reading -----------------------------------------------------------------------
    def _from(self) -> tuple[str | None, str | None]:
        """(relname, schema) of the configured table, resolved through the catalog."""
        if self.source.query is not None:
            return None, None
        if not self.source.table:
            raise ConnectorError(f"source {self.source.name!r}: give `table` or `query` in its [[sources]] entry")
        info = self.table_info(self.source.table)
        d = self._details[info.name]
        return d["relname"], d["schema"]

    def query_columns(self) -> list[str]:
        """Result columns (and their type OIDs) of the table or query, from a LIMIT 0 probe."""
        rel, schema = self._from()
        stmt = sqlguard.select_rows(rel, self.source.query, [], self.dialect, schema=schema)
        stmt = stmt.select("*", append=False).limit(0)
        try:
            cur = self.conn.execute(stmt.sql(dialect=self.dialect))
            desc = cur.description or []
            self.conn.rollback()
        except psycopg.Error as exc:
            raise self._fail(exc, "query failed" if self.source.query else "cannot read table") from None
        self._column_types = {d.name: d.type_code for d in desc}
        return [d.name for d in desc]

    def watermark(self, mapping: dict[str, tuple[str, list]]) -> exp.Expression | None:
        """SQL for "when was this row last written", or None when it cannot be had.

        updated_at when mapped (a NOT NULL timestamp column alone, so an index on it
        serves), else COALESCE(updated_at, created_at); created_at alone when updated_at
        is not mapped. Columns must be timestamps, ISO text, or JSON paths to ISO text.
        """
        parts = []
        for key in ("updated_at", "created_at"):
            if key not in mapping:
                continue
            sql = self._timestamp_sql(*mapping[key])
            if sql is None:
                if key == "updated_at":
                    return None      # a watermark on created_at alone would miss updates
                continue
            parts.append((key, sql))
        if not parts:
            return None
        if parts[0][0] == "updated_at" and self._not_null(mapping["updated_at"]):
            return parts[0][1]
        if len(parts) == 1:
            return parts[0][1]
        return exp.Coalesce(this=parts[0][1], expressions=[p[1] for p in parts[1:]])

    def _not_null(self, col_path: tuple[str, list]) -> bool:
        col, path = col_path
        if path or self.source.query is not None:
            return False
        info = self.table_info(self.source.table)
        return bool(self._details[info.name]["notnull"].get(col))

    def _timestamp_sql(self, col: str, path: list) -> exp.Expression | None:
        typ = (self._column_types or {}).get(col)
        column = sqlguard.column(col)
        if not path:
            if typ in TIMESTAMP_TYPES:
                return column
            if typ in CASTABLE_TYPES:
                return exp.cast(column, "timestamptz")
            return None
        if typ in JSON_TYPES and all(isinstance(p, (str, int)) and p != "*" for p in path):
            # col #>> ARRAY['a', 'b']: the text at a JSON path, then cast
            arr = exp.Array(expressions=[exp.Literal.string(str(p)) for p in path])
            return exp.cast(exp.JSONBExtractScalar(this=column, expression=arr), "timestamptz")
        return None

    def build_select(self, mapping: dict, pks: list[str], since: float | None) -> str:
        rel, schema = self._from()
        wanted = []
        for col in [*pks, *(c for c, _ in mapping.values())]:
            if col not in wanted:
                wanted.append(col)
        stmt = sqlguard.select_rows(rel, self.source.query, wanted, self.dialect,
                                    where=self.source.where, schema=schema)
        if since is not None:
            wm = self.watermark(mapping)
            literal = exp.cast(exp.Literal.string(_iso(since)), "timestamptz")
            stmt = stmt.where(exp.GTE(this=wm, expression=literal))
        return stmt.sql(dialect=self.dialect)

    def iter_rows(self, sql: str) -> Iterator[dict[str, Any]]:
        """Stream rows through a named cursor inside one READ ONLY transaction."""
        cur = self.conn.cursor(name=f"memwatch_{os.getpid()}_{next(_names)}", row_factory=dict_row)
        cur.itersize = ITERSIZE
        try:
            cur.execute(sql)
            for row in cur:
                self.rows_read += 1
                yield row
        finally:
            try:
                cur.close()
            except psycopg.Error:
                pass
            try:
                self.conn.rollback()
            except psycopg.Error:
                pass

    def _ensure_connected(self) -> None:
        """Reconnect when the server dropped the session (restart, idle timeout) since the last read."""
        if self.conn is None or self.conn.closed or self.conn.broken:
            if self.conn is not None:
                self.conn.close()
            self.conn = connect(self.dsn, self.source.timeout_seconds)

    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        self._ensure_connected()
        if self._privilege_note:
            self.warn(self._privilege_note)
            self._privilege_note = None
        columns = self.query_columns()
        mapping = self.mapping(columns)
        pks = self._key_columns(columns)
        can_watermark = self.watermark(mapping) is not None
        since = None
        if can_watermark and cursor and cursor.get("watermark") is not None:
            since = float(cursor["watermark"])
        self.read_all = since is None
        newest = since
        try:
            try:
                rows = self._records(self.build_select(mapping, pks, since), pks, mapping)
                for rec in rows:
                    newest = _newer(newest, rec)
                    yield rec
            except psycopg.errors.DataError as exc:
                if since is None:
                    raise
                # a value the watermark cannot cast: fall back to reading everything
                self.warn(f"{self.table_name}: incremental read failed ({_one_line(exc, self.dsn)}); "
                          f"read in full instead")
                self.read_all = True
                for rec in self._records(self.build_select(mapping, pks, None), pks, mapping):
                    newest = _newer(newest, rec)
                    yield rec
        except psycopg.Error as exc:
            raise self._fail(exc, "read failed") from None
        self.cursor = {"watermark": None if newest is None or not can_watermark
                       else newest - WATERMARK_OVERLAP}
        if since is not None and newest == since:
            self.cursor = {"watermark": since}     # nothing newer: keep the old position

    def _records(self, sql: str, pks: list[str], mapping: dict) -> Iterator[Record]:
        for row in self.iter_rows(sql):
            rec = self.row_to_record(row, pks, mapping)
            if rec is not None:
                yield rec

    def _key_columns(self, columns: list[str]) -> list[str]:
        """The primary-key columns, each checked to be among the table's or query's columns."""
        pks = self.pk_columns(columns)
        for p in pks:
            if p not in columns:
                raise ConnectorError(f"source {self.source.name!r}: id = {p!r}: no column {p!r} in "
                                     f"{self.table_name} (columns: {', '.join(columns)})")
        return pks

    def keys(self) -> Iterator[dict[str, str]]:
        """Primary keys only (the deletion pass): one streamed SELECT of the key columns under
        the source's `where`; the same pk dicts as read() gives."""
        self._ensure_connected()
        pks = self._key_columns(self.query_columns())
        rel, schema = self._from()
        sql = sqlguard.select_rows(rel, self.source.query, pks, self.dialect, where=self.source.where,
                                   schema=schema).sql(dialect=self.dialect)
        before = self.rows_read
        try:
            for row in self.iter_rows(sql):
                self.keys_read += 1
                yield {p: _pk_text(row.get(p)) for p in pks}
        except psycopg.Error as exc:
            raise self._fail(exc, "key scan failed") from None
        finally:
            self.rows_read = before   # keys are counted in keys_read, not rows_read

    def fetch(self, pks: Iterable[dict[str, str]]) -> Iterator[Record]:
        """Records by primary key (rows the deletion pass found missing from the overlay):
        `WHERE (k1 = '…' AND k2 = '…') OR …` a batch of keys at a time. The key text goes in
        as an untyped literal, so the server reads it as the column's own type and its index
        serves the lookup."""
        self._ensure_connected()
        columns = self.query_columns()         # one LIMIT 0 probe for the mapping and the keys
        mapping = self.mapping(columns)
        key_cols = self._key_columns(columns)
        rel, schema = self._from()
        wanted = list(dict.fromkeys([*key_cols, *(c for c, _ in mapping.values())]))
        todo = iter(dict.fromkeys(tuple(pk[p] for p in key_cols) for pk in pks))
        try:
            while batch := list(itertools.islice(todo, FETCH_BATCH)):
                want = set(batch)
                match = exp.or_(*(exp.and_(*(exp.EQ(this=sqlguard.column(p), expression=exp.Literal.string(v))
                                             for p, v in zip(key_cols, key)))
                                  for key in sorted(want)))
                stmt = sqlguard.select_rows(rel, self.source.query, wanted, self.dialect,
                                            where=self.source.where, schema=schema).where(match)
                for rec in self._records(stmt.sql(dialect=self.dialect), key_cols, mapping):
                    if tuple(rec.pk[p] for p in key_cols) in want:
                        yield rec
        except psycopg.Error as exc:
            raise self._fail(exc, "fetch failed") from None


def _newer(current: float | None, rec: Record) -> float | None:
    t = rec.updated_at if rec.updated_at is not None else rec.created_at
    if t is None:
        return current
    return t if current is None or t > current else current


def _iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).isoformat()
