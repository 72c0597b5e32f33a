"""Schema versions: applying the numbered migrations (overlay/store/migrations/) in order,
and what the store knows about its own tables."""
from __future__ import annotations

from memwatch_overlay.core.errors import OverlayError
from memwatch_overlay.overlay.store import postgres_dialect as overlay_db
from memwatch_overlay.overlay.store.migrations import MIGRATIONS_BY_VERSION, SCHEMA_VERSION
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase, split_sql

SNAPSHOT_META = "snapshot:"   # meta key prefix of a source's recorded snapshot (overlay/engine/source_snapshot.py)
MIGRATION_LOCK = 0x6D656D77   # pg_advisory_xact_lock key held while a Postgres overlay migrates
ANALYZE_MIN = 500             # Postgres: facts a sync writes before it refreshes the planner's statistics
FACTS_FILLFACTOR = 50         # Postgres: percent of a `facts` page filled by inserts (see _postgres_storage)


class SchemaRepo(RepoBase):
    """Mixin of OverlayStore: migrations and schema introspection."""

    def _migrate(self) -> None:
        if self.dialect == "postgres":
            # Several daemons may start at once: one migrates, the others wait on the lock.
            with self.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
                self.conn.execute("CREATE TABLE IF NOT EXISTS memwatch_meta "
                                  "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self._migrate_steps()
                self._postgres_storage()
            return
        self._migrate_steps()

    def _postgres_storage(self) -> None:
        """Postgres storage settings the schema's statements cannot say in SQLite's dialect:
        `facts` pages are filled to FACTS_FILLFACTOR percent (pages written from then on). A
        rescore rewrites every fact's scores; with room on the row's own page and no indexed
        column changed (scores.write_scores keeps `next_change` when it is the same instant),
        Postgres updates the row in place (HOT) instead of adding an entry to each index of
        `facts`. At 80 a full rescore of 100k facts found room for about 28% of its rows
        (one new version per row needs as much free space as the row), at 50 for nearly all.
        An overlay made with another setting gets this one when opened (the catalog is read
        first: no lock when it is already set)."""
        row = self.conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'facts'::regclass").fetchone()
        if f"fillfactor={FACTS_FILLFACTOR}" not in (row[0] or []):
            self.conn.execute(f"ALTER TABLE facts SET (fillfactor = {FACTS_FILLFACTOR})")

    def refresh_statistics(self, written: int) -> bool:
        """Postgres: ANALYZE `facts` after a sync wrote `written` facts, when that is at least
        ANALYZE_MIN and a tenth of what the planner last counted (autovacuum's own rule, but
        now: its daemon wakes a minute later at the soonest, or never where it is off). With
        the counts of an empty table, the planner read a re-audit's page of 2,000 keys by
        scanning all 100k facts of the source (86 ms a page) instead of the (source_id, pk)
        index (4 ms). Call outside a transaction. Returns whether it analyzed."""
        if self.dialect != "postgres" or written < ANALYZE_MIN:
            return False
        counted = self.conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'facts'::regclass").fetchone()[0]
        if counted >= 0 and written < counted / 10:        # -1: never counted
            return False
        # the columns the overlay's statements select facts by (the table's size comes with
        # any of them; without pk's, `pk = ANY(…)` is guessed to keep every row: a scan):
        # all 28 columns took 0.36-0.47 s at 100k facts, these 0.07-0.15 s
        self.conn.execute("ANALYZE facts (source_id, pk, status, changed_sync, seen_sync)")
        return True

    def _migrate_steps(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise OverlayError(f"{self.label}: overlay schema v{version} is newer than this "
                               f"memwatch-overlay understands (v{SCHEMA_VERSION}); upgrade it")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            migration = MIGRATIONS_BY_VERSION[target]
            with self.transaction():
                for statement in split_sql(migration.statements_for(self.dialect)):
                    if self.dialect == "postgres":
                        statement = overlay_db.ddl_to_postgres(statement)
                    self.conn.execute(statement)
                if migration.after is not None:
                    migration.after(self)
                if target >= 5:   # (`meta` exists from v5)
                    # a source snapshot vouches for facts as this schema held them (source_snapshot.py)
                    self.conn.execute(f"DELETE FROM meta WHERE key LIKE '{SNAPSHOT_META}%'")
                self._set_schema_version(target)

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

    def is_empty(self) -> bool:
        """No source and no fact yet (an import goes only into an empty overlay)."""
        return not self.conn.execute(
            "SELECT (SELECT count(*) FROM sources) + (SELECT count(*) FROM facts)").fetchone()[0]
