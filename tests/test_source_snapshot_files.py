"""Source snapshots beyond the plain SQLite table: a preset's store (LangGraph, mem0 with its
qdrant collections, CrewAI, memlife, OpenAI Agents sessions) or a JSON/JSONL file whose
files are byte for byte what the last full sync read, into facts nothing changed since, is
answered from the recorded snapshot (overlay/engine/source_snapshot.py): no Record made,
nothing written, the same overlay, stats, warnings and report as reading it gives, and the
cursor that read left (an incremental read after it reads only what is new). A change to any
file the read reads (the qdrant collection beside mem0's history.db too) voids it; a LanceDB
table's snapshot is the manifest of the version read, which a write through lancedb replaces.

Records are counted where the sync takes them (SyncEngine._ingest), writes by triggers on
`facts`.
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

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.audit import audit, zero_config_sources
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

from fixture_stores import AGENT_STORES, FIXTURES
from test_source_snapshot import stats_of
from test_sync_unchanged import count_writes, facts, writes

AS_OF = 1_796_000_000.0     # 2026-11-29, the fixtures' reference time


@pytest.fixture
def records(monkeypatch):
    """Records the sync took from the connector, per sync (a list of counts)."""
    taken: list[int] = []
    real = sync_module.SyncEngine._ingest

    def _ingest(self, records, *args, **kwargs):
        seen = list(records)
        taken.append(len(seen))
        return real(self, iter(seen), *args, **kwargs)

    monkeypatch.setattr(sync_module.SyncEngine, "_ingest", _ingest)
    return taken


def run(target: Path, overlay: Path, cfg=None, as_of: float = AS_OF):
    """A zero-config audit (cfg None) of `target` into `overlay`: summary and the one source's stats."""
    result = audit(str(target), cfg, as_of=as_of, overlay_path=str(overlay))
    try:
        return dict(result.summary), result.stats[0]
    finally:
        result.close()


def snapshots(overlay: Path) -> list[dict]:
    with OverlayStore(str(overlay)) as ov:
        keys = [r[0] for r in ov.conn.execute("SELECT key FROM meta WHERE key LIKE 'snapshot:%'")]
        return [ov.get_meta(k) for k in keys]


def source_state(overlay: Path) -> tuple:
    """The source's row: syncs, cursor (without its clock), rows read, live facts counted."""
    conn = sqlite3.connect(overlay)
    try:
        count, text, rows_read, live = conn.execute(
            "SELECT sync_count, cursor_json, rows_read_last_sync, rows_seen FROM sources").fetchone()
    finally:
        conn.close()
    cursor = json.loads(text or "{}")
    cursor.pop("scanned_at", None)          # the clock at the read
    return count, cursor, rows_read, live


STORES = [(name, store) for name, fx in sorted(FIXTURES.items()) for store in fx.stores]


@pytest.mark.parametrize("name,store", STORES, ids=[f"{n}:{s}" for n, s in STORES])
def test_a_fixture_store_reaudit_is_answered_with_what_reading_it_gives(tmp_path, records, monkeypatch,
                                                                        name, store):
    """Every fixture store, zero-config, detection on (its planted contradictions stored)."""
    folder = tmp_path / name
    shutil.copytree(FIXTURES[name].folder, folder)
    target, overlay, compared = folder / store, tmp_path / "overlay.db", tmp_path / "read-again.db"
    first, first_stats = run(target, overlay)
    assert records[0] > 0
    (snap,) = snapshots(overlay)
    assert snap["records"] == first_stats.records and "cursor" in snap
    shutil.copy(overlay, compared)
    count_writes(overlay)
    summary, stats = run(target, overlay)
    assert records[1] == 0                       # no Record: nothing was read
    assert writes(overlay) == []
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    count_writes(compared)
    summary2, stats2 = run(target, compared)
    assert records[2] == records[0]              # read again, every record
    assert writes(compared) == []                # ... and nothing written (contradicted facts neither)
    assert summary == summary2 == first
    # (a read stores again the replacements a store declares itself, mem0's UPDATE events,
    # memlife's superseded_by: the same edges, none new; the answer stores none)
    assert stats.contradictions == stats2.contradictions == 0
    assert stats_of(stats) == stats_of(stats2) and stats.warnings == stats2.warnings
    assert facts(overlay) == facts(compared)
    assert source_state(overlay) == source_state(compared)


def test_a_changed_qdrant_collection_beside_mem0_history_voids_it(tmp_path, records):
    """mem0's facts take their user from the qdrant payloads: the collection's file is part of
    the snapshot, so a payload changed with history.db untouched is read."""
    folder = tmp_path / "mem0"
    shutil.copytree(FIXTURES["mem0"].folder, folder)
    target, overlay = folder / "history.db", tmp_path / "overlay.db"
    run(target, overlay)
    run(target, overlay)
    assert records[1] == 0
    (storage,) = folder.glob("qdrant/collection/*/storage.sqlite")
    conn = sqlite3.connect(storage)
    conn.execute("CREATE TABLE touched (x)")         # any commit to the collection's file
    conn.commit()
    conn.close()
    run(target, overlay)
    assert records[2] == records[0]


