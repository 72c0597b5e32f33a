"""Schema v9 (lean_indexes): `facts_gc`, `facts_block` and `facts_next_change` hold only what their readers
look up (overlay/store/migrations/v09_lean_indexes.py).

A v7 overlay (the real file of tests/fixtures/overlay-v7, and the same state in Postgres)
keeps every row of every table through the migration; the readers of those indexes still
find their rows through them; and a first audit's index build after the load skips the
facts an index no longer holds.
"""
from __future__ import annotations

import io
import shutil
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.overlay.store import schema as schema_module
from memwatch_overlay.overlay.store.backup import export_overlay, import_overlay
from memwatch_overlay.overlay.store.database import SCHEMA_VERSION, OverlayStore
from memwatch_overlay.overlay.store.migrations import MIGRATIONS_BY_VERSION

FIXTURE = Path(__file__).parent / "fixtures" / "overlay-v7"
TABLES = ("sources", "facts", "contradictions", "runs", "actions", "fact_vectors", "meta", "judge_verdicts")
NOT_ACTIVE = ("contradicted", "deleted", "forgotten")
# the version this migration takes an overlay to (its number may change when branches merge)
LEAN = next(v for v, m in MIGRATIONS_BY_VERSION.items() if m.name.endswith("_lean_indexes"))


def _dump(store: OverlayStore, columns: dict[str, list[str]] | None = None) -> dict[str, list[tuple]]:
    """Every row of TABLES; `columns`: only these columns of each (an older file's, when a
    later migration added some)."""
    out = {}
    for table in TABLES:
        cols = ", ".join(columns[table] if columns else store.table_columns(table))
        out[table] = [tuple(r) for r in store.conn.execute(f"SELECT {cols} FROM {table} ORDER BY 1, 2")]
    return out


def _plan(conn: sqlite3.Connection, sql: str, params=()) -> str:
    return " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def _index_entries(conn: sqlite3.Connection, name: str) -> int:
    """Entries of one index, counted in its b-tree pages (dbstat), not through a query: every
    cell of an index b-tree, interior or leaf, is one entry."""
    return conn.execute("SELECT sum(ncell) FROM dbstat WHERE name = ?", (name,)).fetchone()[0] or 0


@pytest.fixture
def v7_copy(tmp_path) -> Path:
    path = tmp_path / "overlay.db"
    shutil.copy(FIXTURE / "overlay.db", path)
    return path


def test_the_real_v7_file_keeps_every_row_and_gets_the_narrow_indexes(v7_copy):
    before = sqlite3.connect(f"file:{FIXTURE / 'overlay.db'}?mode=ro", uri=True)
    assert before.execute("PRAGMA user_version").fetchone()[0] == 7
    want = {t: [tuple(r) for r in before.execute(f"SELECT * FROM {t} ORDER BY 1, 2")] for t in TABLES}
    v7_columns = {t: [r[1] for r in before.execute(f"PRAGMA table_info({t})")] for t in TABLES}
    statuses = dict(before.execute("SELECT status, count(*) FROM facts GROUP BY status").fetchall())
    nulls = before.execute("SELECT count(*) FROM facts WHERE next_change IS NULL").fetchone()[0]
    before.close()
    assert set(NOT_ACTIVE) <= set(statuses) and nulls > 0
    with OverlayStore(v7_copy) as store:
        assert store.schema_version() == SCHEMA_VERSION >= LEAN > 7
        assert _dump(store, v7_columns) == want
        assert store.integrity() == "ok"
        n = sum(statuses.values())
        conn = store.conn
        assert _index_entries(conn, "facts_gc") == sum(statuses[s] for s in NOT_ACTIVE) < n
        assert _index_entries(conn, "facts_next_change") == n - nulls
        assert _index_entries(conn, "facts_block") == n
        cols = [r[2] for r in conn.execute("PRAGMA index_info(facts_block)")]
        assert cols == ["subject"]


