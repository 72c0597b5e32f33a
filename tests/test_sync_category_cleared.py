"""A category the source gives is part of what a re-audit compares (facts.category_given,
overlay/store/migrations/v10_category_given.py).

A source row maps a column to the fact's category (`category = "kind"`). When that column
is cleared while the text stays, the fact must fall back to the rules' category from its
text; before v10 the overlay stored only the resulting category, so both re-audit
comparisons (the SQL set comparison, overlay/store/compare.py, and the Record path,
SyncEngine._unchanged_test) saw "given employment" as "categorised as employment" and kept
it. Setting or changing the column is a change too; unchanged rows still cost no write
(writes counted by triggers on `facts`, as tests/test_sync_unchanged.py does).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.overlay.daemon.loop import Daemon
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.store.compare import CompareRepo
from memwatch_overlay.overlay.store.database import SCHEMA_VERSION, OverlayStore
from memwatch_overlay.overlay.store.migrations import MIGRATIONS
from memwatch_overlay.rules.config import parse_config

from test_sync_unchanged import count_writes, source_sql, writes

AS_OF = 1_796_000_000.0          # 2026-11-29
T0 = "2026-01-01 00:00:00"
EXE = shutil.which("memwatch-overlay", path=str(Path(sys.executable).parent)) or "memwatch-overlay"
# id -> (text, kind): the rules say general for "fact number N", employment for the job
ROWS = {1: ("fact number 1", "employment"), 2: ("fact number 2", None), 3: ("Works at Acme as an analyst", None),
        4: ("fact number 4", ""), 5: ("fact number 5", "skill"), 6: ("Works at Initech", "Employment")}
ROWS.update({i: (f"fact number {i}", None) for i in range(7, 40)})


def make_store(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, kind TEXT, "
                 "created_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, 'u1', ?, ?, ?)",
                     ((i, text, kind, T0) for i, (text, kind) in ROWS.items()))
    conn.commit()
    conn.close()


MAPPING = {"id": "id", "text": "fact", "subject": "user_id", "category": "kind", "created_at": "created_at"}


def config_for(store: Path, **overlay):
    return parse_config({"detector": {"enabled": False}, **({"overlay": overlay} if overlay else {}),
                         "sources": [{"name": "bot", "connector": "sqlite", "path": str(store),
                                      "table": "memories", **MAPPING}]})


def categories(overlay: Path | str, source: str = "bot") -> dict[str, str]:
    """{ref: category} of the overlay's facts (either backend)."""
    with OverlayStore(str(overlay)) as ov:
        return {r[0]: r[1] for r in ov.conn.execute(
            "SELECT f.ref, f.category FROM facts f JOIN sources s ON s.id = f.source_id WHERE s.name = ?",
            (source,))}


def run_audit(store: Path, overlay: Path, cfg, fast: bool = True, monkeypatch=None):
    """audit() through the API; `fast=False`: the set comparison is off (the Record path)."""
    if not fast:
        monkeypatch.setattr(CompareRepo, "can_compare_in_sql", lambda self: False)
    try:
        result = audit(str(store), cfg, as_of=AS_OF, overlay_path=str(overlay))
        try:
            return result.stats[0]
        finally:
            result.close()
    finally:
        if not fast:
            monkeypatch.undo()


