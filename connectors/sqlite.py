"""SQLite sources, opened read-only: `file:…?mode=ro` with a busy timeout and `query_only`.

Never `immutable=1` (a live bot writes this file) and never a long-held transaction:
a full read pages through the table by rowid (each page one short statement, so a
bot in rollback-journal mode is never blocked for long, and in that mode, when the daemon
reads, a pause after each page as long as the page held the lock), an incremental read is one statement over
what changed.

Incremental reads (the daemon) use a cursor `{"rowid": R, "updated_at": W}`:
- inserts: `rowid > R` (SQLite hands out rowids in commit order: one writer at a time);
- updates: `updated_at > W`, or `= W` for rows not already read at W (kept by rowid in
  the cursor), when `updated_at` is mapped to a plain column: a second write in the
  same clock tick as the mark is not lost, and rows sharing the mark are not re-read.
  With an index on that column this is a seek and every read includes it. Without
  one it is a table scan, so it runs at most every `update_scan_seconds` (the daemon
  sets it; 0 = every read) and reads in between take inserts by rowid only, leaving
  the mark alone; `deferred_until` tells the daemon when the deferred scan is due.
  Measured in benchmarks/bench_daemon.py; `CREATE INDEX … ON t(updated_at)` on the
  bot's side removes the delay.
- `has_changes()` asks `PRAGMA data_version` (microseconds, no table read) first, so a
  tick on an unchanged store reads nothing at all.
Deletions are found apart, by `keys()` (primary keys only) at a lower frequency.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import time
import urllib.parse
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from sqlglot import exp

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.sqlite_files import special_sidecar
from memwatch_overlay.rules.config import SourceConfig
from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.base import Record, TableInfo, require_readable_file
from memwatch_overlay.connectors.tabular import _ROW_TO_RECORD, ROWID, TableConnector, _pk_text  # noqa: F401 (ROWID, _pk_text re-exported)

DEFAULT_BUSY_TIMEOUT = 5.0   # seconds a read waits for a writer's lock
FETCH_BATCH = 1000
PAGE_ROWS = 10000            # rows per statement when a full read or a key pass pages by rowid
RECORDS_AT_CHUNK = 500       # rowids per statement of records_at(), the set comparison's differing rows
PROGRESS_STEPS = 10000       # SQLite VM steps between two looks at a statement's deadline
# A rollback-journal store (journal_mode DELETE/TRUNCATE/PERSIST): a reader's SHARED lock
# blocks the bot's COMMIT, so when the daemon reads (the connector's `yield_to_writer`;
# a one-shot audit does not pause) between two pages of a full read or key pass (no lock
# held) the reader waits PACE_FACTOR times as long as the page held the lock: it holds the
# lock at most about half the time. Pages stay PAGE_ROWS: each collision costs the bot at least
# SQLite's busy-handler sleep (1, 2, 5 ms...), so ten times more, smaller pages made its
# p95 worse in benchmarks/bench_bot_latency.py. WAL stores are not paced (readers never
# block the writer there).
ROLLBACK_PAGE_ROWS = PAGE_ROWS
PACE_FACTOR = 1.0


def open_readonly(path: Path, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> sqlite3.Connection:
    """A read-only connection that cannot write even by mistake."""
    require_readable_file(path, "SQLite file")
    if path.is_dir():
        raise ConnectorError(f"{path}: is a directory, not a SQLite file")
    problem = special_sidecar(path)
    if problem:
        raise ConnectorError(f"{problem}; refusing to open {path}")
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, check_same_thread=False)
        conn.execute("PRAGMA query_only = 1")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if _is_locked(exc):
            raise ConnectorError(f"{path}: locked by another connection for more than "
                                 f"{busy_timeout:g} s ({exc})") from None
        raise ConnectorError(f"{path}: cannot open ({exc})") from None
    except sqlite3.DatabaseError as exc:
        raise ConnectorError(f"{path}: not a readable SQLite database ({exc})") from None
    return conn


def _is_locked(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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
    reads_own_file = True       # (a source snapshot hashes the file, with its -wal and -journal)
    # Columns a preset reads beyond the mapping (memlife's superseded_by...); absent ones are skipped.
    extra_columns: tuple[str, ...] = ()
    # Whether read() yields one record per table row under the mapped key, so the key-only
    # deletion pass and key lookups serve. None: only when read() is not overridden (an event
    # log or a conversation log yields something else and falls back to full reads).
    rows_are_records: bool | None = None

    def __init__(self, source: SourceConfig, busy_timeout: float = DEFAULT_BUSY_TIMEOUT):
        super().__init__(source)
        self.busy_timeout = busy_timeout
        self._deadline: float | None = None   # when the running statement must be done (monotonic)
        self.conn: sqlite3.Connection | None = None
        self._tables: list[TableInfo] | None = None
        self._inode: int | None = None
        self._data_version: int | None = None
        self._schema_version: int | None = None
        self.update_scan_seconds = 0.0          # unindexed updated_at: scan for updates at most this often
        self.deferred_until: float | None = None  # after read(): when the deferred update scan is due
        self._indexed: dict[str, bool] = {}
        self._rollback: bool | None = None      # journal mode seen at open (None: not asked yet)
        self.yield_to_writer = False            # pace rollback-journal reads (the daemon sets it)
        self.sleep = time.sleep                 # the pacing between pages (a test records it)
        self.pauses = 0                         # pacing pauses taken (counted, for tests/benchmarks)

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        path = self.source.resolved_path
        if path is None:
            raise ConnectorError(f"source {self.source.name!r}: no path given")
        self.conn = open_readonly(path, self.busy_timeout)
        # Every statement (and every batch fetched from it) must finish within the source's
        # timeout_seconds: an infinite recursive CTE in a `where` ends with an error.
        self._deadline = None
        self.conn.set_progress_handler(self._past_deadline, PROGRESS_STEPS)
        self._inode = _inode(path)
        self._data_version = None
        self._schema_version = None
        self._tables = None
        self._indexed = {}
        self._rollback = None

    def rollback_journal(self) -> bool:
        """Whether the store is in a rollback-journal mode (its readers block the writer)."""
        if self._rollback is None:
            cur = self._execute("PRAGMA journal_mode", ())
            try:
                mode = str(cur.fetchall()[0][0]).lower()
            except (sqlite3.DatabaseError, IndexError):
                mode = "delete"
            finally:
                cur.close()
            self._rollback = mode != "wal"
        return self._rollback

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def watch_paths(self) -> list[Path]:
        path = self.source.resolved_path
        if path is None:
            return []
        # WAL commits touch only `-wal`; rollback-journal commits the main file and `-journal`.
        return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-journal")]

    def has_changes(self) -> bool:
        """`PRAGMA data_version` moves when another connection commits; a replaced file reopens.

        Raises ConnectorError when the file is gone or unreadable (the daemon reports it).
        """
        path = self.source.resolved_path
        inode = _inode(path)
        if inode is None:
            raise ConnectorError(f"{path}: no such file")
        if self.conn is None or inode != self._inode:
            self.close()
            self.open()
        version = self._pragma("data_version")
        changed = version != self._data_version
        self._data_version = version
        if changed:
            schema = self._pragma("schema_version")
            if schema != self._schema_version:
                self._tables = None   # tables, columns or indexes moved: describe again
                self._indexed.clear()
                self._schema_version = schema
        return changed

    def _pragma(self, name: str) -> int:
        cur = self._execute(f"PRAGMA {name}", ())
        try:
            return cur.fetchall()[0][0]
        except sqlite3.DatabaseError as exc:
            raise ConnectorError(f"{self.source.target}: unreadable ({exc})") from None
        finally:
            cur.close()

    def indexed(self, column: str) -> bool:
        """Whether a (non-partial) index of the source table starts with `column`."""
        if self.source.query is not None or not self.source.table:
            return False
        if column not in self._indexed:
            table = self.table_info(self.source.table).name
            found = False
            for _, name, _, _, is_partial in self._execute(
                    "SELECT seq, name, \"unique\", origin, partial FROM pragma_index_list(?)", (table,)).fetchall():
                first = self._execute("SELECT name FROM pragma_index_info(?) WHERE seqno = 0", (name,)).fetchall()
                if not is_partial and first and first[0][0] == column:
                    found = True
                    break
            self._indexed[column] = found
        return self._indexed[column]

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

    def _past_deadline(self) -> int:
        """SQLite's progress handler: non-zero interrupts the running statement."""
        return 1 if self._deadline is not None and time.monotonic() > self._deadline else 0

    def _arm(self) -> None:
        self._deadline = time.monotonic() + self.source.timeout_seconds

    def _timed_out(self) -> ConnectorError:
        return ConnectorError(f"{self.source.target}: a read took longer than timeout_seconds = "
                              f"{self.source.timeout_seconds:g} and was stopped (check this source's "
                              "where/query, or raise timeout_seconds in its [[sources]] entry)")

    def _execute(self, sql: str, params: tuple) -> sqlite3.Cursor:
        self._arm()
        try:
            return self.conn.execute(sql, params)
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc).lower():
                raise self._timed_out() from None
            if _is_locked(exc):
                raise ConnectorError(f"{self.source.target}: locked by another connection for more than "
                                     f"{self.busy_timeout:g} s ({exc})") from None
            raise ConnectorError(f"{self.source.target}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise ConnectorError(f"{self.source.target}: unreadable ({exc})") from None

    def iter_rows(self, sql: str, params: tuple = ()) -> Iterator[dict[str, Any]]:
        """Stream rows as dicts, FETCH_BATCH at a time; counts rows_read."""
        names: list[str] = []
        for batch in self.iter_batches(sql, params, names):
            for row in batch:
                yield dict(zip(names, row))

    def iter_batches(self, sql: str, params: tuple = (), names: list[str] | None = None) -> Iterator[list[tuple]]:
        """Stream rows as tuples, FETCH_BATCH at a time; counts rows_read. `names`, when
        given, is filled with the result's column names before the first batch."""
        cur = self._execute(sql, params)
        if names is not None:
            names[:] = [d[0] for d in cur.description]
        try:
            while True:
                self._arm()
                try:
                    batch = cur.fetchmany(FETCH_BATCH)
                except sqlite3.DatabaseError as exc:
                    if "interrupted" in str(exc).lower():
                        raise self._timed_out() from None
                    raise ConnectorError(f"{self.source.target}: read failed ({exc})") from None
                if not batch:
                    break
                self.rows_read += len(batch)
                yield batch
        finally:
            cur.close()

    def _plan(self) -> tuple[dict, list[str], list[str], bool, str | None]:
        """mapping, pk columns, selected columns (with `extra_columns`), whether rowid is
        usable, and the updated_at column usable as a mark (a plain column, no JSON path)."""
        columns = self.query_columns()
        mapping = self.mapping(columns)
        pks = self.pk_columns(columns)
        wanted = []
        extra_cols = [c for c in self.extra_columns if c in columns]
        for col in [*(p for p in pks if p != ROWID), *(c for c, _ in mapping.values()), *extra_cols]:
            if col not in wanted:
                wanted.append(col)
        use_rowid = self.source.query is None and self.table_info(self.source.table).rowid
        watermark = None
        if "updated_at" in mapping and not mapping["updated_at"][1]:
            watermark = mapping["updated_at"][0]
        return mapping, pks, wanted, use_rowid, watermark

    def _select(self, wanted: list[str], use_rowid: bool) -> exp.Select:
        extra = [sqlguard.sqlglot_rowid()] if use_rowid else []
        return sqlguard.select_rows(self.source.table, self.source.query, wanted, self.dialect,
                                    where=self.source.where, extra=extra)

    def base_select(self) -> tuple[exp.Select, list[str], bool]:
        """The mapped columns (plus `extra_columns`), without a cursor filter or order.

        Returns the statement, the pk columns and whether rowid is selected as ROWID.
        """
        _, pks, wanted, use_rowid, _ = self._plan()
        return self._select(wanted, use_rowid), pks, use_rowid

    def build_select(self, cursor: dict | None) -> tuple[str, tuple, list[str]]:
        """The incremental statement for `cursor` (the whole table when None)."""
        mapping, pks, wanted, use_rowid, watermark = self._plan()
        stmt = self._select(wanted, use_rowid)
        stmt, params = self._changed_since(stmt, cursor or {}, use_rowid, watermark)
        if use_rowid and not (watermark and (cursor or {}).get("updated_at") is not None):
            stmt = stmt.order_by(exp.column("rowid"))
        return stmt.sql(dialect=self.dialect), params, pks

    def _changed_since(self, stmt: exp.Select, cursor: dict, use_rowid: bool,
                       watermark: str | None) -> tuple[exp.Select, tuple]:
        """rowid > R  OR  updated_at > W  OR  (updated_at = W AND not one of the rows already read at W)."""
        conds: list[exp.Expression] = []
        params: list = []
        rowid = exp.column("rowid")
        if use_rowid and cursor.get("rowid") is not None:
            conds.append(exp.GT(this=rowid, expression=exp.Placeholder()))
            params.append(int(cursor["rowid"]))
        mark = cursor.get("updated_at")
        if watermark and mark is not None:
            col = sqlguard.column(watermark)
            conds.append(exp.GT(this=col, expression=exp.Placeholder()))
            params.append(mark)
            at_mark = exp.EQ(this=col, expression=exp.Placeholder())
            params.append(mark)
            seen = cursor.get("at_mark")
            if use_rowid and seen:
                at_mark = exp.and_(at_mark, exp.Not(this=exp.In(
                    this=rowid, expressions=[exp.Placeholder() for _ in seen])))
                params.extend(int(r) for r in seen)
            elif use_rowid and cursor.get("mark_rowid") is not None:
                at_mark = exp.and_(at_mark, exp.GT(this=rowid, expression=exp.Placeholder()))
                params.append(int(cursor["mark_rowid"]))
            conds.append(exp.paren(at_mark))
        if not conds:
            return stmt, ()
        return stmt.where(exp.paren(exp.or_(*conds)) if len(conds) > 1 else conds[0]), tuple(params)

    _plain_next = False     # read_for_compare(): the next read() yields plain rows as tuples

    def read_for_compare(self, cursor: dict | None = None) -> Iterator:
        """read(), with plain rows as tuples (base.Connector.read_for_compare); a preset's own
        read() yields its Records."""
        self._plain_next = type(self).read is SqliteConnector.read
        return self.read(cursor)

    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        """Full read (cursor None) paged by rowid, or one statement over what changed.

        The new cursor's `updated_at` mark is exact: an incremental read is one statement
        (one snapshot) that returns every row at or above the old mark; a full read takes
        the mark before its first page, so writes during the pages are read again next time.
        Rows sitting exactly at the mark are remembered by rowid (`at_mark`, up to
        MARK_ROWIDS of them; beyond that, bulk rows sharing one timestamp, by the largest
        rowid) so they are not read again, while another write in the same clock tick is.
        """
        plain, self._plain_next = self._plain_next, False
        return self._read(cursor, plain)

    def _read(self, cursor: dict | None, plain: bool) -> Iterator:
        """read()'s rows (`plain`: plain rows as tabular.tuple_plain's tuples)."""
        mapping, pks, wanted, use_rowid, watermark = self._plan()
        cursor = dict(cursor or {})
        self.deferred_until = None
        incremental = bool(cursor) and (
            (use_rowid and cursor.get("rowid") is not None) or (watermark and cursor.get("updated_at") is not None))
        last_rowid = cursor.get("rowid")
        now = time.time()
        scan_updates = bool(watermark)
        if watermark and incremental and use_rowid and cursor.get("updated_at") is not None \
                and self.update_scan_seconds > 0 and not self.indexed(watermark):
            due = (cursor.get("scanned_at") or 0) + self.update_scan_seconds
            if now < due:
                scan_updates = False          # inserts by rowid only; the mark waits for the scan
                self.deferred_until = due
        mark = _Mark(cursor if incremental else {}, watermark is not None)
        if watermark and (not incremental or cursor.get("updated_at") is None):
            mark.fix(self._max_of(watermark))   # before the rows: later writes are >= this
            if incremental and use_rowid:
                cursor.update(mark.as_cursor())  # an old rowid-only cursor gains a mark
        names: list[str] = []
        if incremental:
            stmt, params = self._changed_since(self._select(wanted, use_rowid), cursor, use_rowid,
                                               watermark if scan_updates else None)
            # No ORDER BY with the OR: it would make SQLite walk the whole table in rowid
            # order instead of seeking the rowid range and the updated_at index.
            if use_rowid and not (scan_updates and cursor.get("updated_at") is not None):
                stmt = stmt.order_by(exp.column("rowid"))
            batches = self.iter_batches(stmt.sql(dialect=self.dialect), params, names)
        elif use_rowid:
            batches = self._page_batches(self._select(wanted, True), last_rowid, names)
        else:
            batches = self.iter_batches(self._select(wanted, False).sql(dialect=self.dialect), (), names)
        # Rows stay tuples: `names` is known once the first statement ran.
        record = plain_of = None
        for batch in batches:
            if record is None:
                record = self.tuple_records(names, pks, mapping) or partial(self._dict_record, names, pks, mapping)
                if plain:      # read_for_compare(): plain rows as tuples (tabular.tuple_plain)
                    plain_of = self.tuple_plain(names, pks, mapping, record)
                rid_at = names.index(ROWID) if ROWID in names else None
                mark_at = names.index(watermark) if scan_updates and watermark in names else None
            for row in batch:
                rid = None if rid_at is None else row[rid_at]
                if rid is not None and (last_rowid is None or rid > last_rowid):
                    last_rowid = rid
                if scan_updates:
                    # the digest is taken only for a row at the mark (a handful per read)
                    mark.see(None if mark_at is None else row[mark_at], rid, partial(_tuple_digest, names, row))
                if plain_of is not None:
                    values = plain_of(row)
                    if values is not None:
                        yield values
                        continue
                rec = record(row)
                if rec is not None:
                    yield rec
        if incremental and scan_updates and use_rowid and cursor.get("at_mark"):
            yield from self._recheck_mark(wanted, watermark, cursor, mark, pks, mapping)
        if scan_updates:
            self.cursor = {"rowid": last_rowid, **mark.as_cursor(), "scanned_at": now}
        else:
            self.cursor = {**cursor, "rowid": last_rowid}

    def _dict_record(self, names: list[str], pks: list[str], mapping: dict, row: tuple) -> Record | None:
        """row_to_record of a row given as a tuple (presets, JSON paths: tuple_records declined)."""
        return self.row_to_record(dict(zip(names, row)), pks, mapping)

    def _recheck_mark(self, wanted: list[str], watermark: str, cursor: dict, mark: "_Mark",
                      pks: list[str], mapping: dict) -> Iterator[Record]:
        """Rows already read at the mark, read again: a second write to the same row within
        the same clock second leaves `updated_at` equal to the mark, so only its content tells.

        At most MARK_ROWIDS rows, by rowid; a row whose content is unchanged is not counted in
        rows_read nor yielded (bulk rows past MARK_ROWIDS are remembered by the largest rowid
        only and not rechecked: docs/daemon.md).
        """
        seen = [int(r) for r in cursor["at_mark"]]
        known = cursor.get("mark_hashes") or {}
        col = sqlguard.column(watermark)
        stmt = self._select(wanted, True).where(exp.and_(
            exp.EQ(this=col, expression=exp.Placeholder()),
            exp.In(this=exp.column("rowid"), expressions=[exp.Placeholder() for _ in seen])))
        before = self.rows_read
        changed = 0
        for row in self.iter_rows(stmt.sql(dialect=self.dialect), (cursor["updated_at"], *seen)):
            rid = row.get(ROWID)
            digest = _row_digest(row)
            mark.see(row.get(watermark), rid, lambda: digest)
            if known.get(str(rid)) == digest:
                continue
            changed += 1
            rec = self.row_to_record(row, pks, mapping)
            if rec is not None:
                yield rec
        self.rows_read = before + changed

    def _pages(self, stmt: exp.Select, after: int | None = None) -> Iterator[dict[str, Any]]:
        """_page_batches' rows as dicts."""
        names: list[str] = []
        for page in self._page_batches(stmt, after, names):
            for row in page:
                yield dict(zip(names, row))

    def _page_batches(self, stmt: exp.Select, after: int | None = None,
                      names: list[str] | None = None) -> Iterator[list[tuple]]:
        """`stmt` in rowid order, one statement per page; each page is fetched whole and its
        statement closed before the rows are handed on, so no read lock outlives a page and
        no read transaction spans two pages (autocommit: a SELECT ends its own).

        Rollback-journal stores read by the daemon (`yield_to_writer`): after each page a
        pause of PACE_FACTOR × the time the page held the lock, during which the bot's writes
        go through. WAL stores and one-shot audits: no pause.
        """
        names = [] if names is None else names
        rollback = self.yield_to_writer and self.rollback_journal()
        size = ROLLBACK_PAGE_ROWS if rollback else PAGE_ROWS
        sqls: dict[bool, str] = {}   # rowid bound or not -> the page's SQL, generated once (~2 ms a page)
        while True:
            bounded = after is not None
            params: tuple = (after,) if bounded else ()
            sql = sqls.get(bounded)
            if sql is None:
                page = stmt.where(exp.GT(this=exp.column("rowid"), expression=exp.Placeholder())) if bounded else stmt
                sql = sqls[bounded] = page.order_by(exp.column("rowid")).limit(size).sql(dialect=self.dialect)
            started = time.monotonic()
            rows = [row for batch in self.iter_batches(sql, params, names) for row in batch]
            held = time.monotonic() - started
            more = len(rows) == size
            if more:
                # Paused before the rows are handed on: the caller's work on them (the
                # overlay write) would otherwise add to the pause.
                self.pace(held)
            yield rows
            if not more:
                return
            after = rows[-1][names.index(ROWID)]

    def _max_of(self, column: str):
        stmt = self._select([], False).select(
            exp.Max(this=sqlguard.column(column)), append=False)
        cur = self._execute(stmt.sql(dialect=self.dialect), ())
        try:
            value = cur.fetchall()[0][0]
        finally:
            cur.close()
        return None if isinstance(value, (bytes, bytearray)) else value

    def keys(self) -> Iterator[dict[str, str]]:
        """Primary keys only (the deletion pass), paged by rowid; same pk dicts as read()."""
        if not self._rows_are_records():
            yield from super().keys()   # a preset with its own read() knows its own keys
            return
        pks = self.pk_columns(self.query_columns())
        cols = [p for p in pks if p != ROWID]
        use_rowid = self.source.query is None and self.table_info(self.source.table).rowid
        stmt = self._select(cols, use_rowid)
        names: list[str] = []
        batches = (self._page_batches(stmt, None, names) if use_rowid else
                   self.iter_batches(stmt.sql(dialect=self.dialect), (), names))
        before = self.rows_read
        try:
            for batch in batches:
                where = {name: i for i, name in enumerate(names)}   # the last of a repeated name, as a dict keeps
                at = [(p, where.get(p)) for p in pks]
                for row in batch:
                    self.keys_read += 1
                    yield {p: "" if i is None else _pk_text(row[i]) for p, i in at}
        finally:
            self.rows_read = before   # keys are counted in keys_read, not rows_read

    def _rows_are_records(self) -> bool:
        flag = type(self).rows_are_records
        return type(self).read is SqliteConnector.read if flag is None else flag

    def fetch(self, pks: Iterable[dict[str, str]]) -> Iterator[Record]:
        """Records by primary key: one indexed lookup each."""
        if not self._rows_are_records():
            yield from super().fetch(pks)
            return
        mapping, pk_cols, wanted, use_rowid, _ = self._plan()
        stmt = self._select(wanted, use_rowid)
        for p in pk_cols:
            col = exp.column("rowid") if p == ROWID else sqlguard.column(p)
            stmt = stmt.where(exp.EQ(this=col, expression=exp.Placeholder()))
        sql = stmt.sql(dialect=self.dialect)
        for pk in pks:
            params = tuple(int(pk[p]) if p == ROWID else pk[p] for p in pk_cols)
            for row in self.iter_rows(sql, params):
                rec = self.row_to_record(row, pk_cols, mapping)
                if rec is not None:
                    yield rec

    # -- the re-audit's set comparison (overlay/store/compare.py runs it) ------------------
    def compare_spec(self) -> "CompareSpec | None":
        """What the overlay needs to compare this table with its stored facts in SQL (the
        table ATTACHed read-only): None when read() is not a plain mapping of one rowid table
        (a preset's own read or row_to_record, extra columns, `query`, `where`, a JSON path
        in the mapping, a view or WITHOUT ROWID table). Those keep the Record-by-Record path."""
        source = self.source
        cls = type(self)
        if (cls.read is not SqliteConnector.read or cls.row_to_record is not _ROW_TO_RECORD or self.extra_columns
                or source.query is not None or source.where or not source.table or source.resolved_path is None):
            return None
        columns = self.query_columns()
        mapping = self.mapping(columns)
        if any(path for _, path in mapping.values()):
            return None
        pks = self.pk_columns(columns)
        info = self.table_info(source.table)
        _, _, wanted, use_rowid, _ = self._plan()
        if not use_rowid or ROWID in wanted or len(set(wanted)) != len(wanted):
            return None
        types = {name: (decl or "").upper() for name, decl in self._execute(
            "SELECT name, type FROM pragma_table_info(?)", (info.name,)).fetchall()}

        def col(name: str) -> str:
            return sqlguard.column(name).sql(dialect="sqlite")

        # a one-column key with no index of its own is the rowid's alias: it holds integers only
        # (`INTEGER PRIMARY KEY DESC` or `INT PRIMARY KEY` has an index and may hold text)
        alias = len(info.pk) == 1 and not self._execute(
            "SELECT 1 FROM pragma_index_list(?) WHERE origin = 'pk'", (info.name,)).fetchall()
        pk = [CompareKey(_json_text(p), "rowid" if p == ROWID else col(p), p == ROWID or (alias and info.pk == [p]),
                         p == ROWID or info.pk == [p])
              for p in pks]
        fields = {k: CompareField(col(c), _text_affinity(types.get(c, ""))) for k, (c, _) in mapping.items()}
        uri = "file:" + urllib.parse.quote(str(source.resolved_path.resolve())) + "?mode=ro"
        return CompareSpec(uri, source.resolved_path.resolve(), sqlguard.table(source.table).sql(dialect="sqlite"),
                           self.table_name, pk, fields, self.busy_timeout, tuple(col(c) for c in wanted))

    def row_records(self) -> Callable[[tuple], Record | None]:
        """record(row) -> the Record read() makes of a row given as a tuple of the CompareSpec's
        `columns` followed by its rowid (the SQL first load's rows it leaves to Python,
        overlay/store/bulk_load.py); None for a row read() skips."""
        mapping, pks, wanted, _, _ = self._plan()
        names = [*wanted, ROWID]
        return self.tuple_records(names, pks, mapping) or partial(self._dict_record, names, pks, mapping)

    def pace(self, held: float) -> None:
        """After a page that held the source `held` seconds: the daemon's pause on a
        rollback-journal store (`yield_to_writer`, PACE_FACTOR); nothing otherwise."""
        if self.yield_to_writer and self.rollback_journal():
            self.pauses += 1
            self.sleep(held * PACE_FACTOR)

    def records_at(self, rowids: Iterable[int]) -> Iterator[Record]:
        """The Records of these rows (by rowid, in rowid order), as read() gives them: the
        rows the set comparison could not match with a fact. Not counted in rows_read (the
        comparison counted them: count_rows_read)."""
        mapping, pks, wanted, _, _ = self._plan()
        record = None
        ids = sorted(rowids)
        before = self.rows_read
        sqls: dict[int, str] = {}   # chunk size -> its SQL, generated once (sqlglot, ~2 ms a statement)
        try:
            for i in range(0, len(ids), RECORDS_AT_CHUNK):
                chunk = ids[i:i + RECORDS_AT_CHUNK]
                sql = sqls.get(len(chunk))
                if sql is None:
                    stmt = self._select(wanted, True).where(exp.In(
                        this=exp.column("rowid"), expressions=[exp.Placeholder() for _ in chunk]))
                    sql = sqls[len(chunk)] = stmt.order_by(exp.column("rowid")).sql(dialect=self.dialect)
                names: list[str] = []
                for batch in self.iter_batches(sql, tuple(chunk), names):
                    if record is None:
                        record = self.tuple_records(names, pks, mapping) or partial(self._dict_record, names, pks,
                                                                                    mapping)
                    for row in batch:
                        rec = record(row)
                        if rec is not None:
                            yield rec
        finally:
            self.rows_read = before

    def largest_rowid(self) -> int | None:
        """The table's largest rowid (None when empty): where a full read ends, and a bound on
        the rows for a source snapshot."""
        cur = self._execute(self._select([], False).select(
            exp.Max(this=exp.column("rowid")), append=False).sql(dialect=self.dialect), ())
        try:
            return cur.fetchall()[0][0]
        finally:
            cur.close()

    def rows_bound(self) -> int:
        """The mapped table's largest rowid (0 for a query, a view, a WITHOUT ROWID table)."""
        if self.source.query is not None or not self.source.table:
            return 0
        try:
            return self.largest_rowid() or 0
        except (ConnectorError, sqlite3.Error):
            return 0

    def unchanged_cursor(self, cursor: dict) -> dict:
        """The update scan a full read does is as good as done now (`scanned_at`; nothing
        deferred, as after a full read)."""
        self.deferred_until = None
        cursor = dict(cursor)
        if "scanned_at" in cursor:
            cursor["scanned_at"] = time.time()
        return cursor

    def full_read_cursor(self) -> dict:
        """The cursor read(None) would leave (the largest rowid; with a mapped updated_at, the
        mark taken before the rows and the rows sitting at it, with their digests), without
        reading every row: only the rows at the mark are read (not counted in rows_read)."""
        mapping, pks, wanted, use_rowid, watermark = self._plan()
        self.deferred_until = None
        now = time.time()
        mark = _Mark({}, watermark is not None)
        before = self.rows_read
        try:
            if watermark:
                mark.fix(self._max_of(watermark))
                if mark.value is not None:
                    stmt = self._select(wanted, True).where(exp.EQ(
                        this=sqlguard.column(watermark), expression=exp.Placeholder())).order_by(exp.column("rowid"))
                    names: list[str] = []
                    for batch in self.iter_batches(stmt.sql(dialect=self.dialect), (mark.value,), names):
                        rid_at, mark_at = names.index(ROWID), names.index(watermark)
                        for row in batch:
                            mark.see(row[mark_at], row[rid_at], partial(_tuple_digest, names, row))
            last_rowid = self.largest_rowid()
        finally:
            self.rows_read = before
        if watermark:
            return {"rowid": last_rowid, **mark.as_cursor(), "scanned_at": now}
        return {"rowid": last_rowid}


class CompareKey(NamedTuple):
    """One primary-key column of a CompareSpec: its name as pk_json writes it (JSON text),
    the column's SQL (`rowid` for the implicit key), whether it always holds an integer,
    and whether a lookup by it is indexed (rowid, or the table's own one-column key)."""

    json_name: str
    sql: str
    integer: bool
    indexed: bool


class CompareField(NamedTuple):
    """A mapped column of a CompareSpec: its quoted SQL and whether it has TEXT affinity
    (then it holds only text, NULL or blobs: a text comparison needs no type check)."""

    sql: str
    text_affinity: bool


class CompareSpec(NamedTuple):
    """A SQLite source table as the overlay's set comparison reads it: the read-only URI to
    ATTACH, the file it must name, the quoted table, the Record's `table`, the key columns,
    the mapped columns (mapping key -> CompareField), how long a lock is waited for, and the
    columns read() selects (the SQL first load copies them)."""

    uri: str
    path: Path
    table_sql: str
    table_name: str
    pk: list[CompareKey]
    fields: dict[str, CompareField]
    busy_timeout: float
    columns: tuple[str, ...] = ()      # the columns read() selects, quoted, in its order (rowid apart)


def _json_text(name: str) -> str:
    """A pk column's name as pk_json() writes it (json.dumps of a str, ASCII only)."""
    return json.dumps(name)


def _text_affinity(declared: str) -> bool:
    """SQLite's affinity rule for a declared column type: TEXT unless it says INT."""
    return "INT" not in declared and any(t in declared for t in ("CHAR", "CLOB", "TEXT"))


def _inode(path: Path | None) -> int | None:
    try:
        return path.stat().st_ino if path is not None else None
    except OSError:
        return None


MARK_ROWIDS = 256   # rows at the updated_at mark remembered by rowid in the cursor


class _Mark:
    """The `updated_at` part of a cursor: the mark and the rows already read at it."""

    def __init__(self, cursor: dict, enabled: bool):
        self.value = cursor.get("updated_at") if enabled else None
        self.at: list[int] | None = list(cursor.get("at_mark") or []) or None
        self.hashes: dict[str, str] = dict(cursor.get("mark_hashes") or {}) if enabled else {}
        self.max_rowid = cursor.get("mark_rowid")
        self.fixed = False
        if self.value is not None and self.at is None and self.max_rowid is None:
            self.at = []

    def fix(self, value: Any) -> None:
        """A mark taken before a paged read: rows above it are not folded in."""
        self.value = None if isinstance(value, (bytes, bytearray, memoryview)) else value
        self.at, self.max_rowid, self.fixed = [], None, True
        self.hashes = {}

    def see(self, value: Any, rowid: int | None, digest: Callable[[], str] | None = None) -> None:
        """Fold in a row's `updated_at` value; `digest()` gives the row's _row_digest, asked
        only for a row sitting at the mark."""
        if value is None or (self.fixed and (self.value is None or value != self.value)):
            return    # a fixed mark only collects the rows sitting exactly at it
        if isinstance(value, (bytes, bytearray, memoryview)):
            return
        if self.value is None or _order(value) > _order(self.value):
            if self.fixed:
                return    # written during a paged read: stays above the mark, read next time
            self.value, self.at, self.max_rowid = value, [], None
            self.hashes = {}
        if value != self.value or rowid is None:
            return
        if self.at is not None:
            if rowid not in self.at:
                self.at.append(rowid)
            if digest is not None:
                self.hashes[str(rowid)] = digest()
            if len(self.at) > MARK_ROWIDS:
                self.max_rowid, self.at, self.hashes = max(self.at), None, {}
        elif self.max_rowid is None or rowid > self.max_rowid:
            self.max_rowid = rowid

    def as_cursor(self) -> dict:
        out: dict = {"updated_at": self.value}
        if self.at is not None:
            out["at_mark"] = sorted(self.at)
            kept = {str(r) for r in self.at}
            out["mark_hashes"] = {k: v for k, v in self.hashes.items() if k in kept}
        else:
            out["mark_rowid"] = self.max_rowid
        return out


def _row_digest(row: dict) -> str:
    """A short hash of a row's selected values: tells a rewrite at the same updated_at."""
    return hashlib.blake2b(repr(sorted(row.items())).encode("utf-8", "surrogatepass"),
                           digest_size=8).hexdigest()


def _tuple_digest(names: list[str], row: tuple) -> str:
    """_row_digest(dict(zip(names, row))), without the dict when the names are distinct."""
    if len(set(names)) != len(names):
        return _row_digest(dict(zip(names, row)))
    return hashlib.blake2b(repr(sorted(zip(names, row))).encode("utf-8", "surrogatepass"),
                           digest_size=8).hexdigest()


def _order(value: Any) -> tuple:
    """SQLite's ordering across storage classes: NULL < numbers < text < blob."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value))
