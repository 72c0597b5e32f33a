"""A re-audit of a plain SQLite table is a set comparison in SQL (overlay/store/compare.py):
unchanged rows never become Records and cost no write; changed, new and deleted rows are
found exactly as the Record-by-Record comparison finds them.

Records are counted where the connector makes them (read() must not run at all; the rows
the comparison hands back come from records_at()); writes by triggers on `facts`. Every
scenario also runs with the set comparison switched off, and both overlays must agree
(writes, stats, facts, the source's cursor).
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.store.compare import CompareRepo
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

from test_sync_unchanged import count_writes, facts, source_sql, writes

AS_OF = 1_796_000_000.0          # 2026-11-29
T0 = "2026-01-01 00:00:00"


class Counts:
    def __init__(self):
        self.read = 0        # read() calls (the Record path over the whole table)
        self.records = 0     # Records made from the rows the comparison handed back


@pytest.fixture(autouse=True)
def compare_every_time(monkeypatch):
    """These tests are about the set comparison: a recorded source snapshot would answer an
    unchanged re-audit without it (tests/test_source_snapshot.py tests that)."""
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)


@pytest.fixture
def counts(monkeypatch):
    c = Counts()
    real_read, real_at = SqliteConnector.read, SqliteConnector.records_at

    def read(self, cursor=None):
        c.read += 1
        return real_read(self, cursor)

    def records_at(self, rowids):
        for rec in real_at(self, rowids):
            c.records += 1
            yield rec

    monkeypatch.setattr(SqliteConnector, "read", read)
    monkeypatch.setattr(SqliteConnector, "records_at", records_at)
    return c


def make_store(path: Path, n: int, updated: bool = False) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT, "
                 "hits INTEGER, updated_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, 0, ?)",
                     ((i, f"u{i % 7}", f"fact number {i}", T0, T0 if updated and i % 3 else None)
                      for i in range(1, n + 1)))
    conn.commit()
    conn.close()


def config_for(path: Path, **extra):
    mapping = {"id": "id", "text": "fact", "subject": "user_id", "created_at": "created_at", "access_count": "hits"}
    mapping.update(extra)
    return parse_config({"detector": {"enabled": False},
                         "sources": [{"name": "bot", "connector": "sqlite", "path": str(path), "table": "memories",
                                      **{k: v for k, v in mapping.items() if v is not None}}]})


def run(store: Path, overlay: Path, cfg, as_of: float = AS_OF):
    result = audit(str(store), cfg, as_of=as_of, overlay_path=str(overlay))
    try:
        return dict(result.summary), result.stats[0]
    finally:
        result.close()


def source_state(overlay: Path) -> tuple:
    conn = sqlite3.connect(overlay)
    row = conn.execute("SELECT sync_count, cursor_json, rows_read_last_sync, rows_seen FROM sources "
                       "WHERE name = 'bot'").fetchone()
    conn.close()
    cursor = json.loads(row[1])
    cursor.pop("scanned_at", None)      # the clock at the read
    return (row[0], cursor, *row[2:])


def test_an_unchanged_reaudit_makes_no_record_and_writes_nothing(tmp_path, counts):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 2500, updated=True)        # more than a page of the comparison in the test below
    cfg = config_for(store, updated_at="updated_at")
    first, _ = run(store, overlay, cfg)
    assert counts.read == 1
    count_writes(overlay)
    again, stats = run(store, overlay, cfg)
    assert counts.read == 1 and counts.records == 0          # read() did not run again; no Record made
    assert writes(overlay) == []
    assert again == first and stats.records == 2500 and stats.rows_read == 2500
    assert stats.changed == 0 and stats.deleted == 0


def test_pages_of_the_comparison_agree_with_one_page(tmp_path, counts, monkeypatch):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 250)
    cfg = config_for(store)
    run(store, overlay, cfg)
    source_sql(store, "UPDATE memories SET fact = 'changed' WHERE id IN (7, 120, 249)")
    real = CompareRepo.compare_source
    monkeypatch.setattr(CompareRepo, "compare_source",
                        lambda self, sid, spec, pause=None: real(self, sid, spec, pause, page_rows=40))
    count_writes(overlay)
    _, stats = run(store, overlay, cfg)
    assert counts.records == 3 and len(writes(overlay)) == 3 and stats.changed == 3 and stats.rows_read == 250


def scenario(tmp_path: Path, name: str, fast: bool, monkeypatch, change) -> dict:
    """First audit, `change(store)`, re-audit (with or without the set comparison): what it wrote."""
    folder = tmp_path / f"{name}_{'fast' if fast else 'slow'}"
    folder.mkdir()
    store, overlay = folder / "bot.db", folder / "overlay.db"
    make_store(store, 60, updated=True)
    cfg = config_for(store, updated_at="updated_at")
    run(store, overlay, cfg)
    count_writes(overlay)
    change(store)
    reads = []
    real_read = SqliteConnector.read
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(CompareRepo, "can_compare_in_sql", lambda self: False)
        m.setattr(SqliteConnector, "read", lambda self, cursor=None: reads.append(1) or real_read(self, cursor))
        summary, stats = run(store, overlay, cfg)
    assert len(reads) == (0 if fast else 1)       # the set comparison ran (or did not)
    got = {"writes": len(writes(overlay)), "changed": stats.changed, "deleted": stats.deleted,
           "records": stats.records, "rows_read": stats.rows_read, "summary": summary,
           "source": source_state(overlay)[1:], "facts": facts(overlay)}
    for f in got["facts"]:
        f.pop("first_seen", None)
    return got


# change -> (SQL on the source, whether the Record path calls it a change: a write)
CHANGES = {
    "a changed text": ("UPDATE memories SET fact = 'fact number 5!' WHERE id = 5", True),
    "a new row": ("INSERT INTO memories VALUES (100, 'u1', 'a new fact', '2026-02-01 00:00:00', 0, NULL)", True),
    "a deleted row": ("DELETE FROM memories WHERE id = 8", True),
    "an emptied text": ("UPDATE memories SET fact = '  ' WHERE id = 9", True),
    "a changed subject": ("UPDATE memories SET user_id = 'u99' WHERE id = 10", True),
    "an emptied subject": ("UPDATE memories SET user_id = '' WHERE id = 11", True),
    "an integer subject": ("UPDATE memories SET user_id = 7 WHERE id = 24", True),
    "a NULL subject": ("UPDATE memories SET user_id = NULL WHERE id = 4", True),
    "an upper-case subject": ("UPDATE memories SET user_id = upper(user_id) WHERE id = 6", True),
    "a blank subject": ("UPDATE memories SET user_id = '   ' WHERE id = 7", True),
    "an access count": ("UPDATE memories SET hits = 3 WHERE id = 12", True),
    "a later created_at": ("UPDATE memories SET created_at = '2026-01-01 00:00:01' WHERE id = 13", True),
    "an impossible date": ("UPDATE memories SET created_at = '2025-12-32 00:00:00' WHERE id = 16", True),
    "february 30th": ("UPDATE memories SET created_at = '2026-02-30 00:00:00', updated_at = NULL WHERE id = 17", True),
    "a fraction of a second": ("UPDATE memories SET created_at = '2026-01-01 00:00:00.250' WHERE id = 19", True),
    "a NULL time": ("UPDATE memories SET updated_at = NULL WHERE id = 22", True),
    # the same values written another way: no change for either path
    "a NULL access count": ("UPDATE memories SET hits = NULL WHERE id = 12", False),
    "the same time with T": ("UPDATE memories SET created_at = '2026-01-01T00:00:00' WHERE id = 14", False),
    "a date alone": ("UPDATE memories SET created_at = '2026-01-01' WHERE id = 15", False),
    "a time with a zone": ("UPDATE memories SET created_at = '2026-01-01T01:00:00+01:00' WHERE id = 18", False),
    "a blob text": ("UPDATE memories SET fact = CAST('fact number 23' AS BLOB) WHERE id = 23", False),
    "a blob subject of the same text": ("UPDATE memories SET user_id = CAST(user_id AS BLOB) WHERE id = 5", False),
    "an unchanged store": ("SELECT 1", False),
}


@pytest.mark.parametrize("name", list(CHANGES))
def test_every_change_is_found_as_the_record_path_finds_it(tmp_path, monkeypatch, name):
    sql, is_change = CHANGES[name]

    def change(store):
        source_sql(store, sql)

    fast = scenario(tmp_path, name.replace(" ", "_"), True, monkeypatch, change)
    slow = scenario(tmp_path, name.replace(" ", "_"), False, monkeypatch, change)
    assert fast == slow
    assert (fast["writes"] > 0) == is_change


def test_found_changes_are_only_the_rows_that_changed(tmp_path, counts):
    store, overlay, fresh = tmp_path / "bot.db", tmp_path / "overlay.db", tmp_path / "fresh.db"
    make_store(store, 300)
    cfg = config_for(store)
    run(store, overlay, cfg)
    count_writes(overlay)
    source_sql(store, "UPDATE memories SET fact = 'fact number 17, changed' WHERE id = 17")
    source_sql(store, "INSERT INTO memories VALUES (301, 'u1', 'new', ?, 0, NULL)", T0)
    source_sql(store, "DELETE FROM memories WHERE id = 40")
    _, stats = run(store, overlay, cfg)
    assert counts.records == 2                     # the changed row and the new one
    assert stats.changed == 2 and stats.deleted == 1 and len(writes(overlay)) == 3
    run(store, fresh, cfg)
    live = [f for f in facts(overlay) if f["status"] != "deleted"]
    assert [{k: v for k, v in f.items() if k != "first_seen"} for f in live] == \
        [{k: v for k, v in f.items() if k != "first_seen"} for f in facts(fresh)]


def test_odd_keys_and_values_take_the_record_path_and_stay_unwritten(tmp_path, counts):
    """Keys needing a JSON escape, non-ASCII, a category column, a contradicted or forgotten
    fact: the comparison leaves them to the Record path, which finds them unchanged."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE memories (k TEXT PRIMARY KEY, user_id TEXT, fact TEXT, kind TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?)", [
        ("plain", "u1", "fact a", None, T0), ('q"uote', "u1", "fact b", None, T0), ("back\\slash", "u1", "fact c", "", T0),
        ("ünï", "u2", "fäct d", None, T0), ("cat", "u2", "fact e", "employment", T0), ("7", None, "fact f", None, None)])
    conn.commit()
    conn.close()
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(store), "table": "memories",
                                     "id": "k", "text": "fact", "subject": "user_id", "category": "kind",
                                     "created_at": "created_at"}]})
    run(store, overlay, cfg)
    with OverlayStore(overlay) as ov, ov.transaction():
        ov.set_status(["bot:memories:7"], "forgotten")
    count_writes(overlay)
    _, stats = run(store, overlay, cfg)
    assert writes(overlay) == [] and stats.records == 6
    # all but "plain": the quote, the backslash, the non-ASCII key, the category, the forgotten fact
    assert counts.records == 5


