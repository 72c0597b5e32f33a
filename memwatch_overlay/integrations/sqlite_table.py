"""The memwatch README's SQLite adapter: point memwatch at a table of memories an app
already keeps (key and value columns), and check what the user says against it.

    from memwatch_overlay.integrations.sqlite_table import SQLiteTableAdapter

    adapter = SQLiteTableAdapter("my_app.db", "memwatch.db", table="user_facts",
                                 key_column="fact_key", value_column="fact_value")
    result = adapter.run_check("I just moved to Surabaya for my new job at Anthropic")
    print(result.summary)                  # "2 contradiction(s) detected. 0 stale memories."
    for u in result.suggested_updates:     # u["action"], u["memory_key"], u["old_value"], ...
        print(u)

A thin layer over the engine: the table is a `sqlite` source (opened read-only, never
written), synced into the overlay before each check (an incremental read: only what
changed since the last one when the table has an `updated_at`-like column; without one,
the whole table, since an edited row would look unchanged), and `run_check` is
`memwatch-overlay check`. The id column is
the table's primary key unless given (else the key column); the subject and time
columns are the usual names when present (`user_id`, `created_at`, `updated_at`, ...),
or given; without a time column a row is aged from when memwatch first saw it.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from memwatch_overlay.connectors.presets.generic import (CREATED_NAMES, SUBJECT_NAMES, UPDATED_NAMES, _pick)
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.detect.blocks import make_detector
from memwatch_overlay.overlay.engine.check import CheckResult, check_text
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import Config, SourceConfig, load_config


class SQLiteTableAdapter:
    """An existing SQLite table of key/value memories, watched through an overlay."""

    def __init__(self, source_db: str | Path, overlay_db: str | Path = "memwatch.db", *, table: str,
                 key_column: str, value_column: str, id_column: str | list[str] | None = None,
                 subject_column: str | None = None, created_column: str | None = None,
                 updated_column: str | None = None, source: str = "bot", config: str | Config | None = None,
                 clock: Callable[[], float] = time.time):
        self.config = config if isinstance(config, Config) else (load_config(config) if config else Config())
        self.clock = clock
        self.overlay_db = str(overlay_db)
        columns, pk = self._columns(Path(source_db), table)
        for name, col in (("key_column", key_column), ("value_column", value_column)):
            if col not in columns:
                raise ConfigError(f"{source_db}: table {table!r} has no column {col!r} "
                                  f"(columns: {', '.join(columns)})", field=name)
        used = {key_column, value_column}
        created = created_column or _pick(columns, CREATED_NAMES, exclude=used)
        updated = updated_column or _pick(columns, UPDATED_NAMES, exclude=used | {created})
        subject = subject_column or _pick(columns, SUBJECT_NAMES, exclude=used)
        ids = id_column or (list(pk) if pk else key_column)
        self.source = SourceConfig(name=source, connector="sqlite", path=str(Path(source_db).resolve()),
                                   table=table, id=ids if isinstance(ids, list) else [ids], text=value_column,
                                   key=key_column, subject=subject, created_at=created or updated,
                                   updated_at=updated if created else None)

    @staticmethod
    def _columns(path: Path, table: str) -> tuple[list[str], list[str]]:
        conn = SqliteConnector(SourceConfig(name="probe", connector="sqlite", path=str(path), table=table))
        conn.open()
        try:
            for info in conn.describe():
                if info.name == table:
                    return list(info.columns), list(info.pk or [])
        finally:
            conn.close()
        raise ConfigError(f"{path}: no table {table!r}", field="table")

    def sync(self):
        """Read what changed in the table since the last sync into the overlay (SyncStats)."""
        with OverlayStore(self.overlay_db) as store:
            engine = SyncEngine(store, self.config, detector=make_detector(self.config))
            # incremental only when an updated_at column shows edits; without one an edited row
            # looks unchanged to a rowid cursor, so the table is read whole
            full = store.source_row(self.source.name) is None or not self.source.updated_at
            return engine.sync(self.source, as_of=self.clock(), full=full)

    def run_check(self, text: str, subject: str | None = None) -> CheckResult:
        """Sync, then compare `text` with the table's memories (of `subject`, or all):
        contradictions with suggested UPDATE/EXPIRE, stale memories on the same topics."""
        self.sync()
        return check_text(text, self.config, overlay_path=self.overlay_db, subject=subject, as_of=self.clock())
