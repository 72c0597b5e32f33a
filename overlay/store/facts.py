"""The `facts` table: one row per record of a watched store, keyed by the source's own key.

The columns a sync writes are named once, in `FactRow`: the upsert statement is generated
from its fields (with what an upsert keeps of the stored row in `_ON_CONFLICT`), and the
sync engine fills a FactRow by name. The shapes other modules read (`FACT_SELECT` rows by
name; the report's columns in overlay/store/reports.py) are built here too.
"""
from __future__ import annotations

import sqlite3
from itertools import groupby
from operator import itemgetter
from typing import Any, Iterable, Iterator, NamedTuple

from memwatch_overlay.core.vocab import LIVE_STATUSES, STATUSES
from memwatch_overlay.overlay.store import postgres_dialect as overlay_db
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, id_chunks, placeholders, plain_rows, pragma_for, scope


class FactRow(NamedTuple):
    """One fact as a sync writes it (upsert_facts); fields are the `facts` columns."""

    source_id: int
    tbl: str
    pk: str                      # JSON object of the source's primary-key values (text)
    ref: str
    subject: str | None
    key: str | None
    text: str
    category: str
    category_given: str | None   # the category text the source gave (NULL: none; migrations/v10)
    created_at: float | None
    updated_at: float | None
    accessed_at: float | None
    access_count: int
    expires_at: float | None     # expiry recorded by the source itself
    content_hash: str
    first_seen: float
    last_seen: float
    seen_sync: int               # sources.sync_count of the last full read that saw it
    changed_sync: int            # sync that last inserted it or changed its content
    status: str                  # active | contradicted | deleted | forgotten
    freshness: float
    label: str
    age_days: float
    days_left: float | None
    days_until_expired: float | None
    expired_by: str | None
    scored_as_of: float
    confidence: float | None
    next_change: float | None


FACT_COLUMNS = FactRow._fields

# A fact whose age depends on overlay state (a person's refresh, or no timestamps at all so
# first_seen counts) cannot be scored from the record alone: the upsert leaves it unscored
# and due (next_change 0), and the sync rescores exactly those through the index.
_NEEDS_OVERLAY_STATE = "(facts.refreshed_at IS NOT NULL OR (excluded.created_at IS NULL AND excluded.updated_at IS NULL))"
# What an upsert sets on a stored fact, per column (default: the new value). None: the
# stored value stays (the key, when it was first seen); first_seen, refreshed_at and a
# `forgotten` status survive an upsert of the same content.
_ON_CONFLICT: dict[str, str | None] = {
    "source_id": None,
    "pk": None,
    "first_seen": None,
    "changed_sync": "CASE WHEN facts.content_hash = excluded.content_hash "
                    "THEN facts.changed_sync ELSE excluded.changed_sync END",
    "status": "CASE WHEN facts.status = 'forgotten' AND facts.content_hash = excluded.content_hash "
              "THEN 'forgotten' ELSE excluded.status END",
    "scored_as_of": f"CASE WHEN {_NEEDS_OVERLAY_STATE} THEN NULL ELSE excluded.scored_as_of END",
    "next_change": f"CASE WHEN {_NEEDS_OVERLAY_STATE} THEN 0 ELSE excluded.next_change END",
    # a record the source deleted may come without its subject (mem0 drops the vector-store
    # payload that held the user): the fact keeps the subject it had
    "subject": "CASE WHEN excluded.subject IS NULL AND excluded.status = 'deleted' "
               "THEN facts.subject ELSE excluded.subject END",
}
_UPSERT_SQL = (
    f"INSERT INTO facts ({', '.join(FACT_COLUMNS)}) VALUES ({placeholders(len(FACT_COLUMNS))}) "
    "ON CONFLICT (source_id, pk) DO UPDATE SET "
    + ", ".join(f"{c} = {_ON_CONFLICT.get(c, f'excluded.{c}')}" for c in FACT_COLUMNS
                if _ON_CONFLICT.get(c, "") is not None)
)

# The upsert's conflict clause, for an INSERT … SELECT (overlay/store/bulk_load.py)
UPSERT_CONFLICT = _UPSERT_SQL[_UPSERT_SQL.index("ON CONFLICT"):]