def test_the_readers_of_the_narrowed_indexes_still_search_them(v7_copy):
    with OverlayStore(v7_copy) as store:
        conn = store.conn
        # the contradiction-status pass, gc's prune and the summary's deleted count
        assert "facts_gc" in _plan(conn, "SELECT id FROM facts WHERE status = 'contradicted'")
        assert "facts_gc (status=? AND last_seen<?)" in _plan(
            conn, "DELETE FROM facts WHERE status = 'deleted' AND last_seen < ?", (1.0,))
        assert "facts_gc" in _plan(conn, "UPDATE facts SET status = 'active' WHERE status = 'contradicted'")
        # the scheduled rescore's due range
        assert "facts_next_change (next_change<?)" in _plan(
            conn, "SELECT id FROM facts WHERE next_change <= ? AND +status IN ('active', 'contradicted')", (1.0,))
        # one subject's block, in id order straight from the index (no sort)
        block = _plan(conn, "SELECT * FROM facts WHERE subject IS ? AND source_id IN (1, 2) "
                            "AND status IN ('active', 'contradicted') ORDER BY id", ("u1",))
        assert "facts_block (subject=?)" in block and "TEMP B-TREE" not in block
        # and they find the same rows as a scan that uses no index
        for status in NOT_ACTIVE:
            by_index = conn.execute("SELECT id FROM facts WHERE status = ? ORDER BY id", (status,)).fetchall()
            by_scan = conn.execute("SELECT id FROM facts NOT INDEXED WHERE status = ? ORDER BY id",
                                   (status,)).fetchall()
            assert by_index == by_scan and by_index
        due = "SELECT id FROM facts {} WHERE next_change <= ? ORDER BY id"
        assert conn.execute(due.format(""), (4e9,)).fetchall() == \
            conn.execute(due.format("NOT INDEXED"), (4e9,)).fetchall()


def test_a_first_audit_builds_the_narrow_indexes_after_its_load(tmp_path):
    """The first sync drops facts_block/facts_next_change and builds them again from
    sqlite_master's statements, and keeps facts_gc and facts_changed (cheap to keep: no
    entry, or one appended per fact): each index keeps its condition (an all-active load
    leaves facts_gc empty; expired facts stay out of facts_next_change)."""
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    from memwatch_overlay.rules.config import Config, SourceConfig
    store_path = tmp_path / "agent.db"
    src = sqlite3.connect(store_path)
    src.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                "fact_value TEXT, created_at TEXT)")
    # half of them 3,000 days old: expired (the general half-life is 365 days)
    src.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                    [(f"u{i % 50}", "city", f"Lives in City {i}",
                      "2018-09-01 00:00:00" if i % 2 else "2026-11-01 00:00:00") for i in range(2000)])
    src.commit()
    src.close()
    source = SourceConfig(name="bot", connector="sqlite", path=str(store_path), table="agent_facts", id=["id"],
                          text="fact_value", key="fact_key", subject="user_id", created_at="created_at")
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        SyncEngine(overlay, Config(sources=[source])).sync(source, full=True, as_of=1796000000.0)
        conn = overlay.conn
        labels = dict(conn.execute("SELECT label, count(*) FROM facts GROUP BY label").fetchall())
        assert labels.get("expired") == 1000 and sum(labels.values()) == 2000
        sql = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts'"))
        assert "WHERE status = 'contradicted'" in sql["facts_gc"]
        assert "WHERE next_change IS NOT NULL" in sql["facts_next_change"]
        assert _index_entries(conn, "facts_gc") == 0
        assert _index_entries(conn, "facts_next_change") == 1000
        assert _index_entries(conn, "facts_block") == 2000
        assert _index_entries(conn, "facts_changed") == 2000 and _index_entries(conn, "facts_ref") == 2000
        assert overlay.integrity() == "ok"


