"""A re-audit of an unchanged store reads the overlay's facts as few times as it can.

After the sync, an audit needs every live fact scored at its as-of (the rescore) and the
summary. When nothing is left to score the rescore writes nothing, and the summary's own
scan is what finds that out (`summary_if_scored`): no separate rescore scan. These tests
hold the result equal to the rescore-then-summary path and count the statements that read
`facts` (sqlite3's trace callback on the overlay's connection).
"""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine.audit import audit, overlay_report
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.output.tables import write_json
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

AS_OF = 1_796_000_000.0          # 2026-11-29
DAY = 86400.0


def make_store(path: Path, n: int = 300) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT)")
    # ages spread over ~3 years: every label occurs
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, datetime(?, 'unixepoch'))",
                     ((i, f"u{i % 7}", f"fact number {i}", int(AS_OF - (i * 3.7 % 1100) * DAY))
                      for i in range(1, n + 1)))
    conn.commit()
    conn.close()


def config_for(*paths: Path):
    return parse_config({"detector": {"enabled": False},
                         "sources": [{"name": p.stem, "connector": "sqlite", "path": str(p), "table": "memories",
                                      "id": "id", "text": "fact", "subject": "user_id",
                                      "created_at": "created_at"} for p in paths]})


def report(result) -> tuple[dict, str]:
    import io
    out = io.StringIO()
    write_json(result, out)
    return dict(result.summary), out.getvalue()


@pytest.fixture
def audited(tmp_path):
    """(store, overlay, config): a store audited once at AS_OF."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store)
    cfg = config_for(store)
    audit(str(store), cfg, as_of=AS_OF, overlay_path=str(overlay)).close()
    return store, overlay, cfg


def old_path_summary(overlay: Path, cfg, as_of: float, ids: list[int]) -> dict:
    """What audit() computed before summary_if_scored: rescore at `as_of`, then summary()."""
    store = OverlayStore(str(overlay))
    try:
        SyncEngine(store, cfg).rescore(as_of, ids)
        return store.summary(ids)
    finally:
        store.close()


def test_summary_if_scored_is_the_summary_when_all_live_facts_are_scored(audited):
    _, overlay, _ = audited
    store = OverlayStore(str(overlay))
    try:
        ids = [r["id"] for r in store.sources()]
        assert store.summary_if_scored(ids, AS_OF) == store.summary(ids)
        assert store.summary_if_scored(None, AS_OF) == store.summary()
        assert store.summary(ids)["total"] == 300
        assert store.summary_if_scored(ids, AS_OF + DAY) is None       # the first live fact is unscored
    finally:
        store.close()


@pytest.mark.parametrize("where", ["id = (SELECT max(id) FROM facts)",   # found by the scan's count, not the probe
                                   "id = (SELECT min(id) FROM facts)",
                                   "id % 50 = 7"])
def test_one_unscored_live_fact_anywhere_means_none(audited, where):
    _, overlay, _ = audited
    conn = sqlite3.connect(overlay)
    conn.execute(f"UPDATE facts SET scored_as_of = NULL WHERE {where}")
    conn.commit()
    conn.close()
    store = OverlayStore(str(overlay))
    try:
        assert store.summary_if_scored(None, AS_OF) is None
        assert store.count_unscored(AS_OF) > 0
    finally:
        store.close()


def test_unscored_facts_that_are_not_live_do_not_count(audited):
    _, overlay, _ = audited
    conn = sqlite3.connect(overlay)
    conn.execute("UPDATE facts SET status = 'deleted', scored_as_of = 1.0 WHERE id % 10 = 1")   # the first too
    conn.execute("UPDATE facts SET status = 'forgotten', scored_as_of = NULL WHERE id % 10 = 2")
    conn.commit()
    conn.close()
    store = OverlayStore(str(overlay))
    try:
        assert store.count_unscored(AS_OF) == 0
        got = store.summary_if_scored(None, AS_OF)
        assert got == store.summary() and got["deleted"] == 30 and got["total"] == 240
    finally:
        store.close()


def test_scope_counts_only_the_audited_sources(tmp_path):
    a, b, overlay = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "overlay.db"
    make_store(a, 120)
    make_store(b, 80)
    cfg = config_for(a, b)
    audit(None, cfg, as_of=AS_OF, overlay_path=str(overlay)).close()
    conn = sqlite3.connect(overlay)
    b_id = conn.execute("SELECT id FROM sources WHERE name = 'b'").fetchone()[0]
    conn.execute("UPDATE facts SET scored_as_of = 0 WHERE source_id = ? AND id % 9 = 4", (b_id,))
    conn.commit()
    conn.close()
    store = OverlayStore(str(overlay))
    try:
        a_id = next(r["id"] for r in store.sources() if r["name"] == "a")
        assert store.summary_if_scored([a_id], AS_OF) == store.summary([a_id])
        assert store.summary([a_id])["total"] == 120
        assert store.summary_if_scored([b_id], AS_OF) is None
        assert store.summary_if_scored([a_id, b_id], AS_OF) is None
        assert store.summary_if_scored([], AS_OF) == store.summary([])
    finally:
        store.close()


@pytest.mark.parametrize("as_of", [AS_OF, AS_OF + 1.5 * DAY])
def test_audit_gives_what_rescore_then_summary_gives(audited, tmp_path, monkeypatch, as_of):
    """The same summary and JSON report as the old path (rescore, then summary(): here
    summary_if_scored answering None always), on a copy of the same overlay; with some
    facts left unscored, contradicted and deleted beside the scored ones."""
    store_path, overlay, cfg = audited
    conn = sqlite3.connect(overlay)
    conn.execute("UPDATE facts SET scored_as_of = NULL, freshness = 0.5 WHERE id % 17 = 3")
    conn.execute("UPDATE facts SET status = 'forgotten' WHERE id % 13 = 5")
    conn.commit()
    conn.close()
    src = sqlite3.connect(store_path)
    src.execute("DELETE FROM memories WHERE id % 11 = 2")
    src.commit()
    src.close()
    copy = tmp_path / "copy.db"
    shutil.copy(overlay, copy)
    result = audit(str(store_path), cfg, as_of=as_of, overlay_path=str(overlay))
    try:
        got = report(result)
    finally:
        result.close()
    with monkeypatch.context() as m:
        m.setattr(OverlayStore, "summary_if_scored", lambda self, ids, as_of: None)
        old = audit(str(store_path), cfg, as_of=as_of, overlay_path=str(copy))
        try:
            expected = report(old)
        finally:
            old.close()
    assert got == expected
    assert got[0]["deleted"] == 28 and 0 < got[0]["total"] < 300
    for path in (overlay, copy):
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM facts WHERE status IN ('active', 'contradicted') "
                            "AND scored_as_of IS NOT ?", (as_of,)).fetchone()[0] == 0
        conn.close()
    # the next, unchanged re-audit (no rescore now) still gives it
    again = audit(str(store_path), cfg, as_of=as_of, overlay_path=str(overlay))
    try:
        assert report(again) == got
    finally:
        again.close()


class Statements:
    """SQL run on an overlay connection (trace callback), set on each store opened."""

    def __init__(self, monkeypatch):
        self.sql: list[str] = []
        real_init = OverlayStore.__init__

        def init(store, *args, **kwargs):
            real_init(store, *args, **kwargs)
            if store.dialect == "sqlite":
                store.conn.set_trace_callback(self.sql.append)

        monkeypatch.setattr(OverlayStore, "__init__", init)

    def scans_of_scores(self) -> list[str]:
        """Statements that read every live fact's scored_as_of."""
        return [s for s in self.sql if "scored_as_of IS NOT" in s and "LIMIT 1" not in s]


