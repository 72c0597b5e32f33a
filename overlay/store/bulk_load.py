"""A first audit of a plain SQLite table in SQL: the row's own values are copied, not bound.

When the overlay holds no fact of a source yet, a full read makes a Record and a 28-column
FactRow of every row and binds each value back into SQLite. For a plain table mapping
(connectors/sqlite.py `compare_spec()`, the case compare.py compares in SQL) the load is
done in two steps instead:

1. `stage_source()`, before the sync's transaction, in autocommit, one statement per page of
   source rows (no lock on the source outlives a page, as the connector reads): the source
   is ATTACHed read-only and each page copied into TEMP `mw_load` (the columns read()
   selects, untyped, so every value stays as it is), with `mw_ok`: whether SQL can copy the
   row's values exactly. The staged copy is the snapshot the whole load reads: no row is
   read twice, and none changes between what Python saw and what SQL copies.
2. Inside the sync's transaction, per page, `staged_page()` hands the values Python must
   see (text, subject, key, category, the two times) to the sync engine, which parses the
   times, categorises and hashes; `stage_values()` writes those values (a handful per row
   instead of a FactRow's 28) to TEMP `mw_calc`; `score_staged()` scores the plain facts in
   SQL (overlay/store/plain_rescore.py's SELECT, plain_scorer's figures to the bit: TEMP
   `mw_score`; the engine scores the other categories, and the few rows SQL leaves, in
   Python); and `insert_staged()` inserts the page by one `INSERT INTO facts … SELECT` of the
   staged rows joined with them (text, subject, key copied; the key's JSON text and the ref
   built in SQL). Rows the engine leaves to the Record path (`staged_rows()` gives them as
   read() selects them) go in as FactRows (TEMP `mw_rows`) among them, in rowid order: the
   same ids, the same upsert. (An INSERT … SELECT per row with the values bound cost as much
   as the FactRow upsert: 0.75 s per 100k.) The engine runs score_staged() and
   insert_staged() in a second thread while it computes the next page.

SQL copies a row (`mw_ok`) only when each value it copies is one the connector's tuple path
reads as itself: text that is text, subject/key/category text or NULL ('' read as NULL), a
one-column key whose pk_json() text `_key_sql` builds (an integer, printable ASCII without
quote or backslash), an access count NULL or 0, no accessed_at or expires_at.
"""
from __future__ import annotations

import sqlite3
import time
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.overlay.store.compare import PAGE_ROWS, SCHEMA, _key_sql
from memwatch_overlay.overlay.store.facts import FACT_COLUMNS, UPSERT_CONFLICT
from memwatch_overlay.overlay.store.plain_rescore import age_sql
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, placeholders, plain_rows

ROWID = '"mw_rowid"'          # the staged copy's rowid column (the source row's rowid)
STAGED_AT_CHUNK = 500         # rowids per statement of staged_rows()
# What the engine binds per fact (insert_staged), in this order; the rest is copied or constant.
BOUND = ("category", "content_hash", "created_at", "updated_at", "freshness", "label", "age_days", "days_left",
         "days_until_expired", "confidence", "next_change")
SCORES_AT = 4                 # BOUND[SCORES_AT:] are the scores: SQL computes them for plain facts
# Rows of Python's scores set per statement (set_staged_scores; SQLite allows 32,766 parameters
# from 3.32, 999 before: 8 a row)
SCORES_CHUNK = 100
# An unscored row binds BOUND[:UNSCORED_MIN] (category, content_hash) and its times up to the last
# that is not NULL (stage_values)
UNSCORED_MIN = 2
# What the scoring SELECT (plain_rescore.plain_scores_select) gives for each of BOUND's scores
SCORED = ("freshness", "label", "age_days", "days_left", "until_expired", "confidence", "nxt")
# The sync's constants, bound once (a float written as a SQL literal need not parse to the same double)
CONSTANTS = ("source_id", "tbl", "ref", "now", "sync_no", "as_of")


class Staged(NamedTuple):
    """What stage_source() copied: the source rows, and the pages' rowid ranges (after, upto]."""

    rows: int
    pages: list[tuple[int, int]]


