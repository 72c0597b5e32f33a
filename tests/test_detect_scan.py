"""The two ways detect_changed reaches blocks (one query per block, one ordered scan for
big changes) find the same contradictions, and a full audit's results do not depend on it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixture_stores import FIXTURES

from memwatch_overlay.overlay.detect import blocks as dc
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.detect.detector import Detector
from memwatch_overlay.overlay.output.tables import write_json
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import load_config

from storegen import write_config
from test_sync_contradictions import AS_OF, _add, _store

AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"


def _findings(overlay: OverlayStore) -> list[tuple]:
    return sorted(tuple(r) for r in overlay.conn.execute(
        "SELECT o.ref, n.ref, c.kind, c.confidence, c.evidence, coalesce(c.update_json, '') FROM contradictions c "
        "JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id"))


def _statuses(overlay: OverlayStore) -> list[tuple]:
    return sorted(tuple(r) for r in overlay.conn.execute("SELECT ref, status FROM facts").fetchall())


@pytest.mark.parametrize("scan_min", [0, 10**9])
def test_scan_and_per_block_queries_agree(tmp_path, monkeypatch, scan_min):
    store_path = _store(tmp_path / "bot.db", users=6, per_block=4, town=True)
    _add(store_path, ("u3", "location", None, "I moved to Oslo last month.", "2026-11-01 09:00:00"),
         ("u9", "location", None, "Lives in Lonelytown", "2026-11-01 09:00:00"))   # a block of one
    cfg = load_config(write_config(tmp_path, store_path))
    results = {}
    for mode, threshold in (("query", 10**9), ("scan", 0)):
        monkeypatch.setattr(dc, "SCAN_MIN_CHANGED", threshold)
        with OverlayStore(tmp_path / f"overlay-{mode}.db") as overlay:
            engine = SyncEngine(overlay, cfg, detector=Detector())
            stats = engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
            results[mode] = (stats.contradictions, stats.comparisons, _findings(overlay), _statuses(overlay))
    assert results["query"] == results["scan"]
    found, comparisons, rows, statuses = results["scan"]
    assert found == len(rows) > 0 and comparisons > 0
    assert any(s == "contradicted" for _, s in statuses)
    # the later incremental sync takes the per-block path whatever came before
    monkeypatch.setattr(dc, "SCAN_MIN_CHANGED", scan_min)
    _add(store_path, ("u3", "location", None, "I moved to Bergen again.", "2026-11-20 09:00:00"))
    with OverlayStore(tmp_path / "overlay-scan.db") as overlay:
        stats = SyncEngine(overlay, cfg, detector=Detector()).sync(cfg.sources[0], as_of=AS_OF, full=False)
        assert stats.records == 1 and stats.contradictions >= 1


@pytest.mark.parametrize("framework", list(FIXTURES))
def test_audit_json_is_the_same_either_way(tmp_path, monkeypatch, framework):
    folder = AGENT_STORES / framework
    stores = [folder / s for s in FIXTURES[framework].stores]
    assert stores, folder
    outputs = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(dc, "SCAN_MIN_CHANGED", threshold)
        work = tmp_path / str(threshold)
        work.mkdir()
        target = work / stores[0].relative_to(folder)     # memlife: the user's folder names the subject
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(stores[0], target)
        result = audit(str(target), as_of=AS_OF, overlay_path=str(work / "overlay.db"))
        path = work / "out.json"
        with path.open("w") as out:
            write_json(result, out)
        result.close()
        doc = json.loads(path.read_text())
        for f in doc["facts"]:
            f.pop("first_seen")
        for s in doc["sources"]:
            s.pop("target")
        outputs.append(doc)
    assert outputs[0] == outputs[1]


@pytest.mark.postgres
def test_both_paths_agree_on_a_postgres_overlay(tmp_path, monkeypatch, pg_dsn):
    """The scan streams through a server-side cursor there; findings match the SQLite overlay."""
    store_path = _store(tmp_path / "bot.db", users=6, per_block=4, town=True)
    _add(store_path, ("u3", "location", None, "I moved to Oslo last month.", "2026-11-01 09:00:00"))
    cfg = load_config(write_config(tmp_path, store_path))
    results = {}
    for mode, threshold, target in (("pg-scan", 0, pg_dsn), ("sqlite-query", 10**9, tmp_path / "o.db")):
        monkeypatch.setattr(dc, "SCAN_MIN_CHANGED", threshold)
        with OverlayStore(target) as overlay:
            stats = SyncEngine(overlay, cfg, detector=Detector()).sync(cfg.sources[0], as_of=AS_OF, full=True)
            results[mode] = (stats.contradictions, stats.comparisons, _findings(overlay), _statuses(overlay))
    assert results["pg-scan"][0] > 0
    assert results["pg-scan"] == results["sqlite-query"]


def test_a_block_whose_only_change_is_a_deletion_is_walked_again_on_either_path(tmp_path, monkeypatch):
    """The scan tells the blocks holding a changed live fact from the rows it reads, and is
    told only the subjects of the changed facts that are not live: a fact the source deleted
    takes its edges with it, and what it outdated is live again, whichever path walks it."""
    import sqlite3
    store_path = _store(tmp_path / "bot.db", users=6, per_block=4, town=True)
    _add(store_path, ("u3", "location", None, "I moved to Oslo last month.", "2026-11-01 09:00:00"))
    results = {}
    for mode, threshold in (("query", 10**9), ("scan", 0)):
        monkeypatch.setattr(dc, "SCAN_MIN_CHANGED", threshold)
        work = tmp_path / mode
        work.mkdir()
        store = work / "bot.db"
        shutil.copy(store_path, store)
        mode_cfg = load_config(write_config(work, store))
        with OverlayStore(work / "overlay.db") as overlay:
            engine = SyncEngine(overlay, mode_cfg, detector=Detector())
            engine.sync(mode_cfg.sources[0], as_of=AS_OF, full=True)
            oslo = overlay.conn.execute("SELECT id FROM facts WHERE text LIKE 'I moved to Oslo%'").fetchone()[0]
            outdated = {r[0] for r in overlay.conn.execute(
                "SELECT older_id FROM contradictions WHERE newer_id = ?", (oslo,))}
            assert outdated
            conn = sqlite3.connect(store)
            conn.execute("DELETE FROM memories WHERE content LIKE 'I moved to Oslo%'")
            conn.commit()
            conn.close()
            stats = engine.sync(mode_cfg.sources[0], as_of=AS_OF, full=True)
            assert stats.deleted == 1
            sid, sync_no = overlay.conn.execute("SELECT id, sync_count FROM sources").fetchone()
            assert overlay.count_changed_live(sid, sync_no) == (
                overlay.count_changed(sid, sync_no), overlay.count_changed(sid, sync_no, live_only=True))
            assert overlay.changed_subjects(sid, sync_no, [oslo], dead_only=True) == {"u3"}
            asked: list[str] = []           # the facts that are not live, read through facts_gc alone
            overlay.conn.set_trace_callback(asked.append)
            overlay.changed_subjects(sid, sync_no, dead_only=True)
            overlay.conn.set_trace_callback(None)
            assert asked and all("facts_gc" in " ".join(r[3] for r in overlay.conn.execute("EXPLAIN QUERY PLAN " + q))
                                 for q in asked)
            assert not overlay.conn.execute("SELECT 1 FROM contradictions WHERE newer_id = ?", (oslo,)).fetchall()
            back = {r[0] for r in overlay.conn.execute(
                f"SELECT id FROM facts WHERE id IN ({', '.join('?' * len(outdated))}) AND status = 'active'",
                sorted(outdated))}
            results[mode] = (_findings(overlay), _statuses(overlay), back == outdated)
    assert results["query"] == results["scan"]
    assert results["scan"][2]
