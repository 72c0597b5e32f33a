"""The overlay database: memwatch's own state, never inside the watched store.

Why a separate file: the bot's store must never see a schema change, an extra table or
a lock held by us. Everything memwatch knows (scores, labels, contradictions, cursors,
run history, write-back before-images) lives here, keyed by the source's own primary
keys, so deleting the overlay loses nothing of the bot's.

SQLite in WAL mode, integer row ids, batched writes in one transaction per sync. The
schema is versioned: overlay/store/migrations/ holds one module per version.

`OverlayStore` is the one object the rest of the application talks to. Its methods come
from one repository per concern (each a mixin over the same connection):
schema.py (migrations), sources.py (sources, meta), facts.py (the facts and their column
spec), compare.py (a re-audit's set comparison with a SQLite source), bulk_load.py (a first
load of a SQLite source table by INSERT … SELECT),
scores.py (score inputs out, scores in), reports.py (report rows, summaries),
contradictions.py, vectors.py, verdicts.py (the judge's cache), runs.py. actions.py,
leases.py and backup.py work on a
store from outside it. No module outside this package runs SQL on the overlay
(tests/test_store_sql.py).
"""
from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from memwatch_overlay.core.errors import OverlayError
from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.core.sqlite_files import special_sidecar
from memwatch_overlay.overlay.store import postgres_dialect as overlay_db
from memwatch_overlay.overlay.store.bulk_load import BulkLoadRepo
from memwatch_overlay.overlay.store.compare import CompareRepo
from memwatch_overlay.overlay.store.contradictions import ContradictionsRepo
from memwatch_overlay.overlay.store.facts import (  # noqa: F401 (re-exported: the store's vocabulary)
    ANY,
    FACT_COLUMNS,
    FACT_SELECT,
    LIVE,
    FactRow,
    FactsRepo,
)
from memwatch_overlay.overlay.store.migrations import MIGRATIONS, SCHEMA_VERSION  # noqa: F401
from memwatch_overlay.overlay.store.plain_rescore import PlainRescoreRepo
from memwatch_overlay.overlay.store.reports import REPORT_COLUMNS, ReportRow, ReportsRepo  # noqa: F401
from memwatch_overlay.overlay.store.runs import RunsRepo
from memwatch_overlay.overlay.store.schema import MIGRATION_LOCK, SchemaRepo  # noqa: F401
from memwatch_overlay.overlay.store.scores import DUE_WHERE, SCORE_INPUTS, ScoresRepo, ScoreUpdate  # noqa: F401
from memwatch_overlay.overlay.store.sources import SourcesRepo
from memwatch_overlay.overlay.store.sqlhelpers import Transaction, pragma_for
from memwatch_overlay.overlay.store.sqlhelpers import split_sql as _split_sql  # noqa: F401
from memwatch_overlay.overlay.store.vectors import VectorsRepo
from memwatch_overlay.overlay.store.verdicts import VerdictsRepo

# The pages the connection may cache while a walk of many changed facts runs, in KB
# (wider_page_cache)
WALK_PAGE_CACHE_KB = 65536


class OverlayStore(SchemaRepo, SourcesRepo, FactsRepo, CompareRepo, BulkLoadRepo, ScoresRepo, PlainRescoreRepo,
                   ReportsRepo, ContradictionsRepo, VectorsRepo, VerdictsRepo, RunsRepo):
    """Opens (and migrates) the overlay database: a SQLite file at `path`, or a
    postgresql:// DSN (overlay/store/postgres_dialect.py runs the same statements there)."""

    path: Path | str    # the file, or the DSN (reopened by path)
    _checkpointer: threading.Thread | None = None      # checkpoint_in_background()

    def __init__(self, path: str | Path):
        if overlay_db.is_dsn(path):
            self._open_postgres(str(path))
            return
        self.path = Path(path)
        self.dialect = "sqlite"
        self.label = str(self.path)
        problem = special_sidecar(self.path)
        if problem:
            raise OverlayError(f"{problem}; refusing to open the overlay {self.path}")
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

    def defer_checkpoints(self) -> None:
        """SQLite: a commit no longer copies the write-ahead log into the database file
        (`wal_autocheckpoint` 0) until checkpoint_in_background() does it beside what comes
        next, or close() does (the last connection closed checkpoints what is left).

        A one-shot audit's first load writes the whole overlay into the log (about 250 MB
        at 1M facts) and its commit then copied it all, alone: 0.7-1.4 s."""
        if self.dialect == "sqlite":
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")

    @contextmanager
    def wider_page_cache(self, kb: int = WALK_PAGE_CACHE_KB) -> Iterator[None]:
        """SQLite: let this connection keep up to `kb` KB of pages while the block runs (the
        default is 2 MB), then as it was. A walk of many changed facts reads them through the
        subject index and marks what it outdated, both in subject order, not the file's: with
        the default cache nearly every such row is a page read again from the log or the
        file (1M facts: 0.9-1.5 s less CPU in the sync's process). Not for a load: a wider
        cache made a 1M first load slower (0.4-1.2 s in three pairs) and 110 MB larger."""
        if self.dialect != "sqlite":
            yield
            return
        with pragma_for(self.conn, "cache_size", -kb):
            yield

    def checkpoint_in_background(self) -> None:
        """SQLite: copy the log into the database file from a connection of its own, in a
        thread (sqlite releases the GIL), while this connection reads and writes on (a
        passive checkpoint waits for no one). close() waits for it."""
        if self.dialect != "sqlite" or self._checkpointer is not None:
            return
        path = str(self.path)

        def checkpoint() -> None:
            try:
                conn = sqlite3.connect(path, timeout=30.0)
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                finally:
                    conn.close()
            except sqlite3.Error:
                pass        # close() checkpoints what is left
        self._checkpointer = threading.Thread(target=checkpoint, name="memwatch-checkpoint")
        self._checkpointer.start()

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.join()
            self._checkpointer = None
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def transaction(self):
        return Transaction(self.conn)