def jsonl(path: Path, n: int, extra: str = "") -> None:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"m{i}", "user_id": f"u{i % 3}", "memory": f"Likes dish number {i}",
                                "created_at": "2026-06-01T10:00:00"}) + "\n")
        f.write(extra)


def json_config(target: Path, **top):
    return parse_config({"detector": {"enabled": False}, **top, "sources": [{
        "name": "bot", "connector": "json", "path": str(target), "id": "id", "text": "memory",
        "subject": "user_id", "created_at": "created_at"}]})


def test_a_jsonl_file_appended_to_is_read_and_the_cursor_serves_an_incremental_read(tmp_path, records):
    target, overlay = tmp_path / "memories.jsonl", tmp_path / "overlay.db"
    jsonl(target, 40)
    cfg = json_config(target)
    run(target, overlay, cfg)
    _, stats = run(target, overlay, cfg)
    assert records == [40, 0] and stats.records == 40
    # the cursor the answered read left is the read's: an incremental read (the daemon's)
    # after an append reads the new line only
    with open(target, "a") as f:
        f.write(json.dumps({"id": "m40", "user_id": "u1", "memory": "Moved to Lisbon",
                            "created_at": "2026-07-01T10:00:00"}) + "\n")
    with OverlayStore(str(overlay)) as store:
        stats = sync_module.SyncEngine(store, cfg).sync(cfg.sources[0], as_of=AS_OF, full=False)
    assert records[-1] == 1 and stats.rows_read == 1
    # a full re-audit of the grown file reads it (the digest moved) and records again
    _, stats = run(target, overlay, cfg)
    assert records[-1] == 41 and stats.records == 41
    run(target, overlay, cfg)
    assert records[-1] == 0


def test_the_read_s_warnings_are_given_again(tmp_path, records):
    target, overlay = tmp_path / "memories.jsonl", tmp_path / "overlay.db"
    jsonl(target, 10, extra='{"id": "broken", "memory": \n' + json.dumps({"id": "m10", "memory": "ok"}) + "\n")
    _, first = run(target, overlay)
    assert first.warnings and any(":11:" in w for w in first.warnings)
    _, again = run(target, overlay)
    assert records[1] == 0 and again.warnings == first.warnings


def test_another_configuration_reads_the_file_again(tmp_path, records):
    target, overlay = tmp_path / "memories.jsonl", tmp_path / "overlay.db"
    jsonl(target, 20)
    run(target, overlay, json_config(target))
    run(target, overlay, json_config(target, scoring={"fresh": 0.85}))
    run(target, overlay, json_config(target, scoring={"fresh": 0.85}))
    assert records == [20, 20, 0]


@pytest.mark.integrations
def test_a_lancedb_table_is_answered_until_a_write_makes_a_new_version(tmp_path, records, monkeypatch):
    """CrewAI 1.x's LanceDB table: the snapshot is the manifest of the version read (Lance
    never rewrites one); a delete through lancedb makes a new version, which is read."""
    lancedb = pytest.importorskip("lancedb", reason="pip install 'memwatch-overlay[lancedb]'")

    folder = tmp_path / "crewai-lancedb"
    shutil.copytree(AGENT_STORES / "crewai-lancedb", folder)
    overlay, compared = tmp_path / "overlay.db", tmp_path / "read-again.db"
    first, first_stats = run(folder, overlay)
    shutil.copy(overlay, compared)
    summary, stats = run(folder, overlay)
    assert records[0] == first_stats.records > 0 and records[1] == 0 and summary == first
    table = lancedb.connect(folder).open_table("memories")
    (gone,) = table.search().select(["id"]).limit(1).to_list()
    table.delete(f"id = '{gone['id']}'")
    _, stats = run(folder, overlay)
    assert records[2] == first_stats.records - 1 and stats.deleted == 1
    run(folder, overlay)
    assert records[3] == 0
    monkeypatch.setattr(sync_module, "SNAPSHOTS", False)
    run(folder, compared)
    run(folder, compared)
    assert records[5] == first_stats.records - 1          # read every time without snapshots
    assert facts(overlay) == facts(compared)
    # the daemon's connector, kept open: after an answered full sync it sees no change
    monkeypatch.setattr(sync_module, "SNAPSHOTS", True)
    with OverlayStore(str(overlay)) as store:
        (source,) = zero_config_sources(str(folder), store)
        connector = make_connector(source)
        connector.open()
        try:
            sync_module.SyncEngine(store, parse_config({})).sync(source, as_of=AS_OF, connector=connector)
            assert records[6] == 0 and not connector.has_changes()
        finally:
            connector.close()


