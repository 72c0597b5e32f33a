"""Incremental SQLite sync: work follows change (counted in rows read), deletions apart.

Growth is asserted by counting source rows read (connector.rows_read and
sources.rows_read_last_sync), never by timing.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine, pk_json
from memwatch_overlay.rules.config import parse_config

T0 = "2026-01-01 00:00:00"


def make_store(path: Path, n: int, *, updated: bool = True, wal: bool = True, pk: str = "INTEGER") -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"CREATE TABLE facts (id {pk} PRIMARY KEY, fact TEXT, created_at TEXT, updated_at TEXT)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO facts VALUES (?, ?, ?, ?)",
                     ((i if pk == "INTEGER" else f"k{i}", f"fact number {i}", T0, T0) for i in range(1, n + 1)))
    conn.execute("COMMIT")
    return conn


def config_for(path: Path, *, updated: bool = True, **extra):
    source = {"name": "bot", "connector": "sqlite", "path": str(path), "table": "facts", "id": "id",
              "text": "fact", "created_at": "created_at", **extra}
    if updated:
        source["updated_at"] = "updated_at"
    return parse_config({"sources": [source]})


class Rig:
    """A store, an overlay and one open connector, as the daemon holds them."""

    def __init__(self, tmp_path: Path, n: int, updated: bool = True, pk: str = "INTEGER", **extra):
        self.path = tmp_path / "bot.db"
        self.writer = make_store(self.path, n, pk=pk)
        self.cfg = config_for(self.path, updated=updated, **extra)
        self.source = self.cfg.sources[0]
        self.store = OverlayStore(tmp_path / "overlay.db")
        self.engine = SyncEngine(self.store, self.cfg)
        self.conn = make_connector(self.source)
        self.conn.open()

    def sync(self, full: bool = False):
        return self.engine.sync(self.source, full=full, connector=self.conn)

    def row(self):
        return self.store.source_row("bot")

    def facts(self) -> dict[str, sqlite3.Row]:
        return {json.loads(r["pk"])["id"]: r for r in self.store.conn.execute("SELECT * FROM facts")}

    def close(self):
        self.conn.close()
        self.store.close()
        self.writer.close()


@pytest.fixture
def rig(tmp_path):
    made = []

    def build(n: int = 50, **kw) -> Rig:
        r = Rig(tmp_path, n, **kw)
        made.append(r)
        return r
    yield build
    for r in made:
        r.close()


def test_one_new_row_in_100k_reads_one_row(rig):
    r = rig(100_000)
    first = r.sync(full=True)
    assert first.rows_read == 100_000 and r.row()["rows_seen"] == 100_000
    before = r.conn.rows_read
    r.writer.execute("INSERT INTO facts VALUES (100001, 'lives in Lisbon', '2026-02-01 00:00:00', "
                     "'2026-02-01 00:00:00')")
    assert r.conn.has_changes()
    stats = r.sync()
    assert stats.rows_read == 1 and r.conn.rows_read - before == 1
    assert r.row()["rows_read_last_sync"] == 1
    assert r.row()["rows_seen"] == 100_001
    assert r.facts()["100001"]["text"] == "lives in Lisbon"


def test_tick_cost_is_flat_in_table_size(tmp_path):
    """The same one-row change reads the same number of rows at 1k and 50k."""
    reads = []
    for n in (1_000, 50_000):
        d = tmp_path / str(n)
        d.mkdir()
        r = Rig(d, n)
        r.sync(full=True)
        r.writer.execute("UPDATE facts SET fact = 'moved to Oslo', updated_at = '2026-03-01 00:00:00' WHERE id = 7")
        r.writer.execute("INSERT INTO facts VALUES (?, 'new', '2026-03-01 00:00:00', '2026-03-01 00:00:00')", (n + 1,))
        reads.append(r.sync().rows_read)
        assert r.facts()["7"]["text"] == "moved to Oslo"
        r.close()
    assert reads == [2, 2]


def test_unindexed_updated_at_defers_the_update_scan_but_not_inserts(rig):
    """Without an index the updated_at part is a table scan: ticks take inserts by rowid
    only, and the update scan runs when `update_scan_seconds` says."""
    r = rig(100_000)
    r.conn.update_scan_seconds = 3600
    r.sync(full=True)
    assert not r.conn.indexed("updated_at")
    r.writer.execute("UPDATE facts SET fact = 'changed in place', updated_at = '2026-05-01 00:00:00' WHERE id = 9")
    r.writer.execute("INSERT INTO facts VALUES (100001, 'brand new', ?, ?)", ("2026-05-01 00:00:00",) * 2)
    stats = r.sync()
    assert stats.rows_read == 1 and r.facts()["100001"]["text"] == "brand new"
    assert r.facts()["9"]["text"] == "fact number 9", "the update waits for the scan"
    assert r.conn.deferred_until is not None
    r.conn.update_scan_seconds = 0.0                   # the scan is due
    stats = r.sync()
    assert r.facts()["9"]["text"] == "changed in place"
    assert stats.rows_read == 2, "the update, and the row inserted since the last scan"
    assert r.conn.deferred_until is None
    assert r.sync().rows_read == 0


def test_indexed_updated_at_reads_updates_on_every_tick(rig):
    r = rig(100_000)
    r.writer.execute("CREATE INDEX facts_updated ON facts(updated_at)")
    r.conn.update_scan_seconds = 3600                  # irrelevant with an index
    r.sync(full=True)
    assert r.conn.indexed("updated_at")
    r.writer.execute("UPDATE facts SET fact = 'changed in place', updated_at = '2026-05-01 00:00:00' WHERE id = 9")
    assert r.conn.has_changes()
    stats = r.sync()
    assert stats.rows_read == 1 and r.facts()["9"]["text"] == "changed in place"
    assert r.conn.deferred_until is None


def test_incremental_statement_seeks_instead_of_scanning(rig):
    """With updated_at indexed, the tick's statement uses the rowid range and the index."""
    r = rig(1000)
    r.writer.execute("CREATE INDEX facts_updated ON facts(updated_at)")
    r.sync(full=True)
    cursor = r.store.cursor_of(r.row()["id"])
    sql, params, _ = r.conn.build_select(cursor)
    plan = [row[3] for row in r.conn.conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
    assert not any(step.startswith("SCAN") for step in plan), plan
    assert any("facts_updated" in step for step in plan), plan


def test_unchanged_store_reads_nothing_and_says_so(rig):
    r = rig(1000)
    r.sync(full=True)
    assert r.conn.has_changes() is True, "no baseline yet: the first check cannot know"
    assert r.conn.has_changes() is False
    stats = r.sync()
    assert stats.rows_read == 0
    r.writer.execute("UPDATE facts SET fact = 'x', updated_at = '2026-05-01 00:00:00' WHERE id = 1")
    assert r.conn.has_changes() is True
    assert r.conn.has_changes() is False


def test_updates_with_the_same_timestamp_are_not_lost(rig):
    """Two writes in the same clock second: the second is read although its updated_at equals the mark."""
    r = rig(100)
    r.sync(full=True)
    tick = "2026-04-01 12:00:00"
    r.writer.execute("UPDATE facts SET fact = 'first write', updated_at = ? WHERE id = 10", (tick,))
    assert r.sync().rows_read == 1
    r.writer.execute("UPDATE facts SET fact = 'second write', updated_at = ? WHERE id = 3", (tick,))
    stats = r.sync()
    assert stats.rows_read == 1, "only the new row at the mark, not the one already read"
    assert r.facts()["3"]["text"] == "second write"
    assert r.sync().rows_read == 0


def test_bulk_rows_sharing_one_timestamp_are_not_reread(rig):
    """10k rows imported with the same updated_at: the next tick does not read them again."""
    r = rig(10_000)
    r.sync(full=True)
    cursor = r.store.cursor_of(r.row()["id"])
    assert cursor["updated_at"] == T0
    r.writer.execute("INSERT INTO facts VALUES (10001, 'after import', ?, ?)", (T0, T0))
    assert r.sync().rows_read == 1


def test_incremental_sync_never_marks_unseen_facts_deleted(rig):
    r = rig(200)
    r.sync(full=True)
    r.writer.execute("DELETE FROM facts WHERE id IN (5, 6)")
    r.writer.execute("INSERT INTO facts VALUES (201, 'new one', ?, ?)", ("2026-06-01 00:00:00",) * 2)
    stats = r.sync(full=False)
    assert stats.deleted == 0
    facts = r.facts()
    assert facts["5"]["status"] == "active" and facts["201"]["status"] == "active"


def test_deletion_pass_reads_keys_only_and_marks_not_erases(rig):
    r = rig(5000)
    r.sync(full=True)
    r.writer.execute("DELETE FROM facts WHERE id IN (5, 6, 4999)")
    r.sync()
    rows_before = r.conn.rows_read
    stats = r.engine.sync_deletions(r.source, connector=r.conn)
    assert stats.keys_read == 4997 and stats.deleted == 3
    assert r.conn.rows_read == rows_before, "keys are not records: rows_read unchanged"
    facts = r.facts()
    assert len(facts) == 5000, "deleted facts are kept in the overlay"
    assert {k for k, f in facts.items() if f["status"] == "deleted"} == {"5", "6", "4999"}
    assert facts["5"]["next_change"] is None, "a deleted fact leaves the rescore schedule"
    row = r.row()
    assert row["rows_seen"] == 4997 and row["keys_read_last_scan"] == 4997
    # A second pass finds nothing new.
    assert r.engine.sync_deletions(r.source, connector=r.conn).deleted == 0


def test_deletion_pass_honours_the_where_filter(rig):
    r = rig(100, where="fact NOT LIKE 'gone%'")
    r.sync(full=True)
    r.writer.execute("UPDATE facts SET fact = 'gone away' WHERE id = 42")   # soft delete, updated_at unchanged
    assert r.sync().rows_read == 0
    stats = r.engine.sync_deletions(r.source, connector=r.conn)
    assert stats.deleted == 1 and r.facts()["42"]["status"] == "deleted"


def test_deletion_pass_fetches_rows_the_cursor_could_not_see(rig):
    """A deleted last row's rowid handed to a new row (no AUTOINCREMENT): the key pass finds it."""
    r = rig(100, pk="TEXT", updated=False)
    r.sync(full=True)
    r.writer.execute("DELETE FROM facts WHERE id = 'k100'")               # rowid 100 freed
    r.writer.execute("INSERT INTO facts VALUES ('reused', 'took rowid 100', ?, ?)", (T0, T0))
    assert r.writer.execute("SELECT rowid FROM facts WHERE id = 'reused'").fetchone()[0] == 100
    assert r.sync().rows_read == 0, "rowid 100 is not above the cursor"
    stats = r.engine.sync_deletions(r.source, connector=r.conn)
    assert stats.deleted == 1 and stats.missing == 1 and stats.rows_read == 1
    facts = r.facts()
    assert facts["k100"]["status"] == "deleted"
    assert facts["reused"]["status"] == "active" and facts["reused"]["text"] == "took rowid 100"
    assert r.row()["rows_seen"] == 100


def test_deleted_then_restored_row_comes_back(rig):
    r = rig(20, pk="TEXT")
    r.sync(full=True)
    r.writer.execute("DELETE FROM facts WHERE id = 'k3'")
    r.engine.sync_deletions(r.source, connector=r.conn)
    assert r.facts()["k3"]["status"] == "deleted"
    r.writer.execute("INSERT INTO facts VALUES ('k3', 'fact number 3', ?, ?)", (T0, T0))
    r.sync()
    assert r.facts()["k3"]["status"] == "active"
    assert r.row()["rows_seen"] == 20


def test_a_failed_sync_keeps_the_old_cursor_and_facts(rig, monkeypatch):
    """The cursor is stored in the facts' transaction: a crash mid-sync loses the whole sync only."""
    r = rig(100)
    r.sync(full=True)
    cursor = r.store.cursor_of(r.row()["id"])
    r.writer.executemany("INSERT INTO facts VALUES (?, 'later', ?, ?)",
                         ((i, "2026-07-01 00:00:00", "2026-07-01 00:00:00") for i in range(101, 5101)))
    calls = {"n": 0}
    real = r.store.upsert_facts

    def boom(rows):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("simulated crash after the first batch")
        return real(rows)
    monkeypatch.setattr(r.store, "upsert_facts", boom)
    with pytest.raises(RuntimeError):
        r.sync()
    assert r.store.cursor_of(r.row()["id"]) == cursor
    assert len(r.facts()) == 100, "the first batch was rolled back with the rest"
    monkeypatch.setattr(r.store, "upsert_facts", real)
    stats = r.sync()
    assert stats.records == 5000 and len(r.facts()) == 5100
    assert tuple(r.store.conn.execute("SELECT count(DISTINCT pk), count(*) FROM facts").fetchone()) == (5100, 5100)


def test_full_read_pages_and_sees_every_row(rig, monkeypatch):
    from memwatch_overlay.connectors import sqlite as sqlite_mod
    monkeypatch.setattr(sqlite_mod, "PAGE_ROWS", 7)
    r = rig(50)
    stats = r.sync(full=True)
    assert stats.rows_read == 50 and len(r.facts()) == 50
    assert r.store.cursor_of(r.row()["id"])["rowid"] == 50


def test_keys_match_the_pk_json_of_read(rig):
    r = rig(30, pk="TEXT")
    from_read = sorted(pk_json(rec.pk) for rec in r.conn.read(None))
    from_keys = sorted(pk_json(pk) for pk in r.conn.keys())
    assert from_read == from_keys


def test_langgraph_store_put_is_seen_incrementally(agent_store, tmp_path):
    """LangGraph's put() is INSERT OR REPLACE: a new rowid, so the rowid mark sees it."""
    folder = agent_store("langgraph")
    path = folder / "langgraph_store.sqlite"
    cfg = parse_config({"sources": [{"name": "lg", "connector": "sqlite", "path": str(path),
                                     "preset": "langgraph"}]})
    store = OverlayStore(tmp_path / "o.db")
    engine = SyncEngine(store, cfg)
    conn = make_connector(cfg.sources[0])
    conn.open()
    try:
        first = engine.sync(cfg.sources[0], full=True, connector=conn)
        total = first.rows_read
        assert total > 0
        with sqlite3.connect(path) as w:
            prefix, key = w.execute("SELECT prefix, key FROM store ORDER BY rowid LIMIT 1").fetchone()
            w.execute("INSERT OR REPLACE INTO store (prefix, key, value, created_at, updated_at) "
                      "VALUES (?, ?, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)",
                      (prefix, key, json.dumps({"memory": "Now works at Globex"}).encode()))
        stats = engine.sync(cfg.sources[0], full=False, connector=conn)
        assert stats.rows_read == 1 and stats.changed == 1
        text = store.conn.execute("SELECT text FROM facts WHERE pk = ?",
                                  (json.dumps({"prefix": prefix, "key": key}),)).fetchone()[0]
        assert text == "Now works at Globex"
        assert engine.sync_deletions(cfg.sources[0], connector=conn).keys_read == total
    finally:
        conn.close()
        store.close()


def _contradict(r: Rig, older: str, newer: str) -> None:
    ids = {json.loads(pk)["id"]: i for i, pk in r.store.conn.execute("SELECT id, pk FROM facts")}
    with r.store.transaction():
        r.store.add_contradiction(ids[older], ids[newer], "value", 1.0, "test", None, 0.0)
        r.store.apply_contradiction_status()
    assert r.facts()[older]["status"] == "contradicted"


def test_incremental_sync_recomputes_the_status_of_facts_a_changed_fact_contradicted(rig):
    r = rig(100)
    r.sync(full=True)
    _contradict(r, "3", "40")
    _contradict(r, "5", "41")
    r.writer.execute("UPDATE facts SET fact = 'reworded', updated_at = '2026-08-01 00:00:00' WHERE id = 40")
    r.sync()
    facts = r.facts()
    assert facts["3"]["status"] == "active", "its contradiction went with the newer fact's old content"
    assert facts["5"]["status"] == "contradicted", "untouched pairs keep their status"


def test_deletion_pass_frees_facts_the_deleted_one_contradicted(rig):
    r = rig(100)
    r.sync(full=True)
    _contradict(r, "3", "40")
    r.writer.execute("DELETE FROM facts WHERE id = 40")
    r.engine.sync_deletions(r.source, connector=r.conn)
    facts = r.facts()
    assert facts["40"]["status"] == "deleted" and facts["3"]["status"] == "active"