class BulkLoadRepo(RepoBase):
    """Mixin of OverlayStore: a first load of a SQLite source table by INSERT … SELECT."""

    _staged_spec: Any = None            # the staged table's CompareSpec (None: nothing staged)
    _staged_target = ""
    _staged_sql: Any = None             # (plain, mixed) INSERT … SELECT of the staged spec
    _score_sql: Any = None              # (INSERT INTO mw_score …, params): the page's plain facts scored
    _staged_mixed = False               # whether the page staged holds Record-path rows (mw_rows)

    def holds_facts(self, source_id: int) -> bool:
        """Whether the overlay holds any fact of this source (any status)."""
        return self.conn.execute("SELECT 1 FROM facts WHERE source_id = ? LIMIT 1", (source_id,)).fetchone() is not None

    def stage_source(self, spec, target: str, pause: Callable[[float], None] | None = None,
                     page_rows: int = PAGE_ROWS, min_rows: int = 0) -> Staged | None:
        """Copy the source table `spec` (a connectors.sqlite.CompareSpec with a one-column
        key) into TEMP mw_load, a page per statement, outside any transaction. None (nothing
        staged): the file attached is not the source, the source stayed locked, or the table
        holds fewer than `min_rows` rows. `target`: the source as messages name it.

        `pause(seconds the page held the source)` runs after each page but the last (the
        daemon's pacing of rollback-journal stores)."""
        self.drop_staged()
        if len(spec.pk) != 1 or ROWID in spec.columns or not spec.columns or "text" not in spec.fields:
            return None
        staged = None
        try:
            with self.source_attached(spec) as attached:
                if attached:
                    staged = self._stage_attached(spec, target, pause, page_rows, min_rows)
        finally:
            if staged is None:          # nothing staged (or an error): no half copy is left
                self.drop_staged()
        return staged

    def _stage_attached(self, spec, target: str, pause: Callable[[float], None] | None,
                        page_rows: int, min_rows: int) -> Staged | None:
        """stage_source() with the source attached."""
        try:
            if min_rows and self.conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {SCHEMA}.{spec.table_sql} "
                                              "LIMIT ?)", (min_rows,)).fetchone()[0] < min_rows:
                return None
            self._staged_spec, self._staged_target = spec, target
            self.conn.execute(f"CREATE TEMP TABLE mw_load ({ROWID} INTEGER PRIMARY KEY, {', '.join(spec.columns)}, "
                              "mw_ok)")
            copy = (f"INSERT INTO temp.mw_load SELECT s.rowid, {', '.join(f's.{c}' for c in spec.columns)}, "
                    f"{_ok_sql(spec)} FROM {SCHEMA}.{spec.table_sql} s WHERE s.rowid > ? ORDER BY s.rowid LIMIT ?")
            last = f"SELECT max({ROWID}) FROM temp.mw_load"
            total, pages, after = 0, [], -(1 << 63)
            while True:
                started = time.monotonic()
                n = self.conn.execute(copy, (after, page_rows)).rowcount
                held = time.monotonic() - started
                if n <= 0:
                    break
                upto = self.conn.execute(last).fetchone()[0]
                pages.append((after, upto))
                total += n
                after = upto
                if n < page_rows:
                    break
                if pause is not None:
                    pause(held)
            return Staged(total, pages)
        except sqlite3.OperationalError:    # a lock held past the busy timeout: the Record path reports it
            return None

    def staged_page(self, after: int, upto: int):
        """The staged rows (after, upto] as (rowid, ok, text, subject, key, category,
        created_at, updated_at), in rowid order (NULL for an unmapped field)."""
        fields = self._staged_spec.fields
        values = ", ".join(fields[n].sql if n in fields else "NULL"
                           for n in ("text", "subject", "key", "category", "created_at", "updated_at"))
        return self._read_staged(f"SELECT {ROWID}, mw_ok, {values} FROM temp.mw_load WHERE {ROWID} > ? "
                                 f"AND {ROWID} <= ? ORDER BY {ROWID}", (after, upto))

    def staged_rows(self, rowids: list[int]) -> list[tuple]:
        """The staged rows of these rowids as read() selects them (the spec's columns, then the
        rowid), in rowid order."""
        cols = ", ".join(self._staged_spec.columns)
        out: list[tuple] = []
        for i in range(0, len(rowids), STAGED_AT_CHUNK):
            chunk = rowids[i:i + STAGED_AT_CHUNK]
            out += self._read_staged(f"SELECT {cols}, {ROWID} FROM temp.mw_load WHERE {ROWID} IN "
                                     f"({placeholders(len(chunk))}) ORDER BY {ROWID}", tuple(chunk))
        return out

    def _read_staged(self, sql: str, params: tuple) -> list[tuple]:
        """Staged rows as tuples; a text that is not UTF-8 fails as the connector's read fails."""
        try:
            return plain_rows(self.conn, self.dialect, sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "decode" not in str(exc):
                raise
            raise ConnectorError(f"{self._staged_target}: read failed ({exc})") from None

    def begin_staged_insert(self, source_id: int, tbl: str, ref_prefix: str, now: float, sync_no: int,
                            as_of: float, plain: Mapping[str, Any] | None = None) -> frozenset[str]:
        """The sync's constants and the page tables for insert_staged() (inside the sync's
        transaction). `plain`: the configured categories' PlainConstants (name -> constants);
        returns the categories whose facts this database scores itself (`score_staged`): none
        without math functions."""
        for name in ("mw_const", "mw_calc", "mw_rows", "mw_score"):
            self.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
        self.conn.execute(f"CREATE TEMP TABLE mw_const ({', '.join(CONSTANTS)})")
        self.conn.execute(f"INSERT INTO temp.mw_const VALUES ({placeholders(len(CONSTANTS))})",
                          (source_id, tbl, ref_prefix, now, sync_no, as_of))
        self.conn.execute(f"CREATE TEMP TABLE mw_calc (rid INTEGER PRIMARY KEY, {', '.join(BOUND)})")
        self.conn.execute(f"CREATE TEMP TABLE mw_rows (mw_order, {', '.join(FACT_COLUMNS)})")
        self.conn.execute(f"CREATE TEMP TABLE mw_score (id INTEGER PRIMARY KEY, {', '.join(SCORED)})")
        if self._staged_sql is None:
            self._staged_sql = self._insert_sql()
        self._score_sql = None
        in_sql = self.load_plain_constants(plain) if plain and self.has_sql_math() else []
        if plain and in_sql:
            # learned at the latest of its times, else now (the Record path's learned_at)
            ages = (f"SELECT c.rid AS id, {age_sql(('c.created_at', 'c.updated_at'), '?')} AS age, p.decay AS d, "
                    f"p.log_decay AS log_d, p.max_age AS max_age FROM temp.mw_calc c JOIN temp.mw_plain p "
                    f"ON p.category = c.category LIMIT -1 OFFSET 0")
            scored, params = self.plain_scores_select(ages, (as_of, now), next(iter(plain.values())), as_of,
                                                      as_of > now + 1.0)
            whole = " AND ".join(f"{c} IS NOT NULL" for c in SCORED if c not in ("label", "nxt"))
            self._score_sql = (f"INSERT INTO temp.mw_score SELECT id, {', '.join(SCORED)} FROM ({scored}) "
                               f"WHERE {whole}", params)
        return frozenset(in_sql)

    def stage_values(self, computed: Sequence[tuple], unscored: Sequence[Sequence[tuple]] = (),
                     python_rows: Sequence[tuple] = ()) -> None:
        """Stage a page's values for insert_staged(): `computed` ((rowid, *BOUND)) as they are,
        `unscored` (facts of the categories begin_staged_insert() named, for score_staged():
        lists of (rowid, category, content_hash), of those + created_at and of those +
        updated_at, each row's trailing NULL times left out), and `python_rows` ((rowid,
        *FactRow) of the Record-path rows). (The unscored rows are bound without their NULLs:
        sqlite3 binds None through its adapter lookup, at several times the cost of a float;
        at 1M rows without updated_at that was 2.0 s of binding instead of 1.3, in a micro-run.)"""
        conn = self.conn
        self._staged_mixed = bool(python_rows)
        if python_rows:
            conn.executemany(f"INSERT INTO temp.mw_rows VALUES ({placeholders(len(FACT_COLUMNS) + 1)})", python_rows)
        if computed:
            conn.executemany(f"INSERT INTO temp.mw_calc VALUES ({placeholders(len(BOUND) + 1)})", computed)
        for width, rows in enumerate(unscored, start=UNSCORED_MIN):
            if rows:
                conn.executemany(f"INSERT INTO temp.mw_calc (rid, {', '.join(BOUND[:width])}) "
                                 f"VALUES ({placeholders(width + 1)})", rows)

    def score_staged(self) -> list[int]:
        """Score by SQL the staged rows of the categories begin_staged_insert() named
        (plain_rescore: plain_scorer's figures to the bit). Returns the rowids, ascending, of
        the rows it left to Python (a rounding tie, an age near underflow), whose scores
        set_staged_scores() takes. Two statements, no row bound, one row read: the sync runs
        it in a second thread while the next page is computed there, and each row read back
        would wait for that thread to hand back the GIL (a few hundred rows a page took 1.7 s
        of wall for 0.55 s of CPU at 1M rows; their values are the caller's own)."""
        if self._score_sql is None:
            return []
        conn = self.conn
        conn.execute(*self._score_sql)
        left = conn.execute("SELECT group_concat(c.rid) FROM temp.mw_calc c "
                            "JOIN temp.mw_plain p ON p.category = c.category WHERE NOT EXISTS "
                            "(SELECT 1 FROM temp.mw_score q WHERE q.id = c.rid)").fetchone()[0]
        return sorted(int(rid) for rid in left.split(",")) if left else []

    def set_staged_scores(self, scores: list[tuple]) -> None:
        """(rowid, *BOUND's scores) of rows score_staged() left to Python, set by one UPDATE …
        FROM (VALUES …) per SCORES_CHUNK rows: the sync calls it from its writer thread, where
        an executemany would take the GIL back from the thread computing the next page for
        every row (0.17 s of CPU took 0.80 s of wall at 1M rows)."""
        width = len(BOUND) - SCORES_AT + 1
        sets = ", ".join(f"{c} = v.column{i}" for i, c in enumerate(BOUND[SCORES_AT:], start=2))
        for at in range(0, len(scores), SCORES_CHUNK):
            chunk = scores[at:at + SCORES_CHUNK]
            rows = ", ".join([f"({placeholders(width)})"] * len(chunk))
            self.conn.execute(f"UPDATE temp.mw_calc SET {sets} FROM (VALUES {rows}) AS v WHERE mw_calc.rid = v.column1",
                              [value for row in chunk for value in row])

    def insert_staged(self, after: int, upto: int) -> None:
        """Insert the staged page (after, upto] into facts (inside the sync's transaction): the
        rows stage_values() staged, copied, and its Record-path rows among them, in rowid
        order, with the sync's upsert."""
        plain, mixed = self._staged_sql
        conn = self.conn
        if self._staged_mixed:
            conn.execute(mixed, (after, upto))
            conn.execute("DELETE FROM temp.mw_rows")
        else:
            conn.execute(plain, (after, upto))
        conn.execute("DELETE FROM temp.mw_calc")
        conn.execute("DELETE FROM temp.mw_score")

    def _insert_sql(self) -> tuple[str, str]:
        """The page's INSERT … SELECT (params: after, upto), without and with the Record-path
        rows of mw_rows."""
        spec = self._staged_spec
        fields = spec.fields

        def opt(name: str) -> str:
            return f"NULLIF(s.{fields[name].sql}, '')" if name in fields else "NULL"

        values = {
            "source_id": "k.source_id", "tbl": "k.tbl", "pk": _key_sql(spec.pk), "ref": f"k.ref || s.{spec.pk[0].sql}",
            "subject": opt("subject"), "key": opt("key"), "text": f"s.{fields['text'].sql}",
            "category_given": opt("category"), "accessed_at": "NULL", "access_count": "0", "expires_at": "NULL",
            "first_seen": "k.now", "last_seen": "k.now", "seen_sync": "k.sync_no", "changed_sync": "k.sync_no",
            "status": "'active'", "expired_by": "NULL", "scored_as_of": "k.as_of",
            **{c: f"c.{c}" for c in BOUND[:SCORES_AT]},
            # a score SQL computed (mw_score), else the one bound
            **{c: f"CASE WHEN q.id IS NULL THEN c.{c} ELSE q.{q} END" for c, q in zip(BOUND[SCORES_AT:], SCORED)},
        }
        assert set(values) == set(FACT_COLUMNS)
        cols = ", ".join(FACT_COLUMNS)
        exprs = ", ".join(f"{values[c]} AS {c}" for c in FACT_COLUMNS)
        rows = (f"FROM temp.mw_load s JOIN temp.mw_calc c ON c.rid = s.{ROWID} CROSS JOIN temp.mw_const k "
                f"LEFT JOIN temp.mw_score q ON q.id = c.rid WHERE s.{ROWID} > ?1 AND s.{ROWID} <= ?2")
        plain = f"INSERT INTO main.facts ({cols}) SELECT {exprs} {rows} ORDER BY s.{ROWID} {UPSERT_CONFLICT}"
        mixed = (f"INSERT INTO main.facts ({cols}) SELECT {cols} FROM (SELECT s.{ROWID} AS mw_order, {exprs} {rows} "
                 f"UNION ALL SELECT mw_order, {cols} FROM temp.mw_rows) WHERE true ORDER BY mw_order "
                 f"{UPSERT_CONFLICT}")
        return plain, mixed

    def drop_staged(self) -> None:
        """Drop the TEMP tables of a staged load (outside a transaction, or inside the one
        that inserted from them)."""
        for name in ("mw_load", "mw_const", "mw_calc", "mw_rows", "mw_score"):
            self.conn.execute(f"DROP TABLE IF EXISTS temp.{name}")
        self._staged_spec = self._staged_sql = self._score_sql = None


def _ok_sql(spec) -> str:
    """Over the source row `s`: whether SQL copies its values exactly (module docstring)."""
    fields = spec.fields

    def v(name: str) -> str:
        return f"s.{fields[name].sql}"

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
    return " AND ".join(ok)