def test_a_file_whose_records_share_a_key_records_no_snapshot(tmp_path, records):
    """Two records, one fact: where they fall in different pages of a read, re-reading
    rewrites it with each in turn (a change each time; the last one read is kept), which an
    answer would not: such a file is read every time."""
    target, overlay = tmp_path / "memories.jsonl", tmp_path / "overlay.db"
    jsonl(target, 5, extra=json.dumps({"id": "m1", "user_id": "u1", "memory": "Likes another dish",
                                       "created_at": "2026-06-01T10:00:00"}) + "\n")
    cfg = json_config(target)
    run(target, overlay, cfg)
    run(target, overlay, cfg)
    assert records == [6, 6] and snapshots(overlay) == []


@pytest.mark.langgraph
def test_a_langgraph_put_after_an_answered_full_sync_is_read_by_the_next_incremental_one(tmp_path, records):
    """As the daemon runs it: one connector kept open, a periodic full sync answered by the
    snapshot, then LangGraph's own put(): the next incremental sync reads that item alone, and
    the next full sync (the files moved) reads everything and records again."""
    from langgraph.store.sqlite import SqliteStore

    target, overlay = tmp_path / "langgraph_store.sqlite", tmp_path / "overlay.db"
    shutil.copy(FIXTURES["langgraph"].folder / "langgraph_store.sqlite", target)
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "preset": "langgraph",
                                     "path": str(target)}]})
    source = cfg.sources[0]
    connector = make_connector(source)
    connector.open()
    try:
        with OverlayStore(str(overlay)) as store:
            engine = sync_module.SyncEngine(store, cfg)
            first = engine.sync(source, as_of=AS_OF, connector=connector)
            again = engine.sync(source, as_of=AS_OF, connector=connector)
            assert records[1] == 0 and again.records == first.records > 0
            conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
            SqliteStore(conn).put(("memories", "u_new"), "moved", {"memory": "Moved to Lisbon last week"})
            conn.close()
            step = engine.sync(source, as_of=AS_OF, full=False, connector=connector)
            assert records[2] == 1 and step.changed == 1
            full = engine.sync(source, as_of=AS_OF, connector=connector)
            assert records[3] == first.records + 1 and full.changed == 0
            assert engine.sync(source, as_of=AS_OF, connector=connector).records == first.records + 1
            assert records[4] == 0
            texts = [r[0] for r in store.conn.execute("SELECT text FROM facts WHERE text LIKE 'Moved to Lisbon%'")]
            assert texts == ["Moved to Lisbon last week"]
    finally:
        connector.close()


def test_a_fifo_beside_the_store_is_not_opened(tmp_path):
    """A FIFO named like the store's -wal/-journal would block a hash forever: the console
    script's audits end, unhashed (no snapshot), and give the store's facts."""
    target, overlay = tmp_path / "memories.jsonl", tmp_path / "overlay.db"
    jsonl(target, 12)
    os.mkfifo(f"{target}-journal")
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "memwatch_overlay", "audit", str(target), "--overlay",
                               str(overlay), "--format", "json"], capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 1), done.stderr
        assert len(json.loads(done.stdout)["facts"]) == 12
    assert snapshots(overlay) == []


@pytest.mark.parametrize("edit", [{"cursor": "a text"}, {"cursor": None}, {"warnings": "a text"},
                                  {"facts": "a text"}, {"rows": "7"}])
def test_a_snapshot_edited_by_hand_is_not_trusted(tmp_path, records, edit):
    """The recorded snapshot lives in the overlay's `meta`: a value of the wrong shape there
    sends the sync back to reading (no traceback, the same facts)."""
    target, overlay = tmp_path / "memories.jsonl", tmp_path / "overlay.db"
    jsonl(target, 15)
    cfg = json_config(target)
    first, _ = run(target, overlay, cfg)
    with OverlayStore(str(overlay)) as ov:
        (key,) = [r[0] for r in ov.conn.execute("SELECT key FROM meta WHERE key LIKE 'snapshot:%'")]
        with ov.transaction():
            ov.set_meta(key, {**ov.get_meta(key), **edit})
    again, stats = run(target, overlay, cfg)
    assert records == [15, 15] and again == first and stats.records == 15


@pytest.mark.postgres
def test_a_postgres_overlay_answers_a_jsonl_file_too(tmp_path, records, pg_database):
    """The snapshot lives in the overlay's `meta`: into a Postgres overlay an unchanged JSONL
    file is answered as into a SQLite one, with the same report; an append is read."""
    target = tmp_path / "memories.jsonl"
    jsonl(target, 30)
    cfg = json_config(target)
    overlay, lite = pg_database("mw_snapjson"), tmp_path / "overlay.db"
    first, _ = run(target, overlay, cfg)
    again, stats = run(target, overlay, cfg)
    assert records == [30, 0] and again == first and stats.records == 30
    run(target, lite, cfg)
    assert facts(overlay) == facts(lite)
    with open(target, "a") as f:
        f.write(json.dumps({"id": "m30", "user_id": "u0", "memory": "Moved to Porto",
                            "created_at": "2026-07-01T10:00:00"}) + "\n")
    _, stats = run(target, overlay, cfg)
    assert records[-1] == 31 and stats.changed == 1
