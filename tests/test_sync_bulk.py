"""A first load into an empty overlay (issue 15.3): indexes nothing reads during the load are
built after it, and pages are written by a second thread while the next one is built.

What must hold: the overlay ends with exactly the schema's indexes and the same facts as a
page-by-page load in one thread; a read or a write failing mid-load leaves the overlay as
it was (one transaction), and the failure reaches the caller.
"""
from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

AS_OF = 1_796_000_000.0
N = sync_module.BATCH * 3 + 17        # several pages and a short last one


def make_store(path: Path, n: int = N) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?)",
                     ((i, f"u{i % 11}", f"fact number {i}", f"2026-0{1 + i % 9}-01 00:00:00")
                      for i in range(1, n + 1)))
    conn.commit()
    conn.close()


def config_for(path: Path):
    return parse_config({"detector": {"enabled": False},
                         "sources": [{"name": "bot", "connector": "sqlite", "path": str(path), "table": "memories",
                                      "id": "id", "text": "fact", "subject": "user_id",
                                      "created_at": "created_at"}]})


def indexes(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' "
                        "ORDER BY name").fetchall()
    conn.close()
    return rows


def fact_rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    cols = [c[1] for c in conn.execute("PRAGMA table_info(facts)") if c[1] not in ("first_seen", "last_seen")]
    rows = conn.execute(f"SELECT {', '.join(cols)} FROM facts ORDER BY id").fetchall()
    conn.close()
    return rows


def sync_into(overlay: Path, cfg, connector=None):
    store = OverlayStore(overlay)
    try:
        return SyncEngine(store, cfg).sync(cfg.sources[0], as_of=AS_OF, full=True, connector=connector)
    finally:
        store.close()


def test_a_first_load_ends_with_the_schemas_indexes_and_the_same_facts_as_one_thread(tmp_path, monkeypatch):
    src = tmp_path / "bot.db"
    make_store(src)
    cfg = config_for(src)
    empty = tmp_path / "empty.db"
    OverlayStore(empty).close()
    threads = []
    real = OverlayStore.upsert_facts

    def upsert(self, rows):
        threads.append(threading.current_thread() is threading.main_thread())
        real(self, rows)

    monkeypatch.setattr(OverlayStore, "upsert_facts", upsert)
    # a SQLite overlay's pages are written in the sync's own thread (WRITER_THREAD_DIALECTS:
    # binding rows in a writer thread trades the GIL with this one for every row)
    own = tmp_path / "own.db"
    assert sync_into(own, cfg).records == N
    assert threads and all(threads)
    # the writer thread, where it is used, writes the same facts in the same order
    threads.clear()
    monkeypatch.setattr(sync_module, "WRITER_THREAD_DIALECTS", ("sqlite", "postgres"))
    threaded = tmp_path / "threaded.db"
    assert sync_into(threaded, cfg).records == N
    assert threads and not any(threads)             # every page written by the writer thread
    assert indexes(threaded) == indexes(empty) == indexes(own)
    assert fact_rows(threaded) == fact_rows(own) and len(fact_rows(own)) == N


class FailingConnector:
    """The real SQLite connector, whose read fails after `after` records (a source gone mid-read)."""

    def __init__(self, source, after: int):
        self.inner = make_connector(source)
        self.after = after

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def read(self, cursor=None):
        for i, rec in enumerate(self.inner.read(cursor)):
            if i == self.after:
                raise ConnectorError("bot.db: disk I/O error")
            yield rec


@pytest.mark.parametrize("after", [sync_module.BATCH * 2 + 5, 3])
def test_a_read_failing_mid_load_leaves_the_overlay_as_it_was(tmp_path, after):
    src, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(src)
    cfg = config_for(src)
    OverlayStore(overlay).close()
    before = indexes(overlay)
    conn = FailingConnector(cfg.sources[0], after)
    conn.open()
    try:
        with pytest.raises(ConnectorError):
            sync_into(overlay, cfg, connector=conn)
    finally:
        conn.close()
    assert fact_rows(overlay) == [] and indexes(overlay) == before
    sync_into(overlay, cfg)          # and the next sync loads everything
    assert len(fact_rows(overlay)) == N


def test_a_write_failing_in_the_writer_thread_reaches_the_caller_and_nothing_is_stored(tmp_path, monkeypatch):
    src, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(src)
    cfg = config_for(src)
    OverlayStore(overlay).close()
    before = indexes(overlay)
    real = OverlayStore.upsert_facts
    calls = []

    def upsert(self, rows):
        calls.append(len(rows))
        if len(calls) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        real(self, rows)

    monkeypatch.setattr(OverlayStore, "upsert_facts", upsert)
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        sync_into(overlay, cfg)
    monkeypatch.undo()
    assert fact_rows(overlay) == [] and indexes(overlay) == before
    assert len(calls) <= 4        # the load stopped soon after the failure (two pages may be queued)
