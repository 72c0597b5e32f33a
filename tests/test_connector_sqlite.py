"""SQLite connector: read-only access, mapping, primary keys, cursors, keys/fetch, bad input.

Beside test_connector_json.py and test_connector_postgres.py; the sync-level behaviour of
these cursors (daemon ticks, deletions) is in test_sync_incremental.py.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import threading

import pytest

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.sqlite import SqliteConnector, open_readonly
from memwatch_overlay.core.errors import ConnectorError, ReadOnlyViolation
from memwatch_overlay.rules.config import SourceConfig

ROWS = [
    (1, "u1", "employer", "Works at Google", "2025-01-01 10:00:00", "2025-01-01 10:00:00"),
    (2, "u1", "city", "Lives in Jakarta", "2025-02-01 10:00:00", "2025-03-01 10:00:00"),
    (3, "u2", "employer", "Works at Stripe", "2025-04-01 10:00:00", "2025-04-01 10:00:00"),
]


def make_store(path, wal=True, rows=ROWS):
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, fact_value TEXT,"
                 " created_at TEXT, updated_at TEXT)")
    conn.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def source(path, **kw):
    base = dict(name="bot", connector="sqlite", path=str(path), table="facts", id=["id"], text="fact_value",
                key="fact_key", subject="user_id", created_at="created_at", updated_at="updated_at")
    base.update(kw)
    return SourceConfig(**base)


def read(src, cursor=None):
    with make_connector(src) as conn:
        return list(conn.read(cursor)), conn.cursor


def digest(path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), os.stat(path).st_mtime_ns


# -- read-only --------------------------------------------------------------------------

def test_reading_leaves_the_file_and_its_mtime_unchanged(tmp_path):
    db = make_store(tmp_path / "bot.db", wal=False)
    before = digest(db)
    recs, _ = read(source(db))
    assert len(recs) == 3
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.db"]   # no journal, no -wal left behind


def test_the_connection_refuses_writes(tmp_path):
    db = make_store(tmp_path / "bot.db")
    conn = open_readonly(db)
    try:
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM facts")
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("CREATE TABLE memwatch_state (x)")
    finally:
        conn.close()
    assert sqlite3.connect(db).execute("SELECT count(*) FROM facts").fetchone()[0] == 3


@pytest.mark.parametrize("sql", [
    "DELETE FROM facts",
    "SELECT 1; DROP TABLE facts",
    "WITH x AS (DELETE FROM facts RETURNING *) SELECT * FROM x",
])
def test_a_query_that_is_not_one_read_only_select_is_refused(tmp_path, sql):
    db = make_store(tmp_path / "bot.db")
    with pytest.raises((ReadOnlyViolation, ConnectorError)):
        read(source(db, table=None, query=sql))
    assert sqlite3.connect(db).execute("SELECT count(*) FROM facts").fetchone()[0] == 3


# -- mapping and keys -------------------------------------------------------------------

def test_columns_map_to_record_fields(tmp_path):
    db = make_store(tmp_path / "bot.db")
    recs, _ = read(source(db))
    first = recs[0]
    assert (first.pk, first.subject, first.key, first.text) == ({"id": "1"}, "u1", "employer", "Works at Google")
    assert first.created_at < recs[1].updated_at
    assert recs[1].updated_at > recs[1].created_at
    assert [r.ref for r in recs] == ["bot:facts:1", "bot:facts:2", "bot:facts:3"]


def test_a_composite_primary_key_keeps_every_part_as_text(tmp_path):
    db = tmp_path / "kv.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE kv (ns TEXT, k INTEGER, v TEXT, ts TEXT, PRIMARY KEY (ns, k))")
    conn.executemany("INSERT INTO kv VALUES (?, ?, ?, ?)",
                     [("u1", 1, "likes tea", "2025-01-01"), ("u2", 1, "likes coffee", "2025-01-02")])
    conn.commit()
    conn.close()
    recs, _ = read(SourceConfig(name="kv", connector="sqlite", path=str(db), table="kv", id=["ns", "k"],
                                text="v", subject="ns", created_at="ts"))
    assert [r.pk for r in recs] == [{"ns": "u1", "k": "1"}, {"ns": "u2", "k": "1"}]


def test_where_filters_rows(tmp_path):
    db = make_store(tmp_path / "bot.db")
    recs, _ = read(source(db, where="user_id = 'u2'"))
    assert [r.text for r in recs] == ["Works at Stripe"]


def test_keys_and_fetch_agree_with_read(tmp_path):
    db = make_store(tmp_path / "bot.db")
    with make_connector(source(db)) as conn:
        keys = list(conn.keys())
        assert keys == [{"id": "1"}, {"id": "2"}, {"id": "3"}]
        assert conn.rows_read == 0 and conn.keys_read == 3      # the key pass reads no texts
        fetched = list(conn.fetch([{"id": "3"}, {"id": "1"}]))
    assert [r.text for r in fetched] == ["Works at Stripe", "Works at Google"]


# -- cursors ----------------------------------------------------------------------------

def test_an_incremental_read_returns_only_new_and_updated_rows(tmp_path):
    db = make_store(tmp_path / "bot.db")
    _, cursor = read(source(db))
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO facts VALUES (4, 'u1', 'pet', 'Has a cat', '2025-05-01 10:00:00', '2025-05-01 10:00:00')")
    conn.execute("UPDATE facts SET fact_value = 'Lives in Bandung', updated_at = '2025-06-01 10:00:00' WHERE id = 2")
    conn.commit()
    conn.close()
    recs, cursor2 = read(source(db), cursor)
    assert sorted(r.text for r in recs) == ["Has a cat", "Lives in Bandung"]
    again, _ = read(source(db), cursor2)
    assert again == []


def test_has_changes_follows_other_connections_commits(tmp_path):
    db = make_store(tmp_path / "bot.db")
    with make_connector(source(db)) as conn:
        assert conn.has_changes() is True          # first look
        assert conn.has_changes() is False
        w = sqlite3.connect(db)
        w.execute("UPDATE facts SET fact_value = 'Works at Meta' WHERE id = 1")
        w.commit()
        w.close()
        assert conn.has_changes() is True


def test_a_read_during_a_writers_open_transaction_sees_the_last_commit(tmp_path):
    """WAL: a bot mid-transaction does not block us, and we see only what it committed."""
    db = make_store(tmp_path / "bot.db")
    writer = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO facts VALUES (9, 'u9', 'k', 'uncommitted', '2025-07-01', '2025-07-01')")
    result = {}
    t = threading.Thread(target=lambda: result.update(recs=read(source(db))[0]))
    t.start()
    t.join(timeout=30)
    writer.execute("ROLLBACK")
    writer.close()
    assert not t.is_alive()
    assert [r.text for r in result["recs"]] == [r[3] for r in ROWS]


# -- bad input --------------------------------------------------------------------------

def test_a_missing_table_names_the_tables_there_are(tmp_path):
    db = make_store(tmp_path / "bot.db")
    with pytest.raises(ConnectorError) as e:
        read(source(db, table="memories"))
    assert "memories" in str(e.value) and "facts" in str(e.value)


def test_a_missing_column_is_named(tmp_path):
    db = make_store(tmp_path / "bot.db")
    with pytest.raises(ConnectorError) as e:
        read(source(db, text="body"))
    assert "body" in str(e.value)


def test_a_file_that_is_not_sqlite_is_a_connector_error(tmp_path):
    bad = tmp_path / "bot.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConnectorError):
        read(source(bad))


def test_a_missing_file_is_a_connector_error_and_is_not_created(tmp_path):
    missing = tmp_path / "nope.db"
    with pytest.raises(ConnectorError):
        read(source(missing))
    assert not missing.exists()


def test_connector_kind(tmp_path):
    assert isinstance(make_connector(source(make_store(tmp_path / "bot.db"))), SqliteConnector)
