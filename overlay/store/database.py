"""The overlay database: memwatch's own state, never inside the watched store.

Why a separate file: the bot's store must never see a schema change, an extra table or
a lock held by us. Everything memwatch knows (scores, labels, contradictions, cursors,
run history, write-back before-images) lives here, keyed by the source's own primary
keys, so deleting the overlay loses nothing of the bot's.

SQLite in WAL mode, integer row ids, batched writes in one transaction per sync.
The schema is versioned; `MIGRATIONS[i]` takes version i to i+1.
"""
from __future__ import annotations

import itertools
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from memwatch_overlay.core import fastjson as jsontext
from memwatch_overlay.overlay.store import postgres_dialect as overlay_db
from memwatch_overlay.core.errors import OverlayError
from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.core.vocab import LIVE_STATUSES

MIGRATIONS: list[str] = [
    # v1: sources, facts, contradictions, runs
    """
    CREATE TABLE sources (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        connector TEXT NOT NULL,
        target TEXT NOT NULL,
        preset TEXT,
        cursor_json TEXT,
        sync_count INTEGER NOT NULL DEFAULT 0,
        last_sync REAL,
        last_change REAL,
        rows_seen INTEGER NOT NULL DEFAULT 0,
        rows_read_last_sync INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        last_error TEXT
    );
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES sources(id),
        tbl TEXT NOT NULL,
        pk TEXT NOT NULL,                -- JSON object of the source's primary-key values (text)
        ref TEXT NOT NULL,
        subject TEXT,
        key TEXT,
        text TEXT NOT NULL,
        category TEXT NOT NULL,
        created_at REAL,
        updated_at REAL,
        accessed_at REAL,
        access_count INTEGER NOT NULL DEFAULT 0,
        expires_at REAL,                 -- expiry recorded by the source itself
        refreshed_at REAL,               -- `memwatch-overlay refresh`: re-confirmed by a person
        content_hash TEXT NOT NULL,
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL,
        seen_sync INTEGER NOT NULL,      -- sources.sync_count of the last full read that saw it
        changed_sync INTEGER NOT NULL,   -- sync that last inserted it or changed its content
        status TEXT NOT NULL DEFAULT 'active',   -- active | contradicted | deleted | forgotten
        freshness REAL,
        label TEXT,
        age_days REAL,
        days_left REAL,
        days_until_expired REAL,
        expired_by TEXT,
        scored_as_of REAL,
        UNIQUE (source_id, pk)
    );
    CREATE UNIQUE INDEX facts_ref ON facts(ref);
    CREATE INDEX facts_block ON facts(subject, category);
    CREATE INDEX facts_changed ON facts(source_id, changed_sync);
    CREATE TABLE contradictions (
        id INTEGER PRIMARY KEY,
        older_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
        newer_id INTEGER NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        confidence REAL NOT NULL,
        evidence TEXT NOT NULL,
        update_json TEXT,
        detected_at REAL NOT NULL,
        UNIQUE (older_id, newer_id)
    );
    CREATE INDEX contradictions_newer ON contradictions(newer_id);
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at REAL NOT NULL,
        as_of REAL NOT NULL,
        kind TEXT NOT NULL,
        sources TEXT NOT NULL,
        passed INTEGER,
        summary_json TEXT NOT NULL
    );
    """,
    # v2: embedding vectors of facts, stamped with the model that made them (semantic layer)
    """
    CREATE TABLE fact_vectors (
        fact_id INTEGER PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        text_hash TEXT NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE INDEX fact_vectors_model ON fact_vectors(model);
    """,
    # v3 (lifecycle): confidence erosion. `confidence` is scored like freshness (see
    # overlay.engine.scoring); `confirmations` counts re-confirmations (refresh, same value re-added).
    """
    ALTER TABLE facts ADD COLUMN confidence REAL;
    ALTER TABLE facts ADD COLUMN confirmations INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX facts_gc ON facts(status, last_seen);
    """,
    # v4: write-back actions (overlay/store/actions.py): one row per applied action, with the
    # whole-row before/after images (typed) that undo restores from.
    """
    CREATE TABLE actions (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,            -- one apply: every action of a `plan --apply`
        run_at REAL NOT NULL,
        source TEXT NOT NULL,
        tbl TEXT NOT NULL,
        ref TEXT NOT NULL,
        pk TEXT NOT NULL,                -- JSON: the overlay's text pk
        kind TEXT NOT NULL,              -- annotate | set | delete
        action_index INTEGER,            -- position in [[actions]]
        spec TEXT NOT NULL,              -- JSON of the [[actions]] entry that asked for it
        label TEXT,
        fact_hash TEXT,                  -- facts.content_hash the plan was made on
        after_hash TEXT,                 -- content hash of the row after the write
        key_json TEXT,                   -- typed key of the row
        before_json TEXT,                -- typed whole-row image before the write
        after_json TEXT,                 -- typed whole-row image after it (NULL after delete)
        values_json TEXT,                -- values written (or the annotation's values)
        sweepable INTEGER NOT NULL DEFAULT 0,  -- wrote the store's expiry: its sweeper may delete the row
        state TEXT NOT NULL,             -- pending | applied | failed
        undone_at REAL,
        note TEXT
    );
    CREATE INDEX actions_ref ON actions(ref);
    CREATE INDEX actions_run_at ON actions(run_at);
    CREATE INDEX actions_state ON actions(state) WHERE state = 'pending';
    """,
    # v5: the daemon. `next_change` is the epoch at which a live fact's label next changes
    # with nothing else changing (NULL: never, or not live); the scheduled rescore reads
    # only `next_change <= now` through its index. Existing facts start due (0).
    """
    ALTER TABLE facts ADD COLUMN next_change REAL;
    UPDATE facts SET next_change = CASE WHEN status IN ('active', 'contradicted') THEN 0 END;
    CREATE INDEX facts_next_change ON facts(next_change);
    ALTER TABLE sources ADD COLUMN config_hash TEXT;
    ALTER TABLE sources ADD COLUMN last_full_sync REAL;
    ALTER TABLE sources ADD COLUMN last_deletion_scan REAL;
    ALTER TABLE sources ADD COLUMN keys_read_last_scan INTEGER;
    ALTER TABLE sources ADD COLUMN last_checked REAL;
    ALTER TABLE sources ADD COLUMN consecutive_errors INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sources ADD COLUMN last_error_at REAL;
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    # v6: several daemons on one (Postgres) overlay (overlay/store/leases.py). `leases` names the
    # daemon that holds each source's advisory lock; `epoch` grows at every takeover and
    # fences a sync of the previous holder. `sync_events` records who synced what, when.
    """
    CREATE TABLE leases (
        source TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT,
        pid INTEGER,
        epoch INTEGER NOT NULL,
        acquired_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL
    );
    CREATE TABLE sync_events (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        owner TEXT NOT NULL,
        epoch INTEGER NOT NULL,
        started_at REAL NOT NULL,
        finished_at REAL
    );
    CREATE INDEX sync_events_source ON sync_events(source, started_at);
    CREATE TABLE fleet_members (
        owner TEXT PRIMARY KEY,
        host TEXT,
        pid INTEGER,
        joined_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL
    );
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
MIGRATION_LOCK = 0x6D656D77   # pg_advisory_xact_lock key held while a Postgres overlay migrates

FACT_COLUMNS = ("source_id", "tbl", "pk", "ref", "subject", "key", "text", "category", "created_at",
                "updated_at", "accessed_at", "access_count", "expires_at", "content_hash",
                "first_seen", "last_seen", "seen_sync", "changed_sync", "status", "freshness",
                "label", "age_days", "days_left", "days_until_expired", "expired_by", "scored_as_of",
                "confidence", "next_change")
# A fact whose age depends on overlay state (a person's refresh, or no timestamps at all so
# first_seen counts) cannot be scored from the record alone: the upsert leaves it unscored
# and due (next_change 0), and the sync rescores exactly those through the index.
_NEEDS_OVERLAY_STATE = "(facts.refreshed_at IS NOT NULL OR (excluded.created_at IS NULL AND excluded.updated_at IS NULL))"
# Columns an upsert refreshes; first_seen, refreshed_at and a `forgotten` status survive it.
_UPSERT_SQL = (
    f"INSERT INTO facts ({', '.join(FACT_COLUMNS)}) VALUES ({', '.join('?' * len(FACT_COLUMNS))}) "
    "ON CONFLICT (source_id, pk) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in FACT_COLUMNS
                if c not in ("source_id", "pk", "first_seen", "changed_sync", "status", "scored_as_of",
                             "next_change"))
    + ", changed_sync = CASE WHEN facts.content_hash = excluded.content_hash "
      "THEN facts.changed_sync ELSE excluded.changed_sync END"
    + ", status = CASE WHEN facts.status = 'forgotten' AND facts.content_hash = excluded.content_hash "
      "THEN 'forgotten' ELSE excluded.status END"
    + f", scored_as_of = CASE WHEN {_NEEDS_OVERLAY_STATE} THEN NULL ELSE excluded.scored_as_of END"
    + f", next_change = CASE WHEN {_NEEDS_OVERLAY_STATE} THEN 0 ELSE excluded.next_change END"
)
LIVE = "status IN (" + ", ".join(f"'{s}'" for s in LIVE_STATUSES) + ")"
# The scheduled rescore's filter. Unary + keeps the planner on the next_change index (a
# range of due facts) rather than an index on status (every live fact).
DUE_WHERE = "next_change <= ? AND +status IN ('active', 'contradicted')"
_SCORE_INPUTS = ("id, category, created_at, updated_at, refreshed_at, first_seen, accessed_at, "
                 "access_count, expires_at, confirmations")
