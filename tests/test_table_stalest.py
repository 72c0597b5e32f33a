"""The console table's first rows come from the partial index facts_stalest (migration v08).

The table shows live facts stalest first, then deleted ones, and stops at 200. When 200 live
facts lie below STALEST_BELOW (or have no freshness) they are those rows, read from the index
alone; with fewer, the whole order is read as before. Held equal to the old full-order query
(iter_report_rows with TABLE_ORDER) on overlays that take either path, counted in SQLite
virtual-machine steps (the same for 2,000 and 20,000 facts), and checked through the console
script against the same overlay without the index.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.store.migrations import MIGRATIONS
from memwatch_overlay.overlay.store.reports import STALEST_BELOW, TABLE_ORDER
from memwatch_overlay.rules.config import parse_config

from test_reaudit_scans import config_for

EXE = Path(sys.executable).with_name("memwatch-overlay")
AS_OF = 1_796_000_000.0          # 2026-11-29
DAY = 86400.0


def make_store(path: Path, n: int, old_share: float = 0.5) -> None:
    """n memories; about `old_share` of them years old (freshness far below STALEST_BELOW)."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT)")
    cut = int(n * old_share)

    def age(i: int) -> float:        # days; repeated ages give freshness ties (broken by id)
        return 700 + (i * 7 % 500) if (i * 37) % n < cut else (i * 11 % 300)

    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, datetime(?, 'unixepoch'))",
                     ((i, f"u{i % 9}", f"memory {i}", int(AS_OF - age(i) * DAY)) for i in range(1, n + 1)))
    conn.commit()
    conn.close()


def audited(tmp_path: Path, n: int, old_share: float = 0.5, name: str = "bot") -> tuple[Path, Path]:
    store, overlay = tmp_path / f"{name}.db", tmp_path / f"{name}-overlay.db"
    make_store(store, n, old_share)
    audit(str(store), config_for(store), as_of=AS_OF, overlay_path=str(overlay)).close()
    return store, overlay


def both(overlay: Path, ids, limit: int) -> tuple[list, list]:
    store = OverlayStore(str(overlay))
    try:
        new = list(store.iter_stalest_rows(ids, limit))
        old = list(store.iter_report_rows(ids, order=TABLE_ORDER, limit=limit))
        return new, old
    finally:
        store.close()


def stale_live(overlay: Path) -> int:
    conn = sqlite3.connect(overlay)
    try:
        return conn.execute("SELECT count(*) FROM facts WHERE status IN ('active', 'contradicted') "
                            "AND (freshness < ? OR freshness IS NULL)", (STALEST_BELOW,)).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("old_share", [0.0, 0.02, 0.5])
@pytest.mark.parametrize("limit", [1, 200, 5000])
def test_the_rows_are_the_full_orders_first_rows(tmp_path, old_share, limit):
    _, overlay = audited(tmp_path, 3000, old_share)
    conn = sqlite3.connect(overlay)
    # deleted and forgotten facts among the stalest, contradicted ones, unscored ones (NULL first)
    conn.execute("UPDATE facts SET status = 'deleted' WHERE id % 10 = 1")
    conn.execute("UPDATE facts SET status = 'forgotten' WHERE id % 10 = 2")
    conn.execute("UPDATE facts SET status = 'contradicted' WHERE id % 10 = 3")
    conn.execute("UPDATE facts SET freshness = NULL WHERE id % 97 = 4")
    conn.commit()
    conn.close()
    new, old = both(overlay, [1], limit)
    assert new == old and len(new) == min(limit, 2700)
    assert [r[2] for r in new] != sorted(r[2] for r in new) or limit == 1   # not the id order


def test_other_sources_facts_are_left_out(tmp_path):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    make_store(a, 800, 0.5)
    make_store(b, 900, 0.9)
    overlay = tmp_path / "overlay.db"
    audit(None, config_for(a, b), as_of=AS_OF, overlay_path=str(overlay)).close()
    store = OverlayStore(str(overlay))
    ids = {r["name"]: r["id"] for r in store.sources()}
    store.close()
    for scope in ([ids["a"]], [ids["b"]], [ids["a"], ids["b"]], None, []):
        new, old = both(overlay, scope, 200)
        assert new == old
        assert {r[0] for r in new} <= {n for n, i in ids.items() if scope is None or i in scope}


def vm_steps(overlay: Path, limit: int = 200) -> tuple[int, int]:
    """SQLite VM steps (in thousands) of the new and the old query for the table's rows."""
    store = OverlayStore(str(overlay))
    counted = [0]

    def tick():
        counted[0] += 1
        return 0

    try:
        store.conn.set_progress_handler(tick, 1000)
        list(store.iter_stalest_rows([1], limit))
        new, counted[0] = counted[0], 0
        list(store.iter_report_rows([1], order=TABLE_ORDER, limit=limit))
        return new, counted[0]
    finally:
        store.conn.set_progress_handler(None, 0)
        store.close()


