"""A full read of a SQLite source whose files are byte for byte what the last full sync read,
into facts nothing changed since, is answered from the recorded snapshot
(overlay/engine/source_snapshot.py): no set comparison, no Record, no write, and the same
overlay, stats and report as the comparison gives. Anything that could make a re-read differ
voids it: a commit to the source (WAL or rollback journal), a change made while a sync reads,
a forgotten fact, a row that makes no fact, another configuration, a migration.

The comparison is counted where it runs (CompareRepo.compare_source), Records where the
connector makes them, writes by triggers on `facts`.
"""
from __future__ import annotations

import dataclasses
import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.overlay.engine import source_snapshot
from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.store.compare import CompareRepo
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

from test_sync_category_cleared import make_store as make_category_store
from test_sync_category_cleared import v9_overlay
from test_sync_set_compare import AS_OF, config_for, counts, make_store, run, source_state  # noqa: F401
from test_sync_unchanged import count_writes, facts, source_sql, writes

KEY = "snapshot:bot"
MAPPING = {"id": "id", "text": "fact", "subject": "user_id", "created_at": "created_at", "access_count": "hits"}


def config(store: Path, **top):
    """config_for(store)'s source with other top-level tables (detection off unless given)."""
    return parse_config({"detector": {"enabled": False}, **top,
                         "sources": [{"name": "bot", "connector": "sqlite", "path": str(store),
                                      "table": "memories", **MAPPING}]})


@pytest.fixture
def compared(monkeypatch):
    """The number of set comparisons run (a list, to be read after the audits)."""
    calls = []
    real = CompareRepo.compare_source

    def compare_source(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CompareRepo, "compare_source", compare_source)
    return calls


def recorded(overlay: Path):
    with OverlayStore(str(overlay)) as ov:
        return ov.get_meta(KEY)


def stats_of(stats) -> dict:
    """A sync's stats but its clock, warnings and `plain_unchanged` (how many rows the Record
    comparison found unchanged without a Record: that comparison's own count, 0 when another
    way decided)."""
    return {k: v for k, v in dataclasses.asdict(stats).items()
            if k not in ("seconds", "warnings", "plain_unchanged")}


def test_an_unchanged_reaudit_is_answered_by_the_snapshot_with_the_comparisons_result(
        tmp_path, counts, compared, monkeypatch):  # noqa: F811
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 2500, updated=True)
    cfg = config_for(store, updated_at="updated_at")
    run(store, overlay, cfg)
    snap = recorded(overlay)
    assert snap is not None and snap["rows"] == snap["records"] == 2500
    shutil.copy(overlay, tmp_path / "compared.db")
    count_writes(overlay)
    summary, stats = run(store, overlay, cfg)
    assert compared == [] and counts.read == 1 and counts.records == 0     # read() ran once: the first audit
    assert writes(overlay) == []
    # the same re-audit done by the set comparison gives the same everything
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    summary2, stats2 = run(store, tmp_path / "compared.db", cfg)
    assert compared == [1]
    assert summary == summary2 and stats_of(stats) == stats_of(stats2)
    assert facts(overlay) == facts(tmp_path / "compared.db")
    assert source_state(overlay) == source_state(tmp_path / "compared.db")


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_commit_to_the_source_voids_it(tmp_path, compared, journal):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    source_sql(store, f"PRAGMA journal_mode = {journal}")
    cfg = config_for(store)
    run(store, overlay, cfg)
    assert recorded(overlay) is not None
    # a change of the same length, committed by a connection that stays open (in WAL mode
    # the change lives in the -wal file only: the last connection's close would checkpoint it)
    writer = sqlite3.connect(store)
    writer.execute("UPDATE memories SET fact = 'fact number X' WHERE id = 1")
    writer.commit()
    try:
        _, stats = run(store, overlay, cfg)
        assert compared == [1] and stats.changed == 1
        texts = {f["ref"]: f["text"] for f in facts(overlay)}
        assert texts["bot:memories:1"] == "fact number X"
        # recorded again from that re-audit: the next one is answered by it
        run(store, overlay, cfg)
        assert compared == [1]
    finally:
        writer.close()