# Annotations ([[actions]] do = "annotate") of a fact's current content, as a JSON array.
_ANNOTATIONS_SQL = (
    "SELECT json_group_array(json_object('action_id', a.id, 'action', a.action_index, "
    "'when', json_extract(a.spec, '$.when'), 'label', a.label, 'values', json(a.values_json), "
    "'at', strftime('%Y-%m-%dT%H:%M:%fZ', a.run_at, 'unixepoch'))) FROM actions a "
    "WHERE a.ref = f.ref AND a.kind = 'annotate' AND a.state = 'applied' AND a.undone_at IS NULL "
    "AND a.fact_hash = f.content_hash")
# The same annotations in Postgres (json_agg is NULL over no rows; fact_dict reads that as []).
# `at` rounds to the millisecond exactly as SQLite's 'unixepoch' modifier does (in float8).
_PG_EPOCH_MS = ("(floor(a.run_at * 1000.0::float8 + 210866760000000.0::float8 + 0.5::float8)::bigint "
                "- 210866760000000)")
overlay_db.register_fragment(_ANNOTATIONS_SQL, (
    "SELECT json_agg(json_build_object('action_id', a.id, 'action', a.action_index, "
    "'when', a.spec::json ->> 'when', 'label', a.label, 'values', a.values_json::json, "
    "'at', to_char(to_timestamp(" + _PG_EPOCH_MS + "::numeric / 1000) AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')))::text "
    "FROM actions a WHERE a.ref = f.ref AND a.kind = 'annotate' AND a.state = 'applied' "
    "AND a.undone_at IS NULL AND a.fact_hash = f.content_hash"))