# What most facts leave NULL (a plain memory: no category of its own, no update, access or
# expiry). A row with all of them None is upserted by a statement without them (their default
# is NULL: the same row, the same conflict rule): sqlite3 binds a None at several times a
# float's cost (its adapter lookup), five per plain row.
_OFTEN_NULL = ("category_given", "updated_at", "accessed_at", "expires_at", "expired_by")
_often_null = itemgetter(*(FACT_COLUMNS.index(c) for c in _OFTEN_NULL))
_ALL_NULL = (None,) * len(_OFTEN_NULL)
_LEAN_COLUMNS = tuple(c for c in FACT_COLUMNS if c not in _OFTEN_NULL)
_lean_row = itemgetter(*(FACT_COLUMNS.index(c) for c in _LEAN_COLUMNS))
_UPSERT_LEAN_SQL = (f"INSERT INTO facts ({', '.join(_LEAN_COLUMNS)}) VALUES ({placeholders(len(_LEAN_COLUMNS))}) "
                    + UPSERT_CONFLICT)

# Postgres: the same upsert from a COPYed page (upsert_facts), rows taken in the order they came.
PG_COPY_MIN = 200
_PG_UPSERT_FROM_PAGE = (
    f"INSERT INTO facts ({', '.join(FACT_COLUMNS)}) SELECT {', '.join(FACT_COLUMNS)} FROM temp.mw_facts_page "
    "ORDER BY page_order " + UPSERT_CONFLICT)

# Postgres: a page's keys as one text parameter split on the server (_pg_pks): one prepared
# statement for every page (500 placeholders per query were parsed and planned each time, 5-7x
# slower at 100k facts; a list parameter is escaped element by element in Python).
_PG_PK_IN = "pk = ANY(string_to_array(?, chr(10)))"


def _pg_pks(pks: list[str]) -> str:
    """The keys as _PG_PK_IN's parameter. A stored key is JSON with ASCII escapes (pk_json):
    it never holds a newline."""
    return "\n".join(pks)


LIVE = "status IN (" + ", ".join(f"'{s}'" for s in LIVE_STATUSES) + ")"
NOT_LIVE_STATUSES = tuple(s for s in STATUSES if s not in LIVE_STATUSES)     # deleted, forgotten
ANY = object()   # find_facts(subject=ANY): every subject (None means "no subject")

# Annotations ([[actions]] do = "annotate") of a fact's current content, as a JSON array.
ANNOTATIONS_SQL = (
    "SELECT json_group_array(json_object('action_id', a.id, 'action', a.action_index, "
    "'when', json_extract(a.spec, '$.when'), 'label', a.label, 'values', json(a.values_json), "
    "'at', strftime('%Y-%m-%dT%H:%M:%fZ', a.run_at, 'unixepoch'))) FROM actions a "
    "WHERE a.ref = f.ref AND a.kind = 'annotate' AND a.state = 'applied' AND a.undone_at IS NULL "
    "AND a.fact_hash = f.content_hash")
# The same annotations in Postgres (json_agg is NULL over no rows; fact_dict reads that as []).
# `at` rounds to the millisecond exactly as SQLite's 'unixepoch' modifier does (in float8).
PG_EPOCH_MS = ("(floor(a.run_at * 1000.0::float8 + 210866760000000.0::float8 + 0.5::float8)::bigint "
               "- 210866760000000)")
overlay_db.register_fragment(ANNOTATIONS_SQL, (
    "SELECT json_agg(json_build_object('action_id', a.id, 'action', a.action_index, "
    "'when', a.spec::json ->> 'when', 'label', a.label, 'values', a.values_json::json, "
    "'at', to_char(to_timestamp(" + PG_EPOCH_MS + "::numeric / 1000) AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')))::text "
    "FROM actions a WHERE a.ref = f.ref AND a.kind = 'annotate' AND a.state = 'applied' "
    "AND a.undone_at IS NULL AND a.fact_hash = f.content_hash"))
# The refs of the newer facts that contradict fact f, joined by char(31) (NULL: none).
CONTRADICTED_BY_SQL = (
    "SELECT group_concat(n.ref, char(31)) FROM contradictions c "
    "JOIN facts n ON n.id = c.newer_id WHERE c.older_id = f.id AND n.status != 'deleted'")
# A fact with its source's name and the refs of the newer facts that contradict it.
FACT_SELECT = (
    f"SELECT f.*, s.name AS source_name, ({CONTRADICTED_BY_SQL}) AS contradicted_by, "
    f"({ANNOTATIONS_SQL}) AS annotations "
    "FROM facts f JOIN sources s ON s.id = f.source_id")


SORT_THREADS = 2      # SQLite helper threads sorting an index build (create_indexes)


def _is_lean(row) -> bool:
    """Whether every one of _OFTEN_NULL is None in this row (FACT_COLUMNS order)."""
    return _often_null(row) == _ALL_NULL