def test_a_change_while_a_sync_reads_records_no_snapshot(tmp_path, compared, monkeypatch):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    cfg = config_for(store)
    real = SqliteConnector.read

    def read(self, cursor=None):
        for i, rec in enumerate(real(self, cursor)):
            if i == 10:      # another writer commits while the rows are read
                source_sql(store, "UPDATE memories SET fact = 'changed behind the read' WHERE id = 5")
            yield rec

    monkeypatch.setattr(SqliteConnector, "read", read)
    run(store, overlay, cfg)
    assert recorded(overlay) is None
    monkeypatch.setattr(SqliteConnector, "read", real)
    run(store, overlay, cfg)                 # compared: the change read behind the first read is found
    assert compared == [1]
    assert {f["ref"]: f["text"] for f in facts(overlay)}["bot:memories:5"] == "changed behind the read"


def test_facts_changed_in_the_overlay_void_it(tmp_path, compared):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    cfg = config_for(store)
    run(store, overlay, cfg)
    with OverlayStore(str(overlay)) as ov:
        with ov.transaction():
            assert ov.set_status(["bot:memories:7"], "forgotten") == 1
    run(store, overlay, cfg)
    assert compared == [1]
    assert recorded(overlay) is None          # a forgotten fact: none recorded
    with OverlayStore(str(overlay)) as ov:
        with ov.transaction():
            ov.set_status(["bot:memories:7"], "active")
    run(store, overlay, cfg)
    assert compared == [1, 1] and recorded(overlay) is not None
    run(store, overlay, cfg)
    assert compared == [1, 1]


def test_another_configuration_reads_every_row_again(tmp_path, counts, compared):  # noqa: F811
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    run(store, overlay, config_for(store))
    first = recorded(overlay)["mapping"]
    other = config(store, scoring={"fresh": 0.85})
    run(store, overlay, other)        # another fingerprint: the Record path reads every row
    assert counts.read == 2 and recorded(overlay)["mapping"] != first
    run(store, overlay, other)        # recorded by that read: answered
    assert counts.read == 2 and compared == []


def test_a_row_that_makes_no_fact_records_no_snapshot(tmp_path, compared):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    source_sql(store, "UPDATE memories SET fact = '   ' WHERE id = 3")
    cfg = config_for(store)
    run(store, overlay, cfg)
    assert recorded(overlay) is None
    run(store, overlay, cfg)
    assert compared == [1]


def test_a_file_larger_than_its_rows_warrant_is_not_hashed(tmp_path, compared, monkeypatch):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    monkeypatch.setattr(source_snapshot, "BYTES_PER_ROW", 1)
    monkeypatch.setattr(source_snapshot, "SLACK", 0)
    hashed = []
    real = source_snapshot.files_digest

    def files_digest(*args):
        hashed.append(real(*args))
        return hashed[-1]

    monkeypatch.setattr(source_snapshot, "files_digest", files_digest)
    cfg = config_for(store)
    run(store, overlay, cfg)
    run(store, overlay, cfg)
    assert recorded(overlay) is None and compared == [1] and hashed == [None, None]   # refused by size


def test_the_source_files_are_only_read(tmp_path):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_store(store, 300)
    source_sql(store, "PRAGMA journal_mode = wal")
    before = hashlib.sha256(store.read_bytes()).hexdigest(), store.stat().st_mtime_ns
    cfg = config_for(store)
    for _ in range(3):
        run(store, overlay, cfg)
    assert recorded(overlay) is not None
    assert (hashlib.sha256(store.read_bytes()).hexdigest(), store.stat().st_mtime_ns) == before


def test_a_migration_forgets_every_snapshot(tmp_path):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    make_category_store(store)
    v9_overlay(store, overlay)               # audited by today's code (a snapshot recorded), then made v9
    conn = sqlite3.connect(overlay)
    assert conn.execute("SELECT count(*) FROM meta WHERE key = ?", (KEY,)).fetchone()[0] == 1
    conn.close()
    assert recorded(overlay) is None         # opening it migrated it to today's schema