# The contradictions a report shows: the older fact neither deleted nor forgotten, the newer not deleted.
_REPORTED_CONTRADICTIONS = (
    "FROM contradictions c JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id "
    "WHERE o.status != 'deleted' AND o.status != 'forgotten' AND n.status != 'deleted'")
ANY = object()   # find_facts(subject=ANY): every subject (None means "no subject")
# The refs of the newer facts that contradict fact f, joined by char(31) (NULL: none).
_CONTRADICTED_BY_SQL = (
    "SELECT group_concat(n.ref, char(31)) FROM contradictions c "
    "JOIN facts n ON n.id = c.newer_id WHERE c.older_id = f.id AND n.status != 'deleted'")
# A fact with its source's name and the refs of the newer facts that contradict it.
FACT_SELECT = (
    f"SELECT f.*, s.name AS source_name, ({_CONTRADICTED_BY_SQL}) AS contradicted_by, "
    f"({_ANNOTATIONS_SQL}) AS annotations "
    "FROM facts f JOIN sources s ON s.id = f.source_id")
# The audit report's facts (AuditResult.iter_facts): only the columns of the JSON contract's
# facts[], in its order, read by position. Each per-fact subquery is guarded by an
# uncorrelated EXISTS that the database evaluates once per statement (same snapshot), so
# an overlay without contradictions or annotations (detection off, no write-back) skips
# them; a guarded-off subquery gives NULL, which reads as [] like the empty result.
_ANY_CONTRADICTION = "(SELECT EXISTS (SELECT 1 FROM contradictions))"
_ANY_ANNOTATION = ("(SELECT EXISTS (SELECT 1 FROM actions WHERE kind = 'annotate' AND state = 'applied' "
                   "AND undone_at IS NULL))")
REPORT_COLUMNS = (
    ("source", "s.name"), ("table", "f.tbl"), ("pk", "f.pk"), ("ref", "f.ref"),
    ("subject", "f.subject"), ("key", "f.key"), ("text", "f.text"), ("category", "f.category"),
    ("created_at", "f.created_at"), ("updated_at", "f.updated_at"), ("age_days", "f.age_days"),
    ("freshness", "f.freshness"), ("label", "f.label"), ("days_left", "f.days_left"),
    ("days_until_expired", "f.days_until_expired"), ("expires_at", "f.expires_at"),
    ("expired_by", "f.expired_by"), ("confidence", "f.confidence"), ("status", "f.status"),
    ("contradicted_by", f"CASE WHEN {_ANY_CONTRADICTION} THEN ({_CONTRADICTED_BY_SQL}) END"),
    ("first_seen", "f.first_seen"),
    ("annotations", f"CASE WHEN {_ANY_ANNOTATION} THEN ({_ANNOTATIONS_SQL}) END"),
)
REPORT_SELECT = (f"SELECT {', '.join(sql for _, sql in REPORT_COLUMNS)} "
                 "FROM facts f JOIN sources s ON s.id = f.source_id")


