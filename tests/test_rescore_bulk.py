"""A rescore of many facts (an audit or report at a new as-of) drops the `next_change` index
for the rewrite and builds it again after, in the same transaction (overlay/engine/sync.py
SyncEngine.rescore). What must hold: the statements really ran (traced on the connection),
the overlay ends with the schema's indexes and exactly the scores and schedule of a rescore
that kept the index, and a rescore failing midway leaves the overlay as it was, index included.
"""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import Config, parse_config

AS_OF = 1_796_000_000.0
LATER = AS_OF + 40 * 86400.0
N = 12_000


def make_store(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT, "
                 "hits INTEGER)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?)",
                     ((i, f"u{i % 13}", f"fact number {i}", f"20{20 + i % 7}-0{1 + i % 9}-01 00:00:00", i % 4)
                      for i in range(1, N + 1)))
    conn.commit()
    conn.close()


@pytest.fixture
def audited(tmp_path) -> Path:
    make_store(tmp_path / "agent.db")
    config = parse_config({"detector": {"enabled": False},
                           "sources": [{"name": "bot", "connector": "sqlite", "path": str(tmp_path / "agent.db"),
                                        "table": "memories", "id": "id", "text": "fact", "subject": "user_id",
                                        "created_at": "created_at", "access_count": "hits"}]})
    audit(None, config, as_of=AS_OF, overlay_path=str(tmp_path / "overlay.db")).close()
    return tmp_path / "overlay.db"


def snapshot(path: Path) -> tuple[list, list]:
    conn = sqlite3.connect(path)
    facts = conn.execute("SELECT id, freshness, label, age_days, days_left, days_until_expired, expired_by, "
                         "confidence, scored_as_of, next_change FROM facts ORDER BY id").fetchall()
    indexes = sorted(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'").fetchall(),
                     key=lambda r: r[0])
    conn.close()
    return facts, indexes


def rescore(path: Path, bulk_min: int, monkeypatch) -> tuple[int, list[str]]:
    monkeypatch.setattr(sync_module, "BULK_MIN", bulk_min)
    statements: list[str] = []
    store = OverlayStore(path)
    try:
        store.conn.set_trace_callback(statements.append)
        n = SyncEngine(store, Config()).rescore(LATER)
    finally:
        store.close()
    return n, statements


def test_a_large_rescore_rebuilds_the_index_and_scores_as_one_that_kept_it(audited, tmp_path, monkeypatch):
    kept = tmp_path / "kept.db"
    shutil.copy(audited, kept)
    n_kept, kept_sql = rescore(kept, 10 ** 9, monkeypatch)        # threshold never met: index kept
    n_bulk, bulk_sql = rescore(audited, 1000, monkeypatch)
    assert n_kept == n_bulk == N
    assert not any(s.startswith("DROP INDEX") for s in kept_sql)
    assert any(s == 'DROP INDEX "facts_next_change"' for s in bulk_sql)
    assert any(s.startswith("CREATE INDEX facts_next_change") for s in bulk_sql)
    assert snapshot(audited) == snapshot(kept)
    facts, indexes = snapshot(audited)
    assert {f[8] for f in facts} == {LATER} and "facts_next_change" in {name for name, _ in indexes}
    assert sqlite3.connect(audited).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_rescore_of_the_same_as_of_or_of_a_few_facts_drops_nothing(audited, monkeypatch):
    rescore(audited, 1000, monkeypatch)
    n, statements = rescore(audited, 1000, monkeypatch)            # already scored at LATER
    assert n == 0 and not any(s.startswith("DROP INDEX") for s in statements)
    assert not any("count(*)" in s for s in statements)            # nor counted: the first page was short
    monkeypatch.setattr(sync_module, "BULK_MIN", 1000)
    store = OverlayStore(audited)
    try:
        statements.clear()
        store.conn.set_trace_callback(statements.append)
        assert SyncEngine(store, Config()).rescore(LATER + 86400, fact_ids=list(range(1, 3001))) == 3000
    finally:
        store.close()
    assert not any(s.startswith("DROP INDEX") for s in statements)


def test_a_rescore_failing_midway_leaves_the_overlay_as_it_was(audited, monkeypatch):
    before = snapshot(audited)
    monkeypatch.setattr(sync_module, "BULK_MIN", 1000)
    store = OverlayStore(audited)
    written = []
    real_write = store.write_scores

    def failing_write(updates):
        if written:
            raise RuntimeError("disk gone")
        written.append(len(updates))
        return real_write(updates)

    store.write_scores = failing_write
    try:
        with pytest.raises(RuntimeError, match="disk gone"):
            SyncEngine(store, Config()).rescore(LATER, batch=5000)
    finally:
        store.close()
    assert written == [5000]
    assert snapshot(audited) == before