def digest(path: Path) -> tuple:
    return hashlib.sha256(path.read_bytes()).hexdigest(), os.stat(path).st_mtime_ns


def test_the_comparison_leaves_the_source_untouched_whatever_its_name(tmp_path, counts):
    """The source is ATTACHed through a read-only URI built from its quoted path: a file name
    holding URI syntax stays a file name (it cannot turn the URI writable)."""
    store, overlay = tmp_path / "bot.db?mode=rwc&cache=shared", tmp_path / "overlay.db"
    make_store(store, 30)
    cfg = config_for(store)
    run(store, overlay, cfg)
    before, listing = digest(store), sorted(os.listdir(tmp_path))
    _, stats = run(store, overlay, cfg)
    assert stats.records == 30 and counts.records == 0 and counts.read == 1
    assert digest(store) == before and sorted(os.listdir(tmp_path)) == listing


def test_a_commit_to_the_overlay_between_comparison_and_sync_falls_back(tmp_path, counts, monkeypatch):
    """The comparison runs before the sync's transaction; another connection's commit in
    between (data_version moves) voids it, and the sync compares Record by Record."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 40)
    cfg = config_for(store)
    run(store, overlay, cfg)
    real = CompareRepo.compare_source

    def with_a_commit(self, sid, spec, pause=None):
        found = real(self, sid, spec, pause)
        source_sql(overlay, "UPDATE facts SET status = 'forgotten' WHERE ref = 'bot:memories:3'")
        return found

    monkeypatch.setattr(CompareRepo, "compare_source", with_a_commit)
    count_writes(overlay)
    _, stats = run(store, overlay, cfg)
    with OverlayStore(overlay) as ov:
        forgotten = ov.fact_row("bot:memories:3")
    assert counts.read == 2 and stats.records == 40
    assert writes(overlay) == [(forgotten["id"], "update")]      # the other connection's, no more
    assert forgotten["status"] == "forgotten"


@pytest.mark.parametrize("table", ["rowid", "text key"])
def test_the_whole_walk_decides_only_an_unchanged_store(tmp_path, counts, monkeypatch, table):
    """The walk over the facts (compare.py _whole_unchanged) answers only "all unchanged";
    one changed, new or deleted row sends the sync through the row walk, which finds it."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    conn = sqlite3.connect(store)
    if table == "rowid":
        conn.execute("CREATE TABLE memories (user_id TEXT, fact TEXT, created_at TEXT)")
        conn.executemany("INSERT INTO memories VALUES (?, ?, ?)", [(f"u{i % 3}", f"fact {i}", T0) for i in range(30)])
        mapping = {"text": "fact", "subject": "user_id", "created_at": "created_at"}
    else:
        conn.execute("CREATE TABLE memories (k TEXT PRIMARY KEY, fact TEXT)")
        conn.executemany("INSERT INTO memories VALUES (?, ?)", [(f"key-{i}", f"fact {i}") for i in range(30)])
        mapping = {"id": "k", "text": "fact"}
    conn.commit()
    conn.close()
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(store), "table": "memories",
                                     **mapping}]})
    found = []
    real = CompareRepo.compare_source
    monkeypatch.setattr(CompareRepo, "compare_source",
                        lambda self, *a, **k: found.append(real(self, *a, **k)) or found[-1])
    run(store, overlay, cfg)
    count_writes(overlay)
    _, stats = run(store, overlay, cfg)
    assert found[-1].whole and found[-1].rows == 30 and writes(overlay) == [] and counts.records == 0
    source_sql(store, "DELETE FROM memories WHERE rowid = 5")
    _, stats = run(store, overlay, cfg)
    assert not found[-1].whole and stats.deleted == 1 and len(writes(overlay)) == 1
    source_sql(store, "INSERT INTO memories (fact) VALUES ('one more')" if table == "rowid"
               else "INSERT INTO memories VALUES ('key-new', 'one more')")
    _, stats = run(store, overlay, cfg)
    assert not found[-1].whole and stats.changed == 1 and counts.records == 1 and len(writes(overlay)) == 1
    _, stats = run(store, overlay, cfg)
    assert found[-1].whole and writes(overlay) == []