class FactsRepo(RepoBase):
    """Mixin of OverlayStore: writing facts (upserts, deletions, refreshes) and reading them."""

    # Indexes only readers use, not the upsert's conflict checks. Their keys arrive in
    # random order, so past the page cache each row costs random page writes (at 1M
    # facts: ~18 s of a ~30 s first sync); a bulk load drops them and builds them again
    # by sorting, inside the same transaction (a crash rolls the drop back too).
    BULK_INDEXES = ("facts_block", "facts_next_change", "facts_stalest")
    # A load into an overlay without any fact yet also drops `facts_ref`, which nothing reads
    # while it runs: built after the load, by sorting, it costs a fraction of what keeping it
    # up to date row by row does. The (source_id, pk) key the upsert's conflict check uses
    # stays, and so do two indexes that cost the load almost nothing: every fact of one sync
    # has the same `facts_changed` key, so its entries are appended in rowid order, and
    # `facts_gc` holds no `active` fact, so a load of new facts adds no entry to it. Building
    # those two after the load scanned the million facts of bench_audit's first audit twice
    # more: keeping them took 0.8-1.3 s off its ~16 s (stop 40, docs/benchmarks.md).
    FRESH_INDEXES = BULK_INDEXES + ("facts_ref",)
    # Indexes on what a rescore rewrites (the next label change, the stalest facts' freshness):
    # a rescore of BULK_MIN facts or more drops them and builds them again after
    # (SyncEngine.rescore).
    SCORE_INDEXES = ("facts_next_change", "facts_stalest")

    def drop_bulk_indexes(self, names: tuple[str, ...] | None = None) -> list[str]:
        """Drop BULK_INDEXES (or `names`; inside a transaction); returns the SQL that recreates them.

        Not on Postgres: DROP INDEX locks `facts` for every other daemon sharing the overlay."""
        if self.dialect == "postgres":
            return []
        names = self.BULK_INDEXES if names is None else names
        rows = self.conn.execute(
            f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name IN "
            f"({placeholders(len(names))})", names).fetchall()
        for name, _ in rows:
            self.conn.execute(f'DROP INDEX "{name}"')
        return [sql for _, sql in rows]

    def create_indexes(self, statements: list[str]) -> None:
        """Run the CREATE INDEX statements drop_bulk_indexes() returned. On SQLite each build
        sorts with SORT_THREADS helper threads (`PRAGMA threads`; the setting is put back
        after): after a bulk load nothing else runs, and the 1M first audit's four builds took
        1.23-1.27 s instead of 1.62-2.01 s (stop 40, docs/benchmarks.md). (On Postgres
        drop_bulk_indexes() drops nothing, so there is nothing to build.)"""
        if not statements:
            return
        with pragma_for(self.conn, "threads", SORT_THREADS):
            for sql in statements:
                self.conn.execute(sql)

    def max_fact_id(self) -> int:
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM facts").fetchone()[0]

    def upsert_facts(self, rows: Iterable[FactRow]) -> None:
        """Insert or refresh facts (FactRow, or tuples in FACT_COLUMNS order); call inside a transaction.

        Bound as plain tuples: sqlite3 binds an exact tuple by index and any other sequence
        (a NamedTuple such as FactRow) through the sequence protocol, one call per column;
        at 28 columns that was 0.15 s CPU per 100k rows, and tuple() is the cheaper copy.

        On Postgres a page of PG_COPY_MIN rows or more with distinct keys is COPYed: straight
        into `facts` when none of its keys is stored yet (one index probe per page: every page
        of a first audit, where the upsert could only insert), else into a temp table and
        upserted by one INSERT … SELECT in page order (the same ids, the same conflict rule).
        A statement per row was two thirds of a 100k first audit; the temp table's write and
        read, a third of the rest.

        On SQLite the consecutive rows with every one of _OFTEN_NULL None are upserted without
        those columns (_UPSERT_LEAN_SQL), in the order given (the same ids)."""
        executemany = self.conn.executemany
        if self.dialect == "postgres":          # (psycopg binds a None as cheaply as a number)
            rows = list(rows)
            if len(rows) < PG_COPY_MIN or len({(r[0], r[2]) for r in rows}) != len(rows):
                executemany(_UPSERT_SQL, map(tuple, rows))
            elif self._all_new(rows):
                self._insert_by_copy(rows)
            else:
                self._upsert_by_copy(rows)
            return
        for lean, run in groupby(rows, _is_lean):
            if lean:
                executemany(_UPSERT_LEAN_SQL, map(_lean_row, run))
            else:
                executemany(_UPSERT_SQL, map(tuple, run))

    def _all_new(self, rows: list) -> bool:
        """Postgres: whether no stored fact has the key of any of these rows (all of one
        source, distinct keys): then inserting them is exactly what the upsert would do."""
        source_ids = {r[0] for r in rows}
        if len(source_ids) != 1:
            return False
        return self.conn.execute(f"SELECT 1 FROM facts WHERE source_id = ? AND {_PG_PK_IN} LIMIT 1",
                                 (source_ids.pop(), _pg_pks([r[2] for r in rows]))).fetchone() is None

    def _insert_by_copy(self, rows: list) -> None:
        self.conn.copy_rows("facts", FACT_COLUMNS, rows)

    def _upsert_by_copy(self, rows: list) -> None:
        if self.conn.execute("SELECT to_regclass('pg_temp.mw_facts_page')").fetchone()[0] is None:
            self.conn.execute(f"CREATE TEMP TABLE mw_facts_page AS SELECT {', '.join(FACT_COLUMNS)} "
                              "FROM facts WITH NO DATA")
            self.conn.execute("ALTER TABLE temp.mw_facts_page ADD COLUMN page_order BIGSERIAL")
        self.conn.copy_rows("temp.mw_facts_page", FACT_COLUMNS, rows)
        self.conn.run(_PG_UPSERT_FROM_PAGE)
        self.conn.execute("TRUNCATE temp.mw_facts_page")

    def unseen_live_ids(self, source_id: int, sync_no: int, noted: bool = False,
                        among: list[int] | None = None) -> list[int]:
        """Live facts a full read (sync `sync_no`) did not see: what mark_unseen_deleted() is
        about to delete (call it first: `noted` and `among` as there)."""
        seen = f" AND {_not_noted(self.dialect)}" if noted else ""
        sql = f"SELECT id FROM facts WHERE source_id = ? AND seen_sync < ? AND {LIVE}{seen}"
        return sorted(r[0] for cur in self._among(sql, (source_id, sync_no), among) for r in cur)

    def mark_unseen_deleted(self, source_id: int, sync_no: int, last_full_sync: float | None = None,
                            noted: bool = False, among: list[int] | None = None) -> int:
        """After a full read: facts the source no longer has are `deleted` (kept, not erased).

        Seen are the facts this sync wrote (seen_sync) and the unchanged ones it only noted
        (`note_unchanged`, not written; `noted`: this sync did). A fact still live was seen by the previous full sync
        (`last_full_sync`) or written since: its last sighting is at least that (unchanged facts'
        `last_seen` is not rewritten by every sync). `among`: only these facts can be unseen
        (the set comparison accounted for every other one)."""
        seen = f" AND {_not_noted(self.dialect)}" if noted else ""
        sql = ("UPDATE facts SET status = 'deleted', next_change = NULL, "
               "last_seen = CASE WHEN last_seen < ? THEN ? ELSE last_seen END WHERE source_id = ? "
               f"AND seen_sync < ? AND status != 'deleted'{seen}")
        return sum(cur.rowcount for cur in self._among(sql, (*_sighting(last_full_sync), source_id, sync_no), among))

    def _among(self, sql: str, params: tuple, among: list[int] | None) -> Iterator:
        """The cursors of a statement over facts (its WHERE last in `sql`), restricted to the
        ids `among` when given: one statement per chunk of ids (id_chunks)."""
        if among is None:
            yield self.conn.execute(sql, params)
            return
        for chunk in id_chunks(among):
            yield self.conn.execute(f"{sql} AND id IN ({placeholders(len(chunk))})", (*params, *chunk))

    # -- facts a full read saw unchanged (nothing written for them) ------------------------
    # (pk, then the columns compared with a record: UNCHANGED_COLUMNS)
    UNCHANGED_COLUMNS = ("id", "tbl", "subject", "key", "text", "category", "category_given", "created_at",
                         "updated_at", "accessed_at", "access_count", "expires_at", "status", "content_hash")

    def stored_for_compare(self, source_id: int, pks: list[str]) -> dict[str, tuple]:
        """{pk: (UNCHANGED_COLUMNS…)} of the source's stored facts with these keys (index lookups)."""
        out: dict[str, tuple] = {}
        cols = ", ".join(self.UNCHANGED_COLUMNS)
        if self.dialect == "postgres":
            rows = plain_rows(self.conn, self.dialect, f"SELECT pk, {cols} FROM facts WHERE source_id = ? "
                              f"AND {_PG_PK_IN}", (source_id, _pg_pks(pks)))
            return {row[0]: row[1:] for row in rows}
        for i in range(0, len(pks), 500):
            chunk = pks[i:i + 500]
            for row in plain_rows(self.conn, self.dialect,
                                  f"SELECT pk, {cols} FROM facts WHERE source_id = ? "
                                  f"AND pk IN ({placeholders(len(chunk))})", (source_id, *chunk)):
                out[row[0]] = tuple(row[1:])
        return out

    def begin_unchanged(self) -> None:
        """An empty TEMP table `mw_seen` for the ids of facts a full read saw unchanged."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS mw_seen (id INTEGER PRIMARY KEY)")
        self.conn.execute("DELETE FROM temp.mw_seen")

    def note_unchanged(self, fact_ids: list[int]) -> None:
        if self.dialect == "postgres":
            # a statement per id was most of a Postgres re-audit's compare stage: the page's ids
            # as one text parameter split on the server, one statement (a COPY into a staging
            # table, a set insert and a DELETE were three round trips and twice the time; a key
            # read twice gives its id twice: kept once)
            self.conn.run("INSERT OR IGNORE INTO temp.mw_seen (id) "
                          "SELECT unnest(string_to_array(?, ','))::bigint", (",".join(map(str, fact_ids)),))
            return
        self.conn.executemany("INSERT OR IGNORE INTO temp.mw_seen (id) VALUES (?)", [(i,) for i in fact_ids])

    def end_unchanged(self) -> None:
        self.conn.execute("DROP TABLE IF EXISTS temp.mw_seen")

    # -- what one sync changed -------------------------------------------------------------
    def count_changed(self, source_id: int, sync_no: int, live_only: bool = False) -> int:
        """Facts of the source that sync `sync_no` inserted or changed (live ones only: `live_only`)."""
        live = f" AND {LIVE}" if live_only else ""
        return self.conn.execute(
            f"SELECT count(*) FROM facts WHERE source_id = ? AND changed_sync = ?{live}",
            (source_id, sync_no)).fetchone()[0]

    def count_changed_live(self, source_id: int, sync_no: int) -> tuple[int, int]:
        """(count_changed, count_changed live_only) in one pass over the changed facts (a first
        audit's million: 0.25 s each)."""
        total, live = self.conn.execute(
            f"SELECT count(*), sum(CASE WHEN {LIVE} THEN 1 ELSE 0 END) FROM facts "
            f"WHERE source_id = ? AND changed_sync = ?", (source_id, sync_no)).fetchone()
        return total, live or 0

    def changed_ids(self, source_id: int, sync_no: int) -> list[int]:
        return [r[0] for r in self.conn.execute(
            "SELECT id FROM facts WHERE source_id = ? AND changed_sync = ?", (source_id, sync_no))]

    def count_live(self, source_id: int) -> int:
        return self.conn.execute(f"SELECT count(*) FROM facts WHERE source_id = ? AND {LIVE}",
                                 (source_id,)).fetchone()[0]

    def count_not_deleted(self, source_id: int) -> int:
        """Facts of the source a full read's deletion mark could mark (status not `deleted`)."""
        return self.conn.execute("SELECT count(*) FROM facts WHERE source_id = ? AND status != 'deleted'",
                                 (source_id,)).fetchone()[0]

    def live_count_of(self, source_id: int, pks: list[str]) -> int:
        """How many of these pks (JSON text) are live facts of the source now (index lookups)."""
        n = 0
        for i in range(0, len(pks), 500):
            chunk = pks[i:i + 500]
            n += self.conn.execute(
                f"SELECT count(*) FROM facts WHERE source_id = ? AND pk IN ({placeholders(len(chunk))}) "
                f"AND {LIVE}", (source_id, *chunk)).fetchone()[0]
        return n

    def ids_of(self, source_id: int, pks: list[str]) -> list[int]:
        out: list[int] = []
        for i in range(0, len(pks), 500):
            chunk = pks[i:i + 500]
            out += [r[0] for r in self.conn.execute(
                f"SELECT id FROM facts WHERE source_id = ? AND pk IN ({placeholders(len(chunk))})",
                (source_id, *chunk))]
        return out

    # -- key-only deletion pass ------------------------------------------------------------
    def load_source_keys(self, pks: Iterable[str], batch: int = 10000) -> int:
        """Fill the connection's TEMP table `mw_keys` with a source's live keys (JSON text)."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS mw_keys (pk TEXT PRIMARY KEY) WITHOUT ROWID")
        self.conn.execute("DELETE FROM temp.mw_keys")
        n = 0
        chunk: list[tuple[str]] = []
        for pk in pks:
            chunk.append((pk,))
            if len(chunk) >= batch:
                self.conn.executemany("INSERT OR IGNORE INTO temp.mw_keys (pk) VALUES (?)", chunk)
                n += len(chunk)
                chunk.clear()
        if chunk:
            self.conn.executemany("INSERT OR IGNORE INTO temp.mw_keys (pk) VALUES (?)", chunk)
            n += len(chunk)
        return n

    def mark_missing_keys_deleted(self, source_id: int) -> list[int]:
        """Live facts whose key is not in `mw_keys` are `deleted` (kept, not erased); their ids."""
        ids = [r[0] for r in self.conn.execute(
            f"SELECT id FROM facts WHERE source_id = ? AND {LIVE} AND {_not_loaded(self.dialect)}",
            (source_id,))]
        sighting = _sighting(self.conn.execute("SELECT last_full_sync FROM sources WHERE id = ?",
                                               (source_id,)).fetchone()[0])
        self.conn.executemany("UPDATE facts SET status = 'deleted', next_change = NULL, "
                              "last_seen = CASE WHEN last_seen < ? THEN ? ELSE last_seen END WHERE id = ?",
                              ((*sighting, i) for i in ids))
        return ids

    def keys_not_in_overlay(self, source_id: int) -> list[str]:
        """Keys the source has but the overlay holds no non-deleted fact for (missed rows)."""
        return [r[0] for r in self.conn.execute(
            "SELECT k.pk FROM temp.mw_keys k WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE "
            "f.source_id = ? AND f.pk = k.pk AND f.status != 'deleted')", (source_id,))]

    def drop_source_keys(self) -> None:
        self.conn.execute("DROP TABLE IF EXISTS temp.mw_keys")

    # -- single facts and blocks -----------------------------------------------------------
    def fact_id(self, ref: str) -> int | None:
        row = self.conn.execute("SELECT id FROM facts WHERE ref = ?", (ref,)).fetchone()
        return row[0] if row else None

    def fact_row(self, ref: str) -> sqlite3.Row | None:
        """One fact with its source's name, in the shape iter_fact_rows yields."""
        return self.conn.execute(
            f"{FACT_SELECT} WHERE f.ref = ?", (ref,)).fetchone()

    def fact_rows_by_id(self, fact_ids: list[int]) -> list[sqlite3.Row]:
        """Facts (FACT_SELECT shape) by id, in no particular order."""
        out: list = []
        for i in range(0, len(fact_ids), 900):
            chunk = fact_ids[i:i + 900]
            out += self.conn.execute(f"{FACT_SELECT} WHERE f.id IN ({placeholders(len(chunk))})", chunk).fetchall()
        return out

    def changed_subjects(self, source_id: int, sync_no: int, also: list[int] | None = None,
                         dead_only: bool = False) -> set:
        """Subjects of the facts sync `sync_no` changed (live or not), and of the facts `also`.
        `dead_only`: of the changed facts, only those that are not live (deleted, forgotten):
        what a pass over the live facts cannot tell by itself (blocks.`_scanned_blocks`).
        Those are read through facts_gc, which holds only facts that are not active (a first
        audit's million changed facts are not read; `+` keeps facts_changed out of the plan)."""
        if dead_only:
            # (each status spelt out: the planner sees at once that facts_gc's condition holds)
            out = {r[0] for status in NOT_LIVE_STATUSES for r in self.conn.execute(
                f"SELECT DISTINCT subject FROM facts WHERE status = '{status}' AND +source_id = ? "
                f"AND +changed_sync = ?", (source_id, sync_no))}
        else:
            out = {r[0] for r in self.conn.execute(
                "SELECT DISTINCT subject FROM facts WHERE source_id = ? AND changed_sync = ?", (source_id, sync_no))}
        ids = list(also or [])
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            out.update(r[0] for r in self.conn.execute(
                f"SELECT DISTINCT subject FROM facts WHERE id IN ({placeholders(len(chunk))})", chunk))
        return out

    def subject_block(self, subject: str | None, source_ids: list[int]) -> list[sqlite3.Row]:
        """Live facts of one subject in these sources (one subject space): one detection block."""
        return self.conn.execute(
            f"SELECT * FROM facts WHERE subject IS ? AND source_id IN ({placeholders(len(source_ids))}) "
            f"AND {LIVE} ORDER BY id", (subject, *source_ids)).fetchall()

    def iter_subject_scan(self, source_ids: list[int], columns: tuple[str, ...] | None = None) -> Iterator:
        """Every live fact of these sources in subject order (facts_block index), streamed
        (a server-side cursor on Postgres): detection blocks one after the other. `columns`:
        only these (`id` and FACT_COLUMNS; checked before they go into SQL text), in this order
        (None: all)."""
        if columns is not None and not set(columns) <= {"id", *FACT_COLUMNS}:
            raise ValueError(f"facts has no column among {columns!r}")
        picked = "*" if columns is None else ", ".join(columns)
        where, params = f"source_id IN ({placeholders(len(source_ids))})", tuple(source_ids)
        if self.dialect == "sqlite" and self._holds_only(source_ids):
            # Every fact here is one of these sources': no filter, so that SQLite reads facts_block
            # in its order and the first block streams out at once; with `source_id IN (…)` it
            # picks facts_changed and sorts every row first (1M facts: 0.6-1.4 s before the first
            # row, 2.0-2.8 s in all, against 1.6-1.8 s)
            where, params = "true", ()
        sql = f"SELECT {picked} FROM facts WHERE {LIVE} AND {where} ORDER BY subject, id"
        if self.dialect == "postgres":
            return self.conn.stream(sql, params)
        return self.conn.execute(sql, params)

    def _holds_only(self, source_ids: list[int]) -> bool:
        """Whether the overlay knows no source beside these (so every fact is theirs)."""
        return not self.conn.execute(f"SELECT EXISTS (SELECT 1 FROM sources WHERE id NOT IN "
                                     f"({placeholders(len(source_ids))}))", tuple(source_ids)).fetchone()[0]

    def live_subjects(self, limit: int = 2) -> list[str | None]:
        """Up to `limit` distinct subjects of live facts (is there more than one user?)."""
        rows = self.conn.execute(f"SELECT DISTINCT subject FROM facts WHERE {LIVE} LIMIT ?", (limit,)).fetchall()
        return [r[0] for r in rows]

    def live_facts_in(self, categories: list[str], subject: str | None = None) -> list[sqlite3.Row]:
        """Live facts (with `source_name`) of these categories, of one subject when given; id order."""
        sql = (f"SELECT f.*, s.name AS source_name FROM facts f JOIN sources s ON s.id = f.source_id "
               f"WHERE f.{LIVE} AND f.category IN ({placeholders(len(categories))})")
        params: list = list(categories)
        if subject is not None:
            sql += " AND f.subject = ?"
            params.append(subject)
        return self.conn.execute(sql + " ORDER BY f.id", params).fetchall()

    def live_facts_labelled(self, source_id: int, labels: list[str], contradicted: bool,
                            changed_sync: int | None = None) -> list[sqlite3.Row]:
        """Live facts of a source with one of `labels` (or contradicted, when `contradicted`),
        only those sync `changed_sync` changed when given; id order (write-back planning)."""
        conds: list[str] = []
        params: list[Any] = [source_id]
        if labels:
            conds.append(f"label IN ({placeholders(len(labels))})")
            params += labels
        if contradicted:
            conds.append("status = 'contradicted'")
        if not conds:
            return []
        sql = f"SELECT * FROM facts WHERE source_id = ? AND {LIVE} AND ({' OR '.join(conds)})"
        if changed_sync is not None:
            sql += " AND changed_sync = ?"
            params.append(changed_sync)
        return self.conn.execute(sql + " ORDER BY id", params).fetchall()

    def find_facts(self, *, subject: Any = ANY, labels: Iterable[str] | None = None,
                   statuses: Iterable[str] = ("active", "contradicted"), limit: int | None = None) -> list[sqlite3.Row]:
        """Facts (every source) in the shape iter_fact_rows yields, stalest first.

        `subject` None selects facts without a subject; leave it out for every subject.
        """
        where, params = [], []
        statuses = list(statuses)
        where.append(f"f.status IN ({placeholders(len(statuses))})")
        params += statuses
        if subject is not ANY:
            where.append("f.subject IS ?")
            params.append(subject)
        if labels is not None:
            labels = list(labels)
            where.append(f"f.label IN ({placeholders(len(labels))})")
            params += labels
        sql = f"{FACT_SELECT} WHERE {' AND '.join(where)} ORDER BY f.freshness, f.id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self.conn.execute(sql, params).fetchall()

    def iter_fact_rows(self, source_ids: list[int] | None = None, include_deleted: bool = True,
                       order: str = "f.id") -> Iterator[sqlite3.Row]:
        where, params = scope("f.source_id", source_ids)
        status = "f.status != 'forgotten'" if include_deleted else "f.status IN ('active', 'contradicted')"
        sql = f"{FACT_SELECT} WHERE {status} {where} ORDER BY {order}"
        if self.dialect == "postgres":
            return self.conn.stream(sql, params)
        return self.conn.execute(sql, params)

    # -- search ------------------------------------------------------------------------------
    def _search_scope(self, subject: Any, source: str | None) -> tuple[str, list]:
        where, params = f"f.{LIVE}", []
        if subject is not ANY:
            where += " AND f.subject IS ?"
            params.append(subject)
        if source is not None:
            where += " AND f.source_id = (SELECT id FROM sources WHERE name = ?)"
            params.append(source)
        return where, params

    def search_corpus_stats(self, subject: Any = ANY, source: str | None = None) -> tuple[int, float | None]:
        """(live facts, their average length of text + key) in the search's scope."""
        where, params = self._search_scope(subject, source)
        n_docs, avg_len = self.conn.execute(
            f"SELECT count(*), avg(length(f.text) + length(coalesce(f.key, ''))) FROM facts f WHERE {where}",
            params).fetchone()
        return n_docs, avg_len

    def search_candidates(self, words: list[str], subject: Any = ANY,
                          source: str | None = None) -> Iterator[tuple[int, str, str | None]]:
        """(id, text, key) of live facts whose lower-cased text or key contains any of `words`."""
        where, params = self._search_scope(subject, source)
        haystack = "lower(f.text || ' ' || coalesce(f.key, ''))"
        match = " OR ".join(f"instr({haystack}, ?) > 0" for _ in words)
        return self.conn.execute(f"SELECT f.id, f.text, f.key FROM facts f WHERE {where} AND ({match})",
                                 [*params, *words])

    # -- status, refresh, erasure ------------------------------------------------------------
    def set_status(self, refs: list[str] | None, status: str, source_id: int | None = None) -> int:
        if refs:
            cur = self.conn.executemany("UPDATE facts SET status = ? WHERE ref = ?", [(status, r) for r in refs])
        else:
            cur = self.conn.execute("UPDATE facts SET status = ? WHERE source_id = ?", (status, source_id))
        return cur.rowcount

    def mark_refreshed(self, refs: list[str], now: float) -> int:
        """A person (or the API) re-confirmed these facts at `now`."""
        n = 0
        for ref in refs:
            n += self.conn.execute("UPDATE facts SET refreshed_at = ?, confirmations = confirmations + 1, "
                                   "scored_as_of = NULL, next_change = 0 WHERE ref = ?", (now, ref)).rowcount
        return n

    def mark_relearned(self, confirmations: list[tuple[int, float]]) -> None:
        """A newer fact restated these (fact id, when): they count as re-learned then.

        Idempotent: only moves refreshed_at forward, so judging the same pair again in a
        later sync changes nothing."""
        self.conn.executemany(
            "UPDATE facts SET refreshed_at = ?, confirmations = confirmations + 1, scored_as_of = NULL, "
            "next_change = 0 WHERE id = ? AND (refreshed_at IS NULL OR refreshed_at < ?)",
            [(at, fact_id, at) for fact_id, at in confirmations])

    def delete_facts_of_source(self, refs: list[str], source_name: str) -> int:
        """Erase these facts of one source (facts added through the API: the overlay is their store)."""
        n = 0
        for ref in refs:
            n += self.conn.execute(
                "DELETE FROM facts WHERE ref = ? AND source_id = (SELECT id FROM sources WHERE name = ?)",
                (ref, source_name)).rowcount
        return n

    def prune_deleted(self, cutoff: float) -> tuple[int, int]:
        """Erase facts the source deleted and that were last seen before `cutoff` (epoch s).

        Returns (facts, contradictions) erased; call inside a transaction. Facts the source
        only soft-deletes are still seen by every full read, so they stay until it drops them.
        """
        where = "status = 'deleted' AND last_seen < ?"
        contradictions = self.conn.execute(
            f"SELECT count(*) FROM contradictions WHERE older_id IN (SELECT id FROM facts WHERE {where}) "
            f"OR newer_id IN (SELECT id FROM facts WHERE {where})", (cutoff, cutoff)).fetchone()[0]
        facts = self.conn.execute(f"DELETE FROM facts WHERE {where}", (cutoff,)).rowcount
        return facts, contradictions


# Facts (of `facts`, unaliased) whose id is not in TEMP mw_seen / whose key is not in TEMP
# mw_keys. On Postgres as an anti-join: `NOT IN (subquery)` is a hashed subplan only while the
# planner thinks the subquery's rows fit in work_mem (about 100k ids); beyond that (a 1M-fact
# overlay) it becomes a subplan that scans the whole temp table again for each fact.
def _not_noted(dialect: str) -> str:
    if dialect == "postgres":
        return "NOT EXISTS (SELECT 1 FROM temp.mw_seen n WHERE n.id = facts.id)"
    return "id NOT IN (SELECT id FROM temp.mw_seen)"


def _not_loaded(dialect: str) -> str:
    if dialect == "postgres":
        return "NOT EXISTS (SELECT 1 FROM temp.mw_keys k WHERE k.pk = facts.pk)"
    return "pk NOT IN (SELECT pk FROM temp.mw_keys)"


def _sighting(last_full_sync: float | None) -> tuple[float, float]:
    """Parameters of `last_seen = CASE WHEN last_seen < ? THEN ? …` (no full sync yet: no change)."""
    t = 0.0 if last_full_sync is None else float(last_full_sync)
    return t, t