@pytest.fixture
def audited(tmp_path):
    """The bot's store and its overlay after a first audit: (store, overlay, config)."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    return store, overlay, cfg


@pytest.mark.parametrize("fast", [True, False], ids=["set-comparison", "record-path"])
def test_a_cleared_category_falls_back_to_the_rules_and_only_that_fact_is_written(audited, tmp_path, monkeypatch,
                                                                                  fast):
    store, overlay, cfg = audited
    assert categories(overlay)["bot:memories:1"] == "employment"
    count_writes(overlay)
    source_sql(store, "UPDATE memories SET kind = NULL WHERE id = 1")
    source_sql(store, "UPDATE memories SET kind = '' WHERE id = 5")
    stats = run_audit(store, overlay, cfg, fast, monkeypatch)
    got = categories(overlay)
    assert got["bot:memories:1"] == "general" and got["bot:memories:5"] == "general"
    assert sorted(i for i, _ in writes(overlay)) == sorted(
        fact_ids(overlay, ["bot:memories:1", "bot:memories:5"]))
    assert stats.changed == 2
    # what the re-audit left is what a first audit of the cleared store gives
    fresh = tmp_path / "fresh.db"
    run_audit(store, fresh, cfg)
    assert categories(fresh) == got


def fact_ids(overlay: Path, refs: list[str]) -> list[int]:
    with OverlayStore(str(overlay)) as ov:
        return [ov.fact_id(r) for r in refs]


def test_the_console_script_recategorises_a_cleared_category(tmp_path):
    store = tmp_path / "bot.db"
    make_store(store)
    (tmp_path / "memwatch.toml").write_text(
        '[overlay]\npath = "overlay.db"\n\n[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "bot.db"\n'
        'table = "memories"\nid = "id"\ntext = "fact"\nsubject = "user_id"\ncategory = "kind"\n'
        'created_at = "created_at"\n')

    def audit_json() -> dict[str, str]:
        proc = subprocess.run([EXE, "audit", "--config", "memwatch.toml", "--as-of", "2026-11-29",
                               "--format", "json"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "COLUMNS": "120"})
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
        return {f["ref"]: f["category"] for f in json.loads(proc.stdout)["facts"]}

    assert audit_json()["bot:memories:6"] == "employment"
    source_sql(store, "UPDATE memories SET kind = NULL WHERE id IN (1, 6)")
    got = audit_json()
    assert got["bot:memories:1"] == "general"             # the rules' category of its text
    assert got["bot:memories:6"] == "employment"          # the rules say employment too


@pytest.mark.parametrize("fast", [True, False], ids=["set-comparison", "record-path"])
def test_setting_and_changing_the_column_are_changes_and_are_remembered(audited, monkeypatch, fast):
    store, overlay, cfg = audited
    count_writes(overlay)
    # set: a category other than the rules' (2), the rules' own (3); changed: 5
    source_sql(store, "UPDATE memories SET kind = 'preference' WHERE id = 2")
    source_sql(store, "UPDATE memories SET kind = 'employment' WHERE id = 3")
    source_sql(store, "UPDATE memories SET kind = 'belief' WHERE id = 5")
    run_audit(store, overlay, cfg, fast, monkeypatch)
    got = categories(overlay)
    assert (got["bot:memories:2"], got["bot:memories:3"], got["bot:memories:5"]) == \
        ("preference", "employment", "belief")
    assert len(writes(overlay)) == 3          # 3 holds the category it had, but given now
    # the given categories are known: clearing them falls back to the rules
    source_sql(store, "UPDATE memories SET kind = NULL WHERE id IN (2, 3, 5)")
    run_audit(store, overlay, cfg, fast, monkeypatch)
    got = categories(overlay)
    assert (got["bot:memories:2"], got["bot:memories:3"], got["bot:memories:5"]) == \
        ("general", "employment", "general")
    assert len(writes(overlay)) == 3


def test_unchanged_rows_write_nothing_and_store_what_was_given(audited, monkeypatch):
    store, overlay, cfg = audited
    with OverlayStore(str(overlay)) as ov:
        given = dict(ov.conn.execute("SELECT ref, category_given FROM facts"))
    # the text the source gave, as it gave it; NULL for NULL and for an empty column
    assert (given["bot:memories:1"], given["bot:memories:4"], given["bot:memories:6"],
            given["bot:memories:2"]) == ("employment", None, "Employment", None)
    count_writes(overlay)
    for fast in (True, False, True):
        stats = run_audit(store, overlay, cfg, fast, monkeypatch)
        assert writes(overlay) == [] and stats.changed == 0
    # a row that matched the SQL comparison before must not be skipped by it once cleared
    reads = []
    real = SqliteConnector.records_at
    monkeypatch.setattr(SqliteConnector, "records_at", lambda self, rowids: reads.extend(rowids) or real(self, rowids))
    source_sql(store, "UPDATE memories SET kind = NULL WHERE id = 1")
    run_audit(store, overlay, cfg)
    assert 1 in reads and len(writes(overlay)) == 1


def test_the_daemons_full_resync_recategorises_a_cleared_category(tmp_path):
    store = tmp_path / "bot.db"
    make_store(store)
    cfg = parse_config({"overlay": {"path": str(tmp_path / "overlay.db")}, "detector": {"enabled": False},
                        "daemon": {"debounce_seconds": 0.05, "max_delay_seconds": 0.5, "rescore_seconds": 3600,
                                   "deletion_scan_seconds": 3600, "heartbeat_seconds": 3600,
                                   "full_resync_seconds": 0.01},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(store),
                                     "table": "memories", **MAPPING}]})
    with Daemon(cfg) as d:
        d.tick(force=True)
        assert categories(tmp_path / "overlay.db")["bot:memories:1"] == "employment"
        count_writes(tmp_path / "overlay.db")
        # no time column moves: only the periodic full resync reads the row again
        source_sql(store, "UPDATE memories SET kind = NULL WHERE id = 1")
        d.states[0].next_full = 0.0
        d.tick(force=True)
        assert categories(tmp_path / "overlay.db")["bot:memories:1"] == "general"
        assert len(writes(tmp_path / "overlay.db")) == 1


@pytest.mark.postgres
def test_a_postgres_overlay_recategorises_a_cleared_category(tmp_path, pg_database):
    dsn = pg_database("memwatch_catgiven")
    store = tmp_path / "bot.db"
    make_store(store)
    (tmp_path / "memwatch.toml").write_text(
        '[detector]\nenabled = false\n\n'
        '[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "bot.db"\ntable = "memories"\nid = "id"\n'
        'text = "fact"\nsubject = "user_id"\ncategory = "kind"\ncreated_at = "created_at"\n')

    def audit_cli() -> None:
        proc = subprocess.run([EXE, "audit", "--config", "memwatch.toml", "--overlay", dsn, "--as-of",
                               "2026-11-29", "--format", "json"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr

    audit_cli()
    assert categories(dsn)["bot:memories:1"] == "employment"
    with OverlayStore(dsn) as ov:
        before = dict(ov.conn.execute("SELECT ref, xmin::text FROM facts"))
    source_sql(store, "UPDATE memories SET kind = NULL WHERE id = 1")
    audit_cli()
    assert categories(dsn)["bot:memories:1"] == "general"
    with OverlayStore(dsn) as ov:
        after = dict(ov.conn.execute("SELECT ref, xmin::text FROM facts"))
    # only the cleared fact's row was written (a new row version); every other row is the same version
    assert [r for r in before if before[r] != after[r]] == ["bot:memories:1"]


def test_a_json_source_recategorises_a_cleared_category(tmp_path):
    path, overlay = tmp_path / "bot.json", tmp_path / "overlay.db"

    def write(kind):
        path.write_text(json.dumps({"memories": [
            {"id": "a1", "content": "fact number 1", "kind": kind, "ts": "2025-06-07"},
            {"id": "a2", "content": "Works at Acme", "ts": "2025-06-07"}]}))

    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "json", "path": str(path),
                                     "records": "memories[*]", "id": "id", "text": "content", "category": "kind",
                                     "created_at": "ts"}]})
    write("skill")
    audit(str(path), cfg, as_of=AS_OF, overlay_path=str(overlay)).close()
    assert categories(overlay)["bot:bot.json:a1"] == "skill"
    count_writes(overlay)
    write(None)
    audit(str(path), cfg, as_of=AS_OF, overlay_path=str(overlay)).close()
    assert categories(overlay)["bot:bot.json:a1"] == "general"
    assert len(writes(overlay)) == 1


def v9_overlay(store: Path, overlay: Path) -> None:
    """A v9 overlay of `store`: what v9's code wrote is today's facts without the column v10
    adds (the columns and their order checked against a schema built from v1..v9)."""
    run_audit(store, overlay, config_for(store))
    conn = sqlite3.connect(overlay)
    conn.execute("ALTER TABLE facts DROP COLUMN category_given")
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    old = sqlite3.connect(":memory:")
    for v in range(1, 10):
        old.executescript(MIGRATIONS[v])
    assert conn.execute("PRAGMA table_info(facts)").fetchall() == old.execute("PRAGMA table_info(facts)").fetchall()
    conn.close()


def test_a_v9_overlay_keeps_its_facts_and_rewrites_only_facts_given_a_category_once(tmp_path):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store)
    v9_overlay(store, overlay)
    conn = sqlite3.connect(overlay)
    before = conn.execute("SELECT * FROM facts ORDER BY id").fetchall()
    conn.close()
    with OverlayStore(str(overlay)) as ov:
        assert ov.schema_version() == SCHEMA_VERSION >= 10
        rows = ov.conn.execute("SELECT * FROM facts ORDER BY id").fetchall()
        # every fact as it was, the new column NULL ("not given": see the migration's docstring)
        assert [tuple(r)[:-1] for r in rows] == before and {r["category_given"] for r in rows} == {None}
    count_writes(overlay)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    given = [i for i, (_, kind) in ROWS.items() if kind]
    assert sorted(i for i, _ in writes(overlay)) == sorted(
        fact_ids(overlay, [f"bot:memories:{i}" for i in given]))     # 1, 5, 6: not the other 36
    run_audit(store, overlay, cfg)
    assert writes(overlay) == []
    source_sql(store, "UPDATE memories SET kind = NULL WHERE id = 1")
    run_audit(store, overlay, cfg)
    assert categories(overlay)["bot:memories:1"] == "general" and len(writes(overlay)) == 1


def test_an_export_carries_the_given_category_and_its_import_rewrites_nothing(tmp_path):
    from memwatch_overlay.overlay.store.backup import export_file, import_file

    store, overlay, copy = tmp_path / "bot.db", tmp_path / "overlay.db", tmp_path / "copy.db"
    make_store(store)
    cfg = config_for(store)
    run_audit(store, overlay, cfg)
    with OverlayStore(str(overlay)) as ov:
        export_file(ov, tmp_path / "export.jsonl")
    lines = [json.loads(ln) for ln in (tmp_path / "export.jsonl").read_text().splitlines()]
    facts = {f["ref"]: f for f in lines if f["type"] == "fact"}
    assert facts["bot:memories:1"]["category_given"] == "employment"
    assert "category_given" not in facts["bot:memories:2"]          # none given: the line is as before v10
    with OverlayStore(str(copy)) as ov:
        import_file(ov, tmp_path / "export.jsonl")
    count_writes(copy)
    run_audit(store, copy, cfg)
    assert writes(copy) == []
    source_sql(store, "UPDATE memories SET kind = NULL WHERE id = 1")
    run_audit(store, copy, cfg)
    assert categories(copy)["bot:memories:1"] == "general"