def test_records_at_generates_each_chunk_statement_once(tmp_path, monkeypatch):
    """The rows the comparison hands back are read 500 rowids a statement; the statement's SQL
    is made once per chunk size (sqlglot, ~2 ms a statement), not once per chunk, and every
    row comes back once, in rowid order."""
    from sqlglot import exp

    from memwatch_overlay.connectors import sqlite as sqlite_connector
    from memwatch_overlay.connectors.registry import make_connector

    store = tmp_path / "bot.db"
    make_store(store, 1050)
    monkeypatch.setattr(sqlite_connector, "RECORDS_AT_CHUNK", 100)
    made = []
    real = exp.Select.sql
    monkeypatch.setattr(exp.Select, "sql", lambda self, *a, **k: made.append(s := real(self, *a, **k)) or s)
    connector = make_connector(config_for(store).sources[0])
    wanted = list(range(1050, 0, -1))            # unsorted on purpose
    with connector:
        made.clear()
        texts = [r.text for r in connector.records_at(wanted)]
    assert texts == [f"fact number {i}" for i in range(1, 1051)]
    in_lists = [s for s in made if " IN (" in s]
    assert len(in_lists) == 2                     # the 100-rowid chunks' statement and the last 50's
    assert connector.rows_read == 0               # the comparison counted these rows