def test_the_table_reads_what_it_shows_not_what_is_stored(tmp_path):
    small = audited(tmp_path, 2000, name="small")[1]
    large = audited(tmp_path, 20000, name="large")[1]
    new_small, old_small = vm_steps(small)
    new_large, old_large = vm_steps(large)
    assert old_large > 4 * old_small                  # the full order reads every fact
    assert new_large <= new_small + 2                 # the index: the 200 rows shown, whatever is stored
    assert new_large * 20 < old_large


def test_a_missing_index_falls_back_to_the_full_order(tmp_path):
    _, overlay = audited(tmp_path, 1500)
    expected = both(overlay, [1], 200)[1]
    conn = sqlite3.connect(overlay)
    conn.execute("DROP INDEX facts_stalest")
    conn.commit()
    conn.close()
    store = OverlayStore(str(overlay))
    try:
        assert list(store.iter_stalest_rows([1], 200)) == expected
    finally:
        store.close()


def test_first_audit_and_a_bulk_rescore_leave_the_index(tmp_path, monkeypatch):
    _, overlay = audited(tmp_path, 3000)
    conn = sqlite3.connect(overlay)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    conn.close()
    assert "facts_stalest" in names and stale_live(overlay) >= 200
    monkeypatch.setattr(sync_module, "BULK_MIN", 1000)
    statements: list[str] = []
    store = OverlayStore(str(overlay))
    try:
        store.conn.set_trace_callback(statements.append)
        assert SyncEngine(store, parse_config({})).rescore(AS_OF + 400 * DAY) == 3000
    finally:
        store.close()
    assert 'DROP INDEX "facts_stalest"' in statements
    assert any(s.startswith("CREATE INDEX facts_stalest") for s in statements)
    conn = sqlite3.connect(overlay)
    plan = conn.execute("EXPLAIN QUERY PLAN SELECT id FROM facts INDEXED BY facts_stalest WHERE "
                        "status IN ('active', 'contradicted') AND (freshness < 0.3 OR freshness IS NULL) "
                        "ORDER BY freshness, id LIMIT 5").fetchall()
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert "facts_stalest" in str(plan) and "TEMP B-TREE" not in str(plan)
    new, old = both(overlay, [1], 200)
    assert new == old


def test_a_v7_overlay_gets_the_index_and_keeps_its_facts(tmp_path):
    path = tmp_path / "v7.db"
    conn = sqlite3.connect(path)
    for v in range(1, 8):
        conn.executescript(MIGRATIONS[v])
    conn.execute("PRAGMA user_version = 7")
    conn.execute("INSERT INTO sources (id, name, connector, target) VALUES (1, 'bot', 'sqlite', 'x')")
    conn.executemany(
        "INSERT INTO facts (source_id, tbl, pk, ref, text, category, content_hash, first_seen, last_seen, "
        "seen_sync, changed_sync, status, freshness, label, scored_as_of) "
        "VALUES (1, 't', ?, ?, ?, 'general', 'h', 0, 0, 1, 1, ?, ?, 'expired', 1)",
        [(f'{{"id": "{i}"}}', f"bot:t:{i}", f"fact {i}", "deleted" if i % 5 == 0 else "active",
          (i % 40) / 100) for i in range(1, 601)])
    conn.commit()
    before = conn.execute("SELECT * FROM facts ORDER BY id").fetchall()
    v7_columns = ", ".join(r[1] for r in conn.execute("PRAGMA table_info(facts)"))   # (later versions add some)
    conn.close()
    with OverlayStore(path) as store:
        assert store.schema_version() >= 8
        assert list(store.iter_stalest_rows([1], 200)) == list(store.iter_report_rows([1], TABLE_ORDER, 200))
    conn = sqlite3.connect(path)
    assert conn.execute(f"SELECT {v7_columns} FROM facts ORDER BY id").fetchall() == before
    assert conn.execute("SELECT count(*) FROM facts INDEXED BY facts_stalest WHERE status IN "
                        "('active', 'contradicted') AND (freshness < 0.3 OR freshness IS NULL)").fetchone()[0] == 360
    conn.close()


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "120"}, timeout=120)


@pytest.mark.parametrize("old_share", [0.03, 0.5])
def test_console_table_is_the_one_the_full_order_gives(tmp_path, old_share):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 4000, old_share)
    toml = tmp_path / "nodetect.toml"
    toml.write_text("[detector]\nenabled = false\n")
    args = ("audit", store, "--overlay", overlay, "--as-of", "2026-11-29", "--config", toml)
    first = cli(*args)
    assert first.returncode in (0, 1), first.stderr
    src = sqlite3.connect(store)
    src.execute("DELETE FROM memories WHERE id % 7 = 0")        # deleted facts in the table's tail
    src.commit()
    src.close()
    copy = tmp_path / "copy.db"
    again = cli(*args)
    shutil.copy(overlay, copy)
    conn = sqlite3.connect(copy)
    conn.execute("DROP INDEX facts_stalest")                     # the copy answers with the full order
    conn.commit()
    conn.close()
    args_copy = ("audit", store, "--overlay", copy, "--as-of", "2026-11-29", "--config", toml)
    without = cli(*args_copy)
    assert again.returncode == without.returncode and again.stdout == without.stdout
    assert "deleted in source 571" in again.stdout
    assert (stale_live(overlay) >= 200) == (old_share == 0.5)      # both paths taken
