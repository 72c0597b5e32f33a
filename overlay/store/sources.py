"""The `sources` table (one row per watched store: its cursor, sync counters, errors) and
the `meta` key/value table (the daemon's heartbeat)."""
from __future__ import annotations

import json
import sqlite3
import time
from typing import Any
from memwatch_overlay.overlay.store.sqlhelpers import RepoBase


class SourcesRepo(RepoBase):
    """Mixin of OverlayStore: sources, their sync bookkeeping, and meta."""

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

    def set_sync_count(self, source_id: int, sync_no: int) -> None:
        """Record a sync number without the rest of finish_sync (the deletion pass's fetch)."""
        self.conn.execute("UPDATE sources SET sync_count = ? WHERE id = ?", (sync_no, source_id))

    def mark_source_changed(self, source_id: int, now: float) -> None:
        self.conn.execute("UPDATE sources SET last_change = ? WHERE id = ?", (now, source_id))

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

    def cursor_of(self, source_id: int) -> dict | None:
        row = self.conn.execute("SELECT cursor_json FROM sources WHERE id = ?", (source_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

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
