"""LangGraph stores: which namespace part is the user, values read as text, and TTLs that
LangGraph refreshes on read (expires_at moves, updated_at does not)."""
from __future__ import annotations

import json
import sqlite3

import pytest

import frameworkstores as fs
import storeplan as plan
from memwatch_overlay.connectors.presets.langgraph import text_from_value
from memwatch_overlay.connectors.presets.namespaces import subject_of, subject_positions
from storegen import run


@pytest.mark.parametrize("namespaces, subjects", [
    # LangGraph's Stores docs: (user_id, "memories"); a TTL context beside it
    (["u_erin.memories", "u_farid.memories", "u_erin.working"], ["u_erin", "u_farid", "u_erin"]),
    (["users.u1.memories", "users.u2.memories"], ["u1", "u2"]),
    # LangMem's default ("memories", user_id)
    (["memories.user-123", "memories.user-456"], ["user-123", "user-456"]),
    # LangChain's long-term memory docs: (user_id, application_context), plain names
    (["erin.travel", "farid.travel", "erin.work"], ["erin", "farid", "erin"]),
    (["project.team_1.alice", "project.team_1.bob"], ["alice", "bob"]),
    # one namespace only: its id-like part, else its first part that is not a known word
    (["u_erin.memories"], ["u_erin"]),
    (["memories.erin"], ["erin"]),
    (["erin", "farid"], ["erin", "farid"]),
])
def test_the_part_that_varies_per_user_is_the_subject(namespaces, subjects):
    positions = subject_positions(namespaces)
    assert [subject_of(ns, positions) for ns in namespaces] == subjects


def test_a_configured_position_wins_and_a_new_depth_is_judged_alone():
    assert subject_of("u_erin.memories", {2: 0}, fixed=1) == "memories"
    assert subject_of("a.b.u_3", {2: 0}) == "u_3"


def test_values_without_a_known_text_field():
    assert text_from_value(b'{"food_preference": "User likes pizza"}') == "User likes pizza"
    assert text_from_value({"kind": "Memory", "content": {"content": "Likes tea"}}) == "Likes tea"
    two = text_from_value({"a": "x", "b": "y"})
    assert json.loads(two) == {"a": "x", "b": "y"}          # no single text: the JSON itself


def _refresh(path, pk) -> str:
    """What LangGraph's get() does with refresh_on_read: expires_at = now + ttl, nothing else."""
    from langgraph.store.sqlite import SqliteStore
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    SqliteStore(conn, ttl={"refresh_on_read": True}).get(tuple(pk["prefix"].split(".")), pk["key"])
    expires, = conn.execute("SELECT expires_at FROM store WHERE prefix = ? AND key = ?",
                            (pk["prefix"], pk["key"])).fetchone()
    conn.close()
    return expires


@pytest.mark.integrations
@pytest.mark.slow
def test_daemon_sees_a_ttl_refreshed_on_read(tmp_path):
    pytest.importorskip("langgraph.store.sqlite", reason="pip install 'memwatch-overlay[test-integrations]'")
    pks = fs.langgraph_sqlite(tmp_path / "store.sqlite")
    (tmp_path / "memwatch.toml").write_text('[overlay]\npath = "o.db"\n[[sources]]\nname = "lg"\n'
                                            'connector = "sqlite"\npath = "store.sqlite"\npreset = "langgraph"\n')
    assert run("daemon", "--config", "memwatch.toml", "--once", cwd=tmp_path).returncode == 0

    def trip():
        proc = run("report", "--config", "memwatch.toml", "--format", "json", cwd=tmp_path)
        facts = json.loads(proc.stdout)["facts"]
        return next(f for f in facts if f["pk"] == pks["e.trip"])
    before = trip()
    assert before["label"] == "expired"                  # its TTL ran out days ago
    rows_before = sqlite3.connect(tmp_path / "store.sqlite").execute(
        "SELECT rowid, updated_at FROM store WHERE key = ?", (pks["e.trip"]["key"],)).fetchone()

    expires = _refresh(tmp_path / "store.sqlite", pks["e.trip"])       # LangGraph still serves it
    assert sqlite3.connect(tmp_path / "store.sqlite").execute(
        "SELECT rowid, updated_at FROM store WHERE key = ?", (pks["e.trip"]["key"],)).fetchone() == rows_before
    proc = run("daemon", "--config", "memwatch.toml", "--once", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = trip()
    assert after["expires_at"].startswith(expires[:16].replace(" ", "T"))
    assert after["label"] != "expired"


@pytest.mark.integrations
def test_an_incremental_read_takes_refreshed_rows_only(tmp_path):
    pytest.importorskip("langgraph.store.sqlite", reason="pip install 'memwatch-overlay[test-integrations]'")
    from memwatch_overlay.connectors.recognize import detect, source_from_detection
    from memwatch_overlay.connectors.registry import make_connector
    pks = fs.langgraph_sqlite(tmp_path / "store.sqlite")
    conn = make_connector(source_from_detection(detect(str(tmp_path / "store.sqlite")), name="lg"))
    conn.open()
    assert len(list(conn.read(None))) == len(pks)
    cursor, read = conn.cursor, conn.rows_read
    assert list(conn.read(cursor)) == []                  # nothing moved: nothing read
    assert conn.rows_read == read
    _refresh(tmp_path / "store.sqlite", pks["c.remind"])
    (rec,) = list(conn.read(conn.cursor))
    assert rec.pk == pks["c.remind"] and rec.subject == "u_chen"
    assert rec.expires_at > plan.BY_ID["c.remind"].at().timestamp() + 7 * 86400
    assert conn.rows_read == read + 1
    assert list(conn.read(conn.cursor)) == []
    # the deletion pass still reads keys only (the preset's read() yields table rows)
    assert len(list(conn.keys())) == len(pks) and conn.rows_read == read + 1
    conn.close()


@pytest.mark.integrations
@pytest.mark.postgres
def test_postgres_store_ttl_refresh_is_read(pg_database):
    pytest.importorskip("langgraph.store.postgres", reason="pip install 'memwatch-overlay[test-integrations]'")
    from langgraph.store.postgres import PostgresStore
    from memwatch_overlay.connectors.recognize import detect, source_from_detection
    from memwatch_overlay.connectors.registry import make_connector
    url = pg_database("memwatch_lgttl")
    pks = fs.langgraph_postgres(url)
    conn = make_connector(source_from_detection(detect(url), name="lg"))
    conn.open()
    first = {r.pk["key"]: r for r in conn.read(None)}
    assert {r.subject for r in first.values()} == set(plan.USERS)
    pk = pks["e.trip"]
    with PostgresStore.from_conn_string(url, ttl={"refresh_on_read": True}) as store:
        store.get(tuple(pk["prefix"].split(".")), pk["key"])
    again = {r.pk["key"]: r for r in conn.read(conn.cursor)}
    assert pk["key"] in again
    assert again[pk["key"]].expires_at > first[pk["key"]].expires_at + 86400
    assert again[pk["key"]].subject == "u_erin"
    conn.close()
