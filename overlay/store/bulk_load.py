"""A first audit of a plain SQLite table as SQL: the facts are copied, not bound row by row.

When the overlay holds no fact of a source yet, a full read would make a Record and a
28-column FactRow of every row and bind each value back into SQLite. For a plain table
mapping (connectors/sqlite.py `compare_spec()`, the case compare.py compares in SQL) the
load is done in two steps instead:

1. `stage_source()`, before the sync's transaction, in autocommit, a page of source rows per
   statement (no lock on the source outlives a page, as the connector reads): the source is
   ATTACHed read-only, each page copied into TEMP `mw_load` (the columns read() selects,
   untyped, so every value is kept as it is, plus what SQL decides itself: whether the row
   is one SQL reproduces exactly, and the epoch of each time), and the page's rows handed to
   `compute(rows)` (the sync engine: category, content hash, scores), whose results go to
   TEMP `mw_calc` by rowid. The rows SQL cannot reproduce exactly are listed for the Record
   path; the staged copy is the snapshot both paths read, so nothing is read twice.
2. `insert_staged_page()`, inside the sync's transaction, per page: one `INSERT INTO facts
   … SELECT` from `mw_load` joined with `mw_calc` (the key's JSON text and the ref built in
   SQL), with the page's Record-path rows (FactRows in TEMP `mw_rows`) in rowid order among
   them: the same ids, the same upsert, as the Record path gives.

A row is left to SQL only when every value is one the connector's tuple path reads as
itself (compare.py's rules): text that is text, subject/key/category text or NULL, a
one-column key whose pk_json() text `_key_sql` can build (an integer, printable ASCII
without quote or backslash), an access count NULL or 0, no accessed_at or expires_at,
and each time NULL or the canonical text of a whole-second epoch (`YYYY-MM-DD HH:MM:SS`,
with `T`, or a midnight date alone), which Python's fromisoformat reads as exactly that
epoch. Everything else (and any category whose scores are not plain_scorer's) is a row
for the Record path.
"""
from __future__ import annotations

import sqlite3
import time
from typing import Callable, NamedTuple

from memwatch_overlay.overlay.store.compare import _MIN_EPOCH, PAGE_ROWS, SCHEMA, _attached_is, _key_sql
from memwatch_overlay.overlay.store.facts import FACT_COLUMNS, UPSERT_CONFLICT
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, placeholders

ROWID = '"mw_rowid"'          # the staged copy's rowid column (the source row's rowid)
PROBE = "SELECT unixepoch('2000-01-01 00:00:00')"   # SQLite 3.38+ (RETURNING: 3.35)
STAGED_AT_CHUNK = 500         # rowids per statement of staged_rows()
# A page whose rows mostly need Python is not worth staging: the first page decides.
MAX_PYTHON_SHARE = 0.5


class Staged(NamedTuple):
    """What stage_source() left in TEMP: rows read, and per page (rowid range (after, upto],
    its rows for the Record path as (rowid, category or None: not categorised yet))."""

    rows: int
    pages: list[tuple[int, int, list[tuple[int, str | None]]]]