def test_detection_on_with_contradictions_gives_what_the_comparison_gives(tmp_path, compared, monkeypatch):
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT, "
                 "hits INTEGER)")
    rows = [("u1", "Works at Google as an engineer", "2025-01-01 10:00:00"),
            ("u1", "Just joined Stripe as a staff engineer", "2026-06-01 10:00:00"),
            ("u2", "Lives in Berlin", "2025-02-01 10:00:00"),
            ("u2", "Moved to Lisbon last month", "2026-07-01 10:00:00")]
    rows += [(f"u{i % 9 + 3}", f"note number {i}", "2026-01-01 00:00:00") for i in range(40)]
    conn.executemany("INSERT INTO memories (user_id, fact, created_at, hits) VALUES (?, ?, ?, 0)", rows)
    conn.commit()
    conn.close()
    cfg = config(store, detector={"enabled": True})
    first, _ = run(store, overlay, cfg)
    assert first["contradicted"] >= 1 and recorded(overlay) is not None
    shutil.copy(overlay, tmp_path / "compared.db")
    summary, stats = run(store, overlay, cfg)
    assert compared == []
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    summary2, stats2 = run(store, tmp_path / "compared.db", cfg)
    assert compared == [1]
    assert summary == summary2 == first and stats_of(stats) == stats_of(stats2)
    assert facts(overlay) == facts(tmp_path / "compared.db")


def test_a_postgres_overlay_is_answered_too(tmp_path, pg_database, monkeypatch):
    """The snapshot lives in the overlay's meta table: a Postgres overlay (no set comparison
    there) skips the read of every row as well, with the Record comparison's result."""
    store = tmp_path / "bot.db"
    make_store(store, 1200, updated=True)
    cfg = config_for(store, updated_at="updated_at")
    snap_on, snap_off = pg_database("mw_snap"), pg_database("mw_snap")
    reads = []
    real = SqliteConnector.read_for_compare

    def read_for_compare(self, cursor=None):
        reads.append(1)
        return real(self, cursor)

    monkeypatch.setattr(SqliteConnector, "read_for_compare", read_for_compare)
    run(store, snap_on, cfg)
    assert recorded(snap_on)["rows"] == 1200
    summary, stats = run(store, snap_on, cfg)
    assert reads == []                           # no row read again
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    run(store, snap_off, cfg)
    summary2, stats2 = run(store, snap_off, cfg)
    assert reads == [1]
    assert summary == summary2 and stats_of(stats) == stats_of(stats2)
    assert facts(snap_on) == facts(snap_off)
    # and a commit to the source is read on Postgres as on SQLite
    monkeypatch.setattr(sync_module, "SNAPSHOTS", True)
    source_sql(store, "UPDATE memories SET fact = 'fact number Y' WHERE id = 2")
    _, stats = run(store, snap_on, cfg)
    assert reads == [1, 1] and stats.changed == 1


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_commit_to_the_overlay_after_the_snapshot_matched_sends_the_sync_back_to_reading(
        tmp_path, request, monkeypatch, backend):
    """Between the snapshot's match (before the transaction) and the sync's transaction another
    connection forgets a fact: inside the transaction the overlay is found changed (SQLite's
    data_version; on Postgres the facts' state) and every row is read as without a snapshot."""
    store = tmp_path / "bot.db"
    make_store(store, 200)
    cfg = config_for(store)
    overlay = str(tmp_path / "overlay.db") if backend == "sqlite" else request.getfixturevalue("pg_database")("mw_snap")
    run(store, overlay, cfg)
    reads = []
    real_read, real_compare = SqliteConnector.read_for_compare, sync_module.SyncEngine._set_compare

    def read_for_compare(self, cursor=None):
        reads.append(1)
        return real_read(self, cursor)

    def set_compare(self, *args):
        fast = real_compare(self, *args)
        assert fast is not None and fast.snapshot
        with OverlayStore(overlay) as other:
            with other.transaction():
                other.set_status(["bot:memories:3"], "forgotten")
        return fast

    monkeypatch.setattr(SqliteConnector, "read_for_compare", read_for_compare)
    if backend == "sqlite":
        monkeypatch.setattr(CompareRepo, "can_compare_in_sql", lambda self: False)   # the Record path, countable
    monkeypatch.setattr(sync_module.SyncEngine, "_set_compare", set_compare)
    run(store, overlay, cfg)
    assert reads == [1]