class OverlayStore:
    """Opens (and migrates) the overlay database: a SQLite file at `path`, or a
    postgresql:// DSN (overlay/store/postgres_dialect.py runs the same statements there)."""

    conn: Any           # sqlite3.Connection, or a PgConnection answering the same calls (plus stream())
    path: Path | str    # the file, or the DSN (reopened by path)

    def __init__(self, path: str | Path):
        if overlay_db.is_dsn(path):
            self._open_postgres(str(path))
            return
        self.path = Path(path)
        self.dialect = "sqlite"
        self.label = str(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None,
                                        check_same_thread=False)
            self.conn.row_factory = sqlite3.Row
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise OverlayError(f"{self.path}: cannot open the overlay database ({exc})") from None
        except OSError as exc:
            raise OverlayError(f"{self.path}: cannot create the overlay database ({exc})") from None

    def _open_postgres(self, dsn: str) -> None:
        self.path = dsn                       # reopened by path (write-back plans, check)
        self.dialect = "postgres"
        self.label = redact_dsn(dsn)          # what messages show
        self.conn = overlay_db.PgConnection(dsn)
        try:
            self._migrate()
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- schema -----------------------------------------------------------------------
    def _migrate(self) -> None:
        if self.dialect == "postgres":
            # Several daemons may start at once: one migrates, the others wait on the lock.
            with self.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
                self.conn.execute("CREATE TABLE IF NOT EXISTS memwatch_meta "
                                  "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self._migrate_steps()
            return
        self._migrate_steps()

    def _migrate_steps(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise OverlayError(f"{self.label}: overlay schema v{version} is newer than this "
                               f"memwatch-overlay understands (v{SCHEMA_VERSION}); upgrade it")
        for i in range(version, SCHEMA_VERSION):
            with self.transaction():
                for statement in _split_sql(MIGRATIONS[i]):
                    if self.dialect == "postgres":
                        statement = overlay_db.ddl_to_postgres(statement)
                    self.conn.execute(statement)
                self._set_schema_version(i + 1)

    def schema_version(self) -> int:
        if self.dialect == "postgres":
            row = self.conn.execute("SELECT value FROM memwatch_meta WHERE key = 'schema_version'").fetchone()
            return int(row[0]) if row else 0
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def _set_schema_version(self, version: int) -> None:
        if self.dialect == "postgres":
            self.conn.execute("INSERT INTO memwatch_meta (key, value) VALUES ('schema_version', ?) "
                              "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(version),))
        else:
            self.conn.execute(f"PRAGMA user_version = {int(version)}")

    def table_columns(self, table: str) -> list[str]:
        """Column names of an overlay table, in order."""
        if self.dialect == "postgres":
            return [r[0] for r in self.conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = ? ORDER BY ordinal_position", (table,))]
        return [r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")]

    def integrity(self) -> str:
        """'ok' when the database checks out (SQLite quick_check; Postgres: the server's job)."""
        if self.dialect == "postgres":
            return "ok" if self.conn.execute("SELECT 1").fetchone()[0] == 1 else "unreachable"
        return self.conn.execute("PRAGMA quick_check").fetchone()[0]

    def transaction(self):
        return _Transaction(self.conn)

    # -- sources ------------------------------------------------------------------------
    def ensure_source(self, name: str, connector: str, target: str, preset: str | None) -> int:
        row = self.conn.execute("SELECT id FROM sources WHERE name = ?", (name,)).fetchone()
        if row:
            self.conn.execute("UPDATE sources SET connector = ?, target = ?, preset = ? WHERE id = ?",
                              (connector, target, preset, row[0]))
            return row[0]
        cur = self.conn.execute("INSERT INTO sources (name, connector, target, preset) VALUES (?, ?, ?, ?)",
                                (name, connector, target, preset))
        return cur.lastrowid

    def source_row(self, name: str) -> sqlite3.Row | None:
        return self.conn.execute("SELECT * FROM sources WHERE name = ?", (name,)).fetchone()

    def sources(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM sources ORDER BY name").fetchall()

    def begin_sync(self, source_id: int) -> int:
        """Next sync number of a source (stored by finish_sync)."""
        return self.conn.execute("SELECT sync_count FROM sources WHERE id = ?", (source_id,)).fetchone()[0] + 1

    def finish_sync(self, source_id: int, sync_no: int, cursor: dict | None, rows_read: int,
                    changed: int, now: float, *, full: bool = True, config_hash: str | None = None,
                    rows_seen_delta: int | None = None) -> None:
        """Store the cursor and counters of a sync (inside the sync's transaction).

        `rows_seen_delta` (incremental syncs) adjusts the live count instead of recounting
        the source's facts, so a tick's overlay work stays proportional to what changed.
        """
        if rows_seen_delta is None:
            rows_seen = self.count_live(source_id)
        else:
            rows_seen = self.conn.execute("SELECT rows_seen FROM sources WHERE id = ?",
                                          (source_id,)).fetchone()[0] + rows_seen_delta
        self.conn.execute(
            "UPDATE sources SET sync_count = ?, cursor_json = ?, last_sync = ?, last_checked = ?, rows_seen = ?, "
            "rows_read_last_sync = ?, last_change = CASE WHEN ? > 0 THEN ? ELSE last_change END, "
            "last_error = NULL, consecutive_errors = 0, "
            "config_hash = coalesce(?, config_hash), "
            "last_full_sync = CASE WHEN ? THEN ? ELSE last_full_sync END, "
            "last_deletion_scan = CASE WHEN ? THEN ? ELSE last_deletion_scan END WHERE id = ?",
            (sync_no, json.dumps(cursor) if cursor is not None else None, now, now, rows_seen, rows_read,
             changed, now, config_hash, int(full), now, int(full), now, source_id))

    def count_live(self, source_id: int) -> int:
        return self.conn.execute(f"SELECT count(*) FROM facts WHERE source_id = ? AND {LIVE}",
                                 (source_id,)).fetchone()[0]

    def live_count_of(self, source_id: int, pks: list[str]) -> int:
        """How many of these pks (JSON text) are live facts of the source now (index lookups)."""
        n = 0
        for i in range(0, len(pks), 500):
            chunk = pks[i:i + 500]
            n += self.conn.execute(
                f"SELECT count(*) FROM facts WHERE source_id = ? AND pk IN ({', '.join('?' * len(chunk))}) "
                f"AND {LIVE}", (source_id, *chunk)).fetchone()[0]
        return n

    def ids_of(self, source_id: int, pks: list[str]) -> list[int]:
        out: list[int] = []
        for i in range(0, len(pks), 500):
            chunk = pks[i:i + 500]
            out += [r[0] for r in self.conn.execute(
                f"SELECT id FROM facts WHERE source_id = ? AND pk IN ({', '.join('?' * len(chunk))})",
                (source_id, *chunk))]
        return out

    def finish_deletion_scan(self, source_id: int, keys_read: int, now: float) -> None:
        self.conn.execute(
            "UPDATE sources SET last_deletion_scan = ?, keys_read_last_scan = ?, rows_seen = ?, "
            "last_checked = ?, last_error = NULL, consecutive_errors = 0 WHERE id = ?",
            (now, keys_read, self.count_live(source_id), now, source_id))

    def mark_checked(self, times: dict[str, float]) -> None:
        """Sources the daemon found unchanged are in sync as of these times (lag)."""
        self.conn.executemany("UPDATE sources SET last_checked = max(coalesce(last_checked, 0), ?) WHERE name = ?",
                              [(t, name) for name, t in times.items()])

    def record_error(self, name: str, message: str, now: float | None = None) -> None:
        self.conn.execute("UPDATE sources SET errors = errors + 1, consecutive_errors = consecutive_errors + 1, "
                          "last_error = ?, last_error_at = ? WHERE name = ?",
                          (message, time.time() if now is None else now, name))

    # -- meta (daemon heartbeat) ---------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def set_meta(self, key: str, value: Any) -> None:
        if value is None:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            return
        self.conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                          "value = excluded.value", (key, json.dumps(value)))

    def cursor_of(self, source_id: int) -> dict | None:
        row = self.conn.execute("SELECT cursor_json FROM sources WHERE id = ?", (source_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    # -- facts --------------------------------------------------------------------------
    # Indexes only readers use, not the upsert's conflict checks. Their keys arrive in
    # random order, so past the page cache each row costs random page writes (at 1M
    # facts: ~18 s of a ~30 s first sync); a bulk load drops them and builds them again
    # by sorting, inside the same transaction (a crash rolls the drop back too).
    BULK_INDEXES = ("facts_block", "facts_next_change")

    def drop_bulk_indexes(self) -> list[str]:
        """Drop BULK_INDEXES (inside a transaction); returns the SQL that recreates them.

        Not on Postgres: DROP INDEX locks `facts` for every other daemon sharing the overlay."""
        if self.dialect == "postgres":
            return []
        rows = self.conn.execute(
            f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name IN "
            f"({', '.join('?' * len(self.BULK_INDEXES))})", self.BULK_INDEXES).fetchall()
        for name, _ in rows:
            self.conn.execute(f'DROP INDEX "{name}"')
        return [sql for _, sql in rows]

    def create_indexes(self, statements: list[str]) -> None:
        for sql in statements:
            self.conn.execute(sql)

    def max_fact_id(self) -> int:
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM facts").fetchone()[0]

    def upsert_facts(self, rows: Iterable[tuple]) -> None:
        """Rows are tuples in FACT_COLUMNS order; call inside a transaction."""
        self.conn.executemany(_UPSERT_SQL, rows)

    def mark_unseen_deleted(self, source_id: int, sync_no: int) -> int:
        """After a full read: facts the source no longer has are `deleted` (kept, not erased)."""
        cur = self.conn.execute(
            "UPDATE facts SET status = 'deleted', next_change = NULL WHERE source_id = ? AND seen_sync < ? "
            "AND status != 'deleted'", (source_id, sync_no))
        return cur.rowcount

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
            f"SELECT id FROM facts WHERE source_id = ? AND {LIVE} "
            "AND pk NOT IN (SELECT pk FROM temp.mw_keys)", (source_id,))]
        self.conn.executemany("UPDATE facts SET status = 'deleted', next_change = NULL WHERE id = ?",
                              ((i,) for i in ids))
        return ids

    def keys_not_in_overlay(self, source_id: int) -> list[str]:
        """Keys the source has but the overlay holds no non-deleted fact for (missed rows)."""
        return [r[0] for r in self.conn.execute(
            "SELECT k.pk FROM temp.mw_keys k WHERE NOT EXISTS (SELECT 1 FROM facts f WHERE "
            "f.source_id = ? AND f.pk = k.pk AND f.status != 'deleted')", (source_id,))]

    def drop_source_keys(self) -> None:
        self.conn.execute("DROP TABLE IF EXISTS temp.mw_keys")

    def fact_id(self, ref: str) -> int | None:
        row = self.conn.execute("SELECT id FROM facts WHERE ref = ?", (ref,)).fetchone()
        return row[0] if row else None

    def block(self, subject: str | None, category: str, exclude_id: int | None = None) -> list[sqlite3.Row]:
        """Live facts of one subject and category: the only ones a new fact is compared with."""
        return self.conn.execute(
            f"SELECT * FROM facts WHERE subject IS ? AND category = ? AND {LIVE} AND id IS NOT ?",
            (subject, category, exclude_id)).fetchall()

    def add_contradiction(self, older_id: int, newer_id: int, kind: str, confidence: float,
                          evidence: str, update: dict | None, now: float) -> None:
        self.conn.execute(
            "INSERT INTO contradictions (older_id, newer_id, kind, confidence, evidence, update_json, detected_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (older_id, newer_id) DO UPDATE SET "
            "kind = excluded.kind, confidence = excluded.confidence, evidence = excluded.evidence, "
            "update_json = excluded.update_json",
            (older_id, newer_id, kind, confidence, evidence, json.dumps(update) if update else None, now))

    def iter_blocks_scan(self, source_id: int, sync_no: int) -> Iterator:
        """Every live fact in block order (subject, category, id), each flagged `mw_changed`
        when this sync changed it; streamed (a server-side cursor on Postgres)."""
        sql = (f"SELECT *, (source_id = ? AND changed_sync = ?) AS mw_changed FROM facts WHERE {LIVE} "
               "ORDER BY subject, category, id")
        if self.dialect == "postgres":
            return self.conn.stream(sql, (source_id, sync_no))
        return self.conn.execute(sql, (source_id, sync_no))

    def add_new_contradictions(self, rows: list[tuple], now: float) -> int:
        """Insert (older_id, newer_id, kind, confidence, evidence, update) rows, keeping any
        pair already stored as it is; returns how many were new."""
        cur = self.conn.executemany(
            "INSERT INTO contradictions (older_id, newer_id, kind, confidence, evidence, update_json, detected_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (older_id, newer_id) DO NOTHING",
            [(o, n, k, c, e, json.dumps(u) if u else None, now) for o, n, k, c, e, u in rows])
        return cur.rowcount

    def clear_contradictions_of(self, fact_ids: Iterable[int]) -> None:
        """Changed facts are judged again from scratch."""
        self.conn.executemany("DELETE FROM contradictions WHERE older_id = ? OR newer_id = ?",
                              ((i, i) for i in fact_ids))

    def apply_contradiction_status(self, source_id: int | None = None, fact_ids: Iterable[int] | None = None) -> None:
        """status = contradicted exactly for live facts a live newer fact contradicts.

        Only facts that are contradicted now or are the older side of a stored contradiction
        can change; every other live fact is active and stays so. Looking at those alone
        (status index, contradictions table) keeps a one-row sync from touching every fact.
        With `fact_ids`, only those facts are recomputed (an incremental sync passes the
        facts it touched and their older partners: `older_partners()`).
        """
        sql = ("UPDATE facts SET status = CASE WHEN EXISTS (SELECT 1 FROM contradictions c JOIN facts n "
               "ON n.id = c.newer_id WHERE c.older_id = facts.id AND n.status IN ('active', 'contradicted')) "
               "THEN 'contradicted' ELSE 'active' END WHERE status IN ('active', 'contradicted')")
        if fact_ids is not None:
            self.conn.executemany(sql + " AND id = ?", ((i,) for i in fact_ids))
            return
        scope = "" if source_id is None else f" AND source_id = {int(source_id)}"
        self.conn.execute(
            sql + " AND id IN (SELECT id FROM facts WHERE status = 'contradicted' UNION SELECT older_id "
            f"FROM contradictions){scope}")

    def has_contradictions(self) -> bool:
        return self.conn.execute("SELECT 1 FROM contradictions LIMIT 1").fetchone() is not None

    def older_partners(self, fact_ids: Iterable[int]) -> set[int]:
        """Facts that these (newer) facts contradict: their status depends on these."""
        out: set[int] = set()
        for i in fact_ids:
            out.update(r[0] for r in self.conn.execute("SELECT older_id FROM contradictions WHERE newer_id = ?", (i,)))
        return out

    def contradicted_by(self, fact_id: int) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT n.ref FROM contradictions c JOIN facts n ON n.id = c.newer_id "
            "WHERE c.older_id = ? ORDER BY n.ref", (fact_id,))]

    def iter_contradictions(self, source_ids: list[int] | None = None) -> Iterator[dict]:
        """Contradictions between facts still in the report (older side neither deleted nor
        forgotten, newer side not deleted), streamed (a server-side cursor on Postgres)."""
        # Unary +: SQLite scans the contradictions and looks both facts up by id, rather than
        # probing the contradictions of every fact of the sources (slower even when none).
        scope, params = _scope("+o.source_id", source_ids)
        sql = ("SELECT o.ref AS older, n.ref AS newer, c.kind, c.confidence, c.evidence, c.update_json "
               f"{_REPORTED_CONTRADICTIONS} {scope} ORDER BY o.ref, n.ref")
        rows = self.conn.stream(sql, params) if self.dialect == "postgres" else self._tuples(sql, params)
        for older, newer, kind, confidence, evidence, update_json in rows:
            item = {"older": older, "newer": newer, "kind": kind, "confidence": round(confidence, 3),
                    "evidence": evidence}
            if update_json:
                item["update"] = jsontext.loads(update_json)
            yield item

    def count_contradictions(self, source_ids: list[int] | None = None) -> int:
        """How many contradictions iter_contradictions() yields, counted in the database."""
        scope, params = _scope("+o.source_id", source_ids)
        return self.conn.execute(f"SELECT count(*) {_REPORTED_CONTRADICTIONS} {scope}", params).fetchone()[0]

    def contradiction_evidence(self, older_ref: str) -> list[dict]:
        """{newer, evidence} of the reported contradictions of one (older) fact, newer ref
        order: what iter_contradictions() yields for it, read through the ref index."""
        return [{"newer": newer, "evidence": evidence} for newer, evidence in self._tuples(
            f"SELECT n.ref, c.evidence {_REPORTED_CONTRADICTIONS} AND o.ref = ? ORDER BY n.ref", (older_ref,))]

    def iter_fact_rows(self, source_ids: list[int] | None = None, include_deleted: bool = True,
                       order: str = "f.id") -> Iterator[sqlite3.Row]:
        scope, params = _scope("f.source_id", source_ids)
        status = "f.status != 'forgotten'" if include_deleted else "f.status IN ('active', 'contradicted')"
        sql = f"{FACT_SELECT} WHERE {status} {scope} ORDER BY {order}"
        if self.dialect == "postgres":
            return self.conn.stream(sql, params)
        return self.conn.execute(sql, params)

    def iter_report_rows(self, source_ids: list[int] | None = None, order: str = "f.id",
                         limit: int | None = None) -> Iterator[tuple]:
        """Facts (deleted ones too, not forgotten ones) as plain tuples of REPORT_COLUMNS,
        streamed (a server-side cursor on Postgres); the first `limit` only when given
        (a bounded sort, and the subqueries run for those rows alone).

        Unary + keeps SQLite off the source_id index: through it, ORDER BY f.id would sort
        every report row (spilling to temporary files at a million facts) before the first
        one comes out; a scan in id order streams them, and costs a filtered pass over other
        sources' facts (~0.15 s a million) when the audit covers only some sources."""
        scope, params = _scope("+f.source_id", source_ids)
        sql = f"{REPORT_SELECT} WHERE f.status != 'forgotten' {scope} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        if self.dialect == "postgres":
            return self.conn.stream(sql, params)
        return self._tuples(sql, params)

    def _tuples(self, sql: str, params: tuple = ()) -> Iterator[tuple]:
        """Rows of a SELECT read by position: plain tuples on SQLite (no sqlite3.Row and its
        lookups by name), the connection's rows (tuples too) on Postgres."""
        if self.dialect == "postgres":
            return self.conn.execute(sql, params)
        cursor = self.conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params)

    def find_facts(self, *, subject: Any = ANY, labels: Iterable[str] | None = None,
                   statuses: Iterable[str] = ("active", "contradicted"), limit: int | None = None) -> list[sqlite3.Row]:
        """Facts (every source) in the shape iter_fact_rows yields, stalest first.

        `subject` None selects facts without a subject; leave it out for every subject.
        """
        where, params = [], []
        statuses = list(statuses)
        where.append(f"f.status IN ({', '.join('?' * len(statuses))})")
        params += statuses
        if subject is not ANY:
            where.append("f.subject IS ?")
            params.append(subject)
        if labels is not None:
            labels = list(labels)
            where.append(f"f.label IN ({', '.join('?' * len(labels))})")
            params += labels
        sql = f"{FACT_SELECT} WHERE {' AND '.join(where)} ORDER BY f.freshness, f.id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self.conn.execute(sql, params).fetchall()

    def summary(self, source_ids: list[int] | None = None, group_by: str | None = None) -> Any:
        """Counts per label over live facts (deleted/forgotten excluded)."""
        scope, params = _scope("f.source_id", source_ids)
        group_col = {"category": "f.category", "source": "s.name", None: "''"}[group_by]
        rows = self.conn.execute(
            f"SELECT {group_col} AS grp, count(*) AS total, "
            "sum(CASE WHEN f.label = 'fresh' THEN 1 ELSE 0 END) AS fresh, sum(CASE WHEN f.label = 'aging' THEN 1 ELSE 0 END) AS aging, "
            "sum(CASE WHEN f.label = 'stale' THEN 1 ELSE 0 END) AS stale, sum(CASE WHEN f.label = 'expired' THEN 1 ELSE 0 END) AS expired, "
            "sum(CASE WHEN f.status = 'contradicted' THEN 1 ELSE 0 END) AS contradicted, avg(f.freshness) AS avg_freshness "
            f"FROM facts f JOIN sources s ON s.id = f.source_id WHERE f.{LIVE} {scope} "
            "GROUP BY grp ORDER BY grp", params).fetchall()
        deleted = dict(self.conn.execute(
            f"SELECT {group_col} AS grp, count(*) FROM facts f JOIN sources s ON s.id = f.source_id "
            f"WHERE f.status = 'deleted' {scope} GROUP BY grp", params).fetchall())
        out = {}
        for r in rows:
            out[r["grp"]] = _summary_dict(r, deleted.get(r["grp"], 0))
        for grp, n in deleted.items():
            out.setdefault(grp, {**_summary_dict(None, n)})
        if group_by is None:
            return out.get("", _summary_dict(None, 0))
        return out

    def rescore(self, score_row, as_of: float, source_ids: list[int] | None = None, batch: int = 5000,
                fact_ids: list[int] | None = None, next_change=None) -> int:
        """Recompute freshness/label/confidence of live facts at `as_of` with `score_row(row) -> Score`.

        `next_change(as_of, score)` gives the epoch stored in `next_change` (None: never due).
        """
        scope, params = _scope("source_id", source_ids)
        if fact_ids is not None:
            more, more_params = _scope("id", fact_ids)
            scope, params = scope + more, params + more_params
        sql = f"SELECT {_SCORE_INPUTS} FROM facts WHERE {LIVE} AND scored_as_of IS NOT ? {scope}"
        with self.transaction():
            if self.dialect == "postgres":
                # A plain psycopg cursor holds the whole result client-side; a million facts'
                # score inputs stream through a server-side cursor instead, a batch at a time.
                stream = self.conn.stream(sql, (as_of, *params), itersize=batch)
                pages = iter(lambda: list(itertools.islice(stream, batch)), [])
                return self._write_scores(pages, score_row, as_of, batch, next_change, pages=True)
            rows = self.conn.execute(sql, (as_of, *params))
            return self._write_scores(rows, score_row, as_of, batch, next_change)

    def rescore_due(self, score_row, as_of: float, now: float, next_change, source_ids: list[int] | None = None,
                    batch: int = 5000) -> int:
        """Rescore only facts whose label can have changed by `now` (`next_change <= now`, indexed).

        `next_change(as_of, score)` must return an epoch > `now` (or None) so each fact leaves
        the due range once rescored; pages are fetched whole before they are updated.
        """
        scope, params = _scope("+source_id", source_ids)   # unary +: the next_change index, not source_id's
        n = 0
        with self.transaction():
            # Facts that stopped being live (deleted, forgotten) leave the schedule.
            self.conn.execute(f"UPDATE facts SET next_change = NULL WHERE next_change <= ? "
                              f"AND NOT +status IN ('active', 'contradicted') {scope}", (now, *params))
            while True:
                page = self.conn.execute(
                    f"SELECT {_SCORE_INPUTS} FROM facts WHERE {DUE_WHERE} {scope} LIMIT ?",
                    (now, *params, batch)).fetchall()
                if not page:
                    return n
                n += self._write_scores(iter([page]), score_row, as_of, batch, next_change, pages=True,
                                        floor=now + 1e-3)

    def _write_scores(self, rows, score_row, as_of: float, batch: int, next_change, pages: bool = False,
                      floor: float | None = None) -> int:
        n = 0
        while True:
            chunk = next(rows, None) if pages else rows.fetchmany(batch)
            if not chunk:
                break
            updates: list[tuple] = []
            append = updates.append
            for r in chunk:
                s = score_row(r)
                nxt = next_change(as_of, s) if next_change is not None else None
                if floor is not None and nxt is not None and nxt < floor:
                    nxt = floor   # leaves the due range, so one call never loops on a fact
                append((s.freshness, s.label, s.age_days, s.days_left, s.days_until_expired,
                        s.expired_by, s.confidence, as_of, nxt, r["id"]))
            self.conn.executemany(
                "UPDATE facts SET freshness = ?, label = ?, age_days = ?, days_left = ?, days_until_expired = ?, "
                "expired_by = ?, confidence = ?, scored_as_of = ?, next_change = ? WHERE id = ?", updates)
            n += len(updates)
        return n

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

    def fact_row(self, ref: str) -> sqlite3.Row | None:
        """One fact with its source's name, in the shape iter_fact_rows yields."""
        return self.conn.execute(
            f"{FACT_SELECT} WHERE f.ref = ?", (ref,)).fetchone()

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

    # -- runs ----------------------------------------------------------------------------
    def record_run(self, kind: str, as_of: float, sources: list[str], passed: bool | None,
                   summary: dict, started_at: float | None = None) -> int:
        cur = self.conn.execute(
            "INSERT INTO runs (started_at, as_of, kind, sources, passed, summary_json) VALUES (?, ?, ?, ?, ?, ?)",
            (started_at or time.time(), as_of, kind, json.dumps(sources),
             None if passed is None else int(passed), json.dumps(summary)))
        return cur.lastrowid

    def runs(self, limit: int = 20) -> list[dict]:
        rows = self.conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [_run_dict(r) for r in reversed(rows)]

    def iter_runs(self, kind: str | None = None) -> Iterator[dict]:
        """Runs newest first, optionally of one kind (``audit``)."""
        where, params = ("WHERE kind = ?", (kind,)) if kind else ("", ())
        for r in self.conn.execute(f"SELECT * FROM runs {where} ORDER BY id DESC", params):
            yield _run_dict(r)


def _run_dict(r) -> dict:
    return {"id": r["id"], "started_at": r["started_at"], "as_of": r["as_of"], "kind": r["kind"],
            "sources": json.loads(r["sources"]), "passed": None if r["passed"] is None else bool(r["passed"]),
            "summary": json.loads(r["summary_json"])}


def _summary_dict(row, deleted: int) -> dict:
    if row is None:
        return {"total": 0, "fresh": 0, "aging": 0, "stale": 0, "expired": 0, "contradicted": 0,
                "avg_freshness": 0.0, "deleted": deleted}
    return {"total": row["total"], "fresh": row["fresh"] or 0, "aging": row["aging"] or 0,
            "stale": row["stale"] or 0, "expired": row["expired"] or 0,
            "contradicted": row["contradicted"] or 0,
            "avg_freshness": round(row["avg_freshness"] or 0.0, 4), "deleted": deleted}


def _scope(column: str, ids: list[int] | None) -> tuple[str, tuple]:
    if ids is None:
        return "", ()
    if not ids:
        return " AND 1 = 0", ()
    return f" AND {column} IN ({', '.join('?' * len(ids))})", tuple(ids)


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements (they hold no semicolons inside literals)."""
    out = []
    for part in script.split(";"):
        lines = [ln for ln in part.splitlines() if ln.strip() and not ln.strip().startswith("--")]
        if lines:
            out.append("\n".join(lines))
    return out


class _Transaction:
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