class BulkLoadRepo(RepoBase):
    """Mixin of OverlayStore: a first load of a SQLite source table by INSERT … SELECT."""

    _load_sql: dict | None = None

    def can_load_in_sql(self) -> bool:
        """can_compare_in_sql(), and a SQLite with unixepoch() and RETURNING."""
        if not self.can_compare_in_sql():
            return False
        try:
            self.conn.execute(PROBE).fetchone()
        except sqlite3.OperationalError:
            return False
        return True

    def holds_facts(self, source_id: int) -> bool:
        """Whether the overlay holds any fact of this source (any status)."""
        return self.conn.execute("SELECT 1 FROM facts WHERE source_id = ? LIMIT 1", (source_id,)).fetchone() is not None

    def stage_source(self, spec, compute: Callable[[list], tuple[list, list]],
                     pause: Callable[[float], None] | None = None, page_rows: int = PAGE_ROWS,
                     progress: Callable[[int], None] | None = None) -> Staged | None:
        """Copy the source table `spec` (a connectors.sqlite.CompareSpec of one key column)
        into TEMP page by page, outside any transaction, and hand each page to `compute`.

        compute(rows) gets (rowid, ok, text, subject, key, category, created, updated) tuples
        (ok: SQL reproduces the row exactly; the times as integer epochs) and returns
        (calc rows: (rowid, category, content_hash, freshness, label, age_days, days_left,
        days_until_expired, confidence, next_change), rows for the Record path: (rowid,
        category or None)). None (nothing staged): the file attached is not the source, the
        source stayed locked, or the first page is mostly for the Record path."""
        self.drop_staged()
        if len(spec.pk) != 1 or ROWID in spec.columns or not spec.columns:
            return None
        waits = self.conn.execute("PRAGMA busy_timeout").fetchone()[0]
        self.conn.execute(f"PRAGMA busy_timeout = {int(spec.busy_timeout * 1000)}")
        try:
            self.conn.execute(f"ATTACH DATABASE ? AS {SCHEMA}", (spec.uri,))
        except sqlite3.Error:
            self.conn.execute(f"PRAGMA busy_timeout = {int(waits)}")
            return None
        done = False
        try:
            if not _attached_is(self.conn, spec.path):
                return None
            copy = self._stage_tables(spec)
            total, pages, after = 0, [], -(1 << 63)
            while True:
                started = time.monotonic()
                rows = self.conn.execute(copy, (after, page_rows)).fetchall()
                held = time.monotonic() - started
                if not rows:
                    break
                upto = max(r[0] for r in rows)
                calc, python = compute(rows)
                if not pages and len(python) > MAX_PYTHON_SHARE * len(rows):
                    return None
                if calc:
                    self.conn.executemany(f"INSERT INTO temp.mw_calc VALUES ({placeholders(10)})", calc)
                pages.append((after, upto, sorted(python)))
                total += len(rows)
                if progress is not None:
                    progress(total)
                after = upto
                if len(rows) < page_rows:
                    break
                if pause is not None:
                    pause(held)
            done = True
            return Staged(total, pages)
        except sqlite3.OperationalError:    # a lock held past the busy timeout: the Record path reports it
            return None
        finally:
            self.conn.execute(f"DETACH DATABASE {SCHEMA}")
            self.conn.execute(f"PRAGMA busy_timeout = {int(waits)}")
            if not done:
                self.drop_staged()

    def _stage_tables(self, spec) -> str:
        """Create the TEMP tables; return the page's copy statement (params: after, limit)."""
        fields = spec.fields
        cols = ", ".join(spec.columns)
        self.conn.execute(f"CREATE TEMP TABLE mw_load ({ROWID} INTEGER PRIMARY KEY, {cols}, "
                          "mw_ok, mw_created, mw_updated)")
        self.conn.execute("CREATE TEMP TABLE mw_calc (rid INTEGER PRIMARY KEY, category, content_hash, freshness, "
                          "label, age_days, days_left, days_until_expired, confidence, next_change)")
        self.conn.execute(f"CREATE TEMP TABLE mw_rows (mw_order, {', '.join(FACT_COLUMNS)})")

        def v(name: str) -> str | None:
            return f"s.{fields[name].sql}" if name in fields else None

        ok = [f"{_key_sql(spec.pk)} IS NOT NULL", f"typeof({v('text')}) = 'text'"]
        for name in ("subject", "key", "category"):
            if name in fields:
                ok.append(f"typeof({v(name)}) IN ('text', 'null')")
        if "access_count" in fields:
            c = v("access_count")
            ok.append(f"({c} IS NULL OR (typeof({c}) = 'integer' AND {c} = 0))")
        for name in ("accessed_at", "expires_at"):
            if name in fields:
                ok.append(f"{v(name)} IS NULL")
        epochs = []
        for name in ("created_at", "updated_at"):
            if name not in fields:
                epochs.append("NULL")
                continue
            t = v(name)
            e = f"unixepoch({t})"
            # canonical text only (compare.py's time rule): fromisoformat reads it as exactly `e`
            ok.append(f"({t} IS NULL OR (typeof({t}) = 'text' AND {e} >= {_MIN_EPOCH} AND "
                      f"({t} = datetime({e}, 'unixepoch') COLLATE BINARY "
                      f"OR {t} = strftime('%Y-%m-%dT%H:%M:%S', {e}, 'unixepoch') COLLATE BINARY "
                      f"OR ({t} = date({e}, 'unixepoch') COLLATE BINARY AND {e} % 86400 = 0))))")
            epochs.append(e)
        returned = ", ".join([ROWID, "mw_ok", *(fields[n].sql if n in fields else "NULL"
                                               for n in ("text", "subject", "key", "category")),
                              "mw_created", "mw_updated"])
        src = ", ".join(f"s.{c}" for c in spec.columns)
        self._load_sql = {"spec": spec}
        return (f"INSERT INTO temp.mw_load SELECT s.rowid, {src}, {' AND '.join(ok)}, {epochs[0]}, {epochs[1]} "
                f"FROM {SCHEMA}.{spec.table_sql} s WHERE s.rowid > ? ORDER BY s.rowid LIMIT ? "
                f"RETURNING {returned}")

    def staged_rows(self, rowids: list[int]) -> list[tuple]:
        """The staged rows of these rowids as read() selects them (spec.columns, then the rowid)."""
        spec = self._load_sql["spec"]
        out: list[tuple] = []
        cols = ", ".join(spec.columns)
        for i in range(0, len(rowids), STAGED_AT_CHUNK):
            chunk = rowids[i:i + STAGED_AT_CHUNK]
            cur = self.conn.cursor()
            cur.row_factory = None
            out += cur.execute(f"SELECT {cols}, {ROWID} FROM temp.mw_load WHERE {ROWID} IN "
                               f"({placeholders(len(chunk))}) ORDER BY {ROWID}", chunk).fetchall()
        return out

    def insert_staged_page(self, after: int, upto: int, python_rows: list[tuple], source_id: int, sync_no: int,
                           now: float, as_of: float, ref_prefix: str) -> int:
        """Insert the staged page (after, upto] into facts (inside the sync's transaction):
        the SQL rows and `python_rows` ((rowid, *FactRow) of the Record-path rows), in rowid
        order, with the sync's upsert. Returns the rows inserted or updated."""
        sqls = self._load_sql
        if "plain" not in sqls:
            sqls["plain"], sqls["mixed"] = self._insert_sql()
        params = {"sid": source_id, "tbl": sqls["spec"].table_name, "ref": ref_prefix, "now": now,
                  "sync": sync_no, "as_of": as_of, "after": after, "upto": upto}
        if not python_rows:
            return self.conn.execute(sqls["plain"], params).rowcount
        self.conn.executemany(f"INSERT INTO temp.mw_rows VALUES ({placeholders(len(FACT_COLUMNS) + 1)})",
                              python_rows)
        n = self.conn.execute(sqls["mixed"], params).rowcount
        self.conn.execute("DELETE FROM temp.mw_rows")
        return n

    def _insert_sql(self) -> tuple[str, str]:
        """The page's INSERT … SELECT, without and with the Record-path rows of mw_rows."""
        spec = self._load_sql["spec"]
        fields = spec.fields

        def opt(name: str) -> str:
            return f"NULLIF(s.{fields[name].sql}, '')" if name in fields else "NULL"

        values = {
            "source_id": ":sid", "tbl": ":tbl", "pk": _key_sql(spec.pk), "ref": f":ref || s.{spec.pk[0].sql}",
            "subject": opt("subject"), "key": opt("key"), "text": f"s.{fields['text'].sql}",
            "category": "c.category", "category_given": opt("category"),
            "created_at": "s.mw_created", "updated_at": "s.mw_updated", "accessed_at": "NULL",
            "access_count": "0", "expires_at": "NULL", "content_hash": "c.content_hash",
            "first_seen": ":now", "last_seen": ":now", "seen_sync": ":sync", "changed_sync": ":sync",
            "status": "'active'", "freshness": "c.freshness", "label": "c.label", "age_days": "c.age_days",
            "days_left": "c.days_left", "days_until_expired": "c.days_until_expired", "expired_by": "NULL",
            "scored_as_of": ":as_of", "confidence": "c.confidence", "next_change": "c.next_change",
        }
        assert set(values) == set(FACT_COLUMNS)
        cols = ", ".join(FACT_COLUMNS)
        exprs = ", ".join(f"{values[c]} AS {c}" for c in FACT_COLUMNS)
        rows = (f"FROM temp.mw_load s JOIN temp.mw_calc c ON c.rid = s.{ROWID} "
                f"WHERE s.{ROWID} > :after AND s.{ROWID} <= :upto")
        plain = f"INSERT INTO main.facts ({cols}) SELECT {exprs} {rows} ORDER BY s.{ROWID} {UPSERT_CONFLICT}"
        mixed = (f"INSERT INTO main.facts ({cols}) SELECT {cols} FROM (SELECT s.{ROWID} AS mw_order, {exprs} {rows} "
                 f"UNION ALL SELECT mw_order, {cols} FROM temp.mw_rows) WHERE true ORDER BY mw_order "
                 f"{UPSERT_CONFLICT}")
        return plain, mixed

    def drop_staged(self) -> None:
        """Drop the TEMP tables of a staged load (outside a transaction, or inside the one that read them)."""
        for name in ("mw_load", "mw_calc", "mw_rows"):
            self.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
        self._load_sql = None