@pytest.mark.postgres
def test_a_postgres_overlay_of_the_previous_version_keeps_every_row_and_gets_the_narrow_indexes(
        pg_database, v7_copy, monkeypatch):
    with OverlayStore(v7_copy) as lite:       # the fixture's state, written into Postgres a version before
        lines = io.StringIO()
        export_overlay(lite, lines)
        action_cols = lite.table_columns("actions")     # (an export leaves the write-back log out)
        actions = [tuple(r) for r in lite.conn.execute(f"SELECT {', '.join(action_cols)} FROM actions")]
    dsn = pg_database("memwatch_v8")
    monkeypatch.setattr(schema_module, "SCHEMA_VERSION", LEAN - 1)
    with OverlayStore(dsn) as pg:
        assert pg.schema_version() == LEAN - 1
        import_overlay(pg, io.StringIO(lines.getvalue()).readlines())
        with pg.transaction():
            pg.conn.executemany(f"INSERT INTO actions ({', '.join(action_cols)}) "
                                f"VALUES ({', '.join('?' * len(action_cols))})", actions)
        before = _dump(pg)
        columns = {t: pg.table_columns(t) for t in TABLES}     # (later migrations may add some)
        gc_before = pg.conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'facts_gc'").fetchone()[0]
    assert "WHERE" not in gc_before
    monkeypatch.undo()
    with OverlayStore(dsn) as pg:
        assert pg.schema_version() == SCHEMA_VERSION
        assert _dump(pg, columns) == before and before["facts"] and before["actions"] and before["contradictions"]
        defs = dict(pg.conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'facts'"))
        assert "WHERE" in defs["facts_gc"] and "'deleted'" in defs["facts_gc"]
        assert "(subject)" in defs["facts_block"] and "category" not in defs["facts_block"]
        assert "next_change IS NOT NULL" in defs["facts_next_change"]
        # Postgres' planner proves the readers' conditions imply each index's (no seq scan allowed)
        pg.conn.execute("SET enable_seqscan = off")
        for sql, index in (("SELECT id FROM facts WHERE status = 'deleted' AND last_seen < 1e12", "facts_gc"),
                           ("SELECT id FROM facts WHERE status = 'contradicted'", "facts_gc"),
                           ("SELECT id FROM facts WHERE next_change <= 1e12", "facts_next_change")):
            plan = "\n".join(r[0] for r in pg.conn.execute("EXPLAIN " + sql))
            assert index in plan, plan


def test_index_builds_after_a_load_sort_with_helper_threads_and_put_the_setting_back(tmp_path):
    """create_indexes() raises `PRAGMA threads` to SORT_THREADS around the CREATE INDEX
    statements a bulk load's drop returned, and leaves the connection's setting as it was."""
    from memwatch_overlay.overlay.engine.sync import SyncEngine
    from memwatch_overlay.overlay.store.facts import SORT_THREADS
    from memwatch_overlay.rules.config import Config, SourceConfig
    store_path = tmp_path / "agent.db"
    src = sqlite3.connect(store_path)
    src.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_value TEXT)")
    src.executemany("INSERT INTO agent_facts (user_id, fact_value) VALUES (?, ?)",
                    [(f"u{i % 40}", f"Lives in City {i}") for i in range(2000)])
    src.commit()
    src.close()
    source = SourceConfig(name="bot", connector="sqlite", path=str(store_path), table="agent_facts", id=["id"],
                          text="fact_value", subject="user_id")
    with OverlayStore(tmp_path / "overlay.db") as overlay:
        before = overlay.conn.execute("PRAGMA threads").fetchone()[0]
        seen: list[str] = []
        overlay.conn.set_trace_callback(seen.append)
        SyncEngine(overlay, Config(sources=[source])).sync(source, full=True, as_of=1796000000.0)
        overlay.conn.set_trace_callback(None)
        builds = [i for i, sql in enumerate(seen) if sql.lstrip().upper().startswith("CREATE INDEX")]
        raised = [i for i, sql in enumerate(seen) if sql == f"PRAGMA threads = {SORT_THREADS}"]
        restored = [i for i, sql in enumerate(seen) if sql == f"PRAGMA threads = {before}"]
        assert builds and raised and restored, seen[-20:]
        assert raised[0] < builds[0] and builds[-1] < restored[-1]
        assert overlay.conn.execute("PRAGMA threads").fetchone()[0] == before
        assert _index_entries(overlay.conn, "facts_block") == 2000


def test_a_setting_changed_for_a_block_is_put_back_when_the_block_fails(tmp_path):
    """sqlhelpers.pragma_for (create_indexes' sort threads, a walk's page cache): the value
    holds inside the block and the connection's own comes back, also after an error."""
    import sqlite3

    from memwatch_overlay.overlay.store.sqlhelpers import pragma_for
    conn = sqlite3.connect(tmp_path / "x.db")
    before = conn.execute("PRAGMA cache_size").fetchone()[0]
    with pytest.raises(ZeroDivisionError):
        with pragma_for(conn, "cache_size", -4096):
            assert conn.execute("PRAGMA cache_size").fetchone()[0] == -4096
            1 / 0
    assert conn.execute("PRAGMA cache_size").fetchone()[0] == before != -4096
    conn.close()
