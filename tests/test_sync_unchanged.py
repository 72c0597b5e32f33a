"""A full re-read of an unchanged store writes nothing (issue 15.4): each record is compared
with its stored fact on the key, and only what changed is written and rescored.

Writes are counted by triggers on the overlay's `facts` table (every INSERT and UPDATE,
the upsert's DO UPDATE included), never by timing. The facts a compared sync leaves are
checked against what a plain upsert of every record leaves (a fresh overlay).
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

AS_OF = 1_796_000_000.0          # 2026-11-29
T0 = "2026-01-01 00:00:00"


def make_store(path: Path, n: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT, "
                 "hits INTEGER)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, 0)",
                     ((i, f"u{i % 7}", f"fact number {i}", T0) for i in range(1, n + 1)))
    conn.commit()
    conn.close()


def source_sql(path: Path, sql: str, *params) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def config_for(path: Path):
    return parse_config({"detector": {"enabled": False},
                         "sources": [{"name": "bot", "connector": "sqlite", "path": str(path),
                                      "table": "memories", "id": "id", "text": "fact", "subject": "user_id",
                                      "created_at": "created_at", "access_count": "hits"}]})


def count_writes(overlay: Path) -> None:
    """Record every row written to `facts` in a table of the overlay file itself."""
    conn = sqlite3.connect(overlay)
    conn.executescript("""
        CREATE TABLE IF NOT EXISTS fact_writes (id INTEGER, op TEXT);
        CREATE TRIGGER IF NOT EXISTS fw_ins AFTER INSERT ON facts BEGIN
            INSERT INTO fact_writes VALUES (new.id, 'insert'); END;
        CREATE TRIGGER IF NOT EXISTS fw_upd AFTER UPDATE ON facts BEGIN
            INSERT INTO fact_writes VALUES (new.id, 'update'); END;
        DELETE FROM fact_writes;
    """)
    conn.close()


def writes(overlay: Path) -> list[tuple]:
    conn = sqlite3.connect(overlay)
    rows = conn.execute("SELECT id, op FROM fact_writes ORDER BY rowid").fetchall()
    conn.execute("DELETE FROM fact_writes")
    conn.commit()
    conn.close()
    return rows


def facts(overlay: Path, as_of: float = AS_OF, config=None) -> list[dict]:
    """The report's facts[] of the overlay rescored at `as_of`, without first_seen (a fresh
    overlay sees its facts later) and keyed by ref."""
    from memwatch_overlay.overlay.engine.audit import overlay_report

    result = overlay_report(config, overlay_path=str(overlay), as_of=as_of)
    try:
        out = [{k: v for k, v in f.items() if k != "first_seen"} for f in result.iter_facts()]
    finally:
        result.close()
    return sorted(out, key=lambda f: f["ref"])


def run_audit(store: Path, overlay: Path, cfg, as_of: float = AS_OF) -> dict:
    result = audit(str(store), cfg, as_of=as_of, overlay_path=str(overlay))
    try:
        return dict(result.summary), result.stats[0]
    finally:
        result.close()


def test_reaudit_of_an_unchanged_store_writes_no_fact(tmp_path):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    cfg = config_for(store)
    first, _ = run_audit(store, overlay, cfg)
    count_writes(overlay)
    again, stats = run_audit(store, overlay, cfg)
    assert writes(overlay) == []
    assert again == first and stats.records == 300 and stats.changed == 0 and stats.deleted == 0


def test_one_changed_row_is_one_write_and_the_facts_match_a_fresh_overlay(tmp_path):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    count_writes(overlay)
    source_sql(store, "UPDATE memories SET fact = 'fact number 17, changed' WHERE id = 17")
    _, stats = run_audit(store, overlay, cfg)
    with OverlayStore(overlay) as ov:
        changed = ov.fact_id("bot:memories:17")
    assert writes(overlay) == [(changed, "update")]
    assert stats.changed == 1
    # an access counter is not content, but it is a scoring input: a write too
    source_sql(store, "UPDATE memories SET hits = 5 WHERE id = 18")
    run_audit(store, overlay, cfg)
    assert len(writes(overlay)) == 1
    fresh = tmp_path / "fresh.db"
    run_audit(store, fresh, cfg)
    assert facts(overlay) == facts(fresh)


def test_a_deleted_row_is_one_write_and_comes_back_when_the_row_does(tmp_path):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 50)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    count_writes(overlay)
    source_sql(store, "DELETE FROM memories WHERE id = 3")
    _, stats = run_audit(store, overlay, cfg)
    assert stats.deleted == 1 and len(writes(overlay)) == 1
    by_ref = {f["ref"]: f for f in facts(overlay)}
    assert by_ref["bot:memories:3"]["status"] == "deleted"
    source_sql(store, "INSERT INTO memories VALUES (3, 'u3', 'fact number 3', ?, 0)", T0)
    run_audit(store, overlay, cfg)
    assert len(writes(overlay)) == 1
    assert {f["ref"]: f["status"] for f in facts(overlay)}["bot:memories:3"] == "active"


def test_a_later_as_of_rescores_unchanged_facts_like_a_fresh_overlay(tmp_path):
    store, overlay, fresh = tmp_path / "bot.db", tmp_path / "overlay.db", tmp_path / "fresh.db"
    make_store(store, 40)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    later = AS_OF + 400 * 86400
    run_audit(store, overlay, cfg, as_of=later)
    run_audit(store, fresh, cfg, as_of=later)
    assert facts(overlay, later) == facts(fresh, later)


def test_a_deleted_facts_last_sighting_is_the_last_full_read_that_saw_it(tmp_path):
    """Unchanged facts keep their row (last_seen included); a deletion dates the fact's
    last sighting from the last full read, which did see it (gc's retention counts from it)."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 10)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    run_audit(store, overlay, cfg)
    with OverlayStore(overlay) as ov:
        second = ov.source_row("bot")["last_full_sync"]
    source_sql(store, "DELETE FROM memories WHERE id = 4")
    run_audit(store, overlay, cfg)
    conn = sqlite3.connect(overlay)
    last_seen, status = conn.execute("SELECT last_seen, status FROM facts WHERE ref = 'bot:memories:4'").fetchone()
    conn.close()
    assert status == "deleted" and last_seen == second


@pytest.mark.parametrize("change", ["rules", "threshold"])
def test_a_changed_configuration_rewrites_every_fact(tmp_path, change):
    """The comparison holds only for the configuration the facts were made with."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 20)
    run_audit(store, overlay, config_for(store))
    count_writes(overlay)
    extra = ({"rules": [{"category": "identity", "text": ["fact number"]}]} if change == "rules"
             else {"scoring": {"fresh": 0.9, "aging": 0.6, "stale": 0.2}})
    cfg = parse_config({"detector": {"enabled": False}, **extra,
                        "sources": [dict(name="bot", connector="sqlite", path=str(store), table="memories",
                                         id="id", text="fact", subject="user_id", created_at="created_at",
                                         access_count="hits")]})
    run_audit(store, overlay, cfg)
    assert len(writes(overlay)) >= 20


def test_a_forgotten_fact_stays_forgotten_and_unwritten(tmp_path):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 10)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    with OverlayStore(overlay) as ov, ov.transaction():
        ov.set_status(["bot:memories:2"], "forgotten")
    count_writes(overlay)
    run_audit(store, overlay, cfg)
    assert writes(overlay) == []
    with OverlayStore(overlay) as ov:
        assert ov.fact_row("bot:memories:2")["status"] == "forgotten"


def test_a_postgres_overlay_compares_the_same_way(tmp_path, pg_database):
    """The same re-audits into a Postgres overlay: no fact row changes when nothing did (its
    xmin would), a deletion is one fact, and the facts equal a SQLite overlay's."""
    store, lite = tmp_path / "bot.db", tmp_path / "overlay.db"
    url = pg_database("memwatch_ov")
    make_store(store, 60)
    cfg = config_for(store)
    run_audit(store, url, cfg)
    run_audit(store, lite, cfg)

    def versions():
        with OverlayStore(url) as ov:
            return {r[0]: r[1] for r in ov.conn.execute("SELECT id, xmin::text FROM facts")}

    before = versions()
    _, stats = run_audit(store, url, cfg)
    assert versions() == before and stats.changed == 0
    source_sql(store, "DELETE FROM memories WHERE id = 9")
    _, stats = run_audit(store, url, cfg)
    after = versions()
    assert stats.deleted == 1 and sum(after[i] != before[i] for i in before) == 1
    run_audit(store, lite, cfg)
    assert facts(url) == facts(lite)


def test_the_default_detector_is_made_only_when_a_sync_changed_something(tmp_path, monkeypatch):
    """Compiling the shipped slot pack costs seconds: a re-audit of an unchanged store makes no
    detector, and a changed fact still gets compared (the contradiction it makes is found)."""
    from memwatch_overlay.overlay.detect import blocks

    made = []
    real = blocks.make_detector

    def counting(cfg):
        made.append(cfg)
        return real(cfg)

    monkeypatch.setattr(blocks, "make_detector", counting)
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?)",
                     [(1, "ann", "I live in Paris", "2026-01-01 00:00:00"),
                      (2, "bob", "I work at Acme", "2026-01-01 00:00:00")])
    conn.commit()
    conn.close()
    cfg = parse_config({"sources": [{"name": "bot", "connector": "sqlite", "path": str(store),
                                     "table": "memories", "id": "id", "text": "fact", "subject": "user_id",
                                     "created_at": "created_at"}]})
    first, _ = run_audit(store, overlay, cfg)
    assert len(made) == 1 and first["contradicted"] == 0
    again, _ = run_audit(store, overlay, cfg)
    assert len(made) == 1 and again == first
    source_sql(store, "INSERT INTO memories VALUES (3, 'ann', 'I live in Berlin', '2026-06-01 00:00:00')")
    third, _ = run_audit(store, overlay, cfg)
    assert len(made) == 2 and third["contradicted"] == 1