def rescore_calls(monkeypatch) -> list[tuple]:
    """The positional arguments of every SyncEngine.rescore call from now on (the real one runs)."""
    calls: list[tuple] = []
    real = SyncEngine.rescore
    monkeypatch.setattr(SyncEngine, "rescore", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    return calls


def test_unchanged_reaudit_reads_the_facts_once_for_rescore_and_summary(audited, monkeypatch):
    store, overlay, cfg = audited
    rescores = rescore_calls(monkeypatch)
    seen = Statements(monkeypatch)
    result = audit(str(store), cfg, as_of=AS_OF, overlay_path=str(overlay))
    result.close()
    assert rescores == []
    scans = seen.scans_of_scores()
    assert len(scans) == 1 and "avg(f.freshness)" in scans[0]        # the summary's own scan
    # no SCORE_INPUTS read of the unscored (the sync's own read of the due range, next_change <= 0, is indexed)
    assert not [s for s in seen.sql if s.startswith("SELECT id, category, created_at") and "scored_as_of" in s]
    assert result.summary["total"] == 300


def test_reaudit_at_a_new_as_of_rescores_without_a_wasted_summary_scan(audited, monkeypatch):
    store, overlay, cfg = audited
    rescores = rescore_calls(monkeypatch)
    seen = Statements(monkeypatch)
    result = audit(str(store), cfg, as_of=AS_OF + DAY, overlay_path=str(overlay))
    result.close()
    assert len(rescores) == 1
    # the one-row probe saw an unscored first fact: no summary scan before the rescore
    summaries = [i for i, s in enumerate(seen.sql) if "avg(f.freshness)" in s]
    inputs = [i for i, s in enumerate(seen.sql) if s.startswith("SELECT id, category, created_at")
              and "scored_as_of" in s]
    assert len(summaries) == 1 and inputs and summaries[0] > max(inputs)


def test_report_of_an_unchanged_overlay_skips_the_rescore(audited, monkeypatch):
    _, overlay, cfg = audited
    before = overlay_report(cfg, overlay_path=str(overlay), as_of=AS_OF)
    expected = report(before)
    before.close()
    rescores = rescore_calls(monkeypatch)
    result = overlay_report(cfg, overlay_path=str(overlay), as_of=AS_OF)
    try:
        assert report(result) == expected
    finally:
        result.close()
    assert rescores == []
    later = overlay_report(cfg, overlay_path=str(overlay), as_of=AS_OF + DAY)
    later.close()
    assert len(rescores) == 1


@pytest.mark.postgres
def test_postgres_overlay_summary_if_scored(tmp_path, pg_database):
    store_path = tmp_path / "bot.db"
    make_store(store_path, 150)
    cfg = config_for(store_path)
    dsn = pg_database("reaudit")
    audit(str(store_path), cfg, as_of=AS_OF, overlay_path=dsn).close()
    store = OverlayStore(dsn)
    try:
        ids = [r["id"] for r in store.sources()]
        assert store.summary_if_scored(ids, AS_OF) == store.summary(ids)
        assert store.summary(ids)["total"] == 150
        assert store.summary_if_scored(ids, AS_OF + DAY) is None
        with store.transaction():
            store.conn.execute("UPDATE facts SET scored_as_of = NULL WHERE id = (SELECT max(id) FROM facts)")
        assert store.summary_if_scored(ids, AS_OF) is None
    finally:
        store.close()
