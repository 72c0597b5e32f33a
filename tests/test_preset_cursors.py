"""Presets honour the connector contract: `rows_read`, and a `cursor` after read() that makes
the next read touch only what changed. The bot's writes are simulated on copies of the
fixture stores with the same statements the frameworks issue."""
from __future__ import annotations

import json
import sqlite3
import time

import pytest

from memwatch_overlay.connectors.base import STATUS_DELETED
from memwatch_overlay.connectors.recognize import detect, source_from_detection
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import Config


def connector_for(path):
    return make_connector(source_from_detection(detect(str(path)), name="bot"))


def read_all(conn, cursor=None):
    before = conn.rows_read
    records = list(conn.read(cursor))
    return records, conn.rows_read - before


def count(path, sql, params=()):
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, params).fetchone()[0]
    finally:
        db.close()


def write(path, sql, params=()):
    db = sqlite3.connect(path)
    try:
        db.execute(sql, params)
        db.commit()
    finally:
        db.close()


def test_openai_agents_cursor_reads_only_new_messages(agent_store):
    path = agent_store("openai-agents") / "agent_sessions.db"
    total = count(path, "SELECT count(*) FROM agent_messages")
    with connector_for(path) as conn:
        records, rows = read_all(conn)
        assert rows == total and conn.cursor is not None
        cursor = conn.cursor
        # what SQLiteSession.add_items() does for one user turn and its reply
        for role, text in (("user", "I now live in Bandung."), ("assistant", "Noted!")):
            write(path, "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                  ("assistant-u_priya", json.dumps({"role": role, "content": text})))
        new, rows = read_all(conn, cursor)
        assert rows == 2
        assert [(r.text, r.subject) for r in new] == [("I now live in Bandung.", "u_priya")]
        again, rows = read_all(conn, conn.cursor)
        assert again == [] and rows == 0


def test_openai_agents_content_parts_and_tool_items(agent_store):
    path = agent_store("openai-agents") / "agent_sessions.db"
    with connector_for(path) as conn:
        list(conn.read())
        cursor = conn.cursor
        items = [{"role": "user", "content": [{"type": "input_text", "text": "I work at Stripe now."}]},
                 {"type": "function_call", "name": "lookup", "arguments": "{}"},
                 {"role": "assistant", "content": [{"type": "output_text", "text": "Congrats!"}]}]
        for item in items:
            write(path, "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                  ("assistant-u_priya", json.dumps(item)))
        new, rows = read_all(conn, cursor)
        assert rows == 3 and [r.text for r in new] == ["I work at Stripe now."]


def test_mem0_cursor_rereads_only_the_memories_with_new_events(agent_store):
    folder = agent_store("mem0")
    path = folder / "history.db"
    history = count(path, "SELECT count(*) FROM history")
    points = count(folder / "qdrant/collection/memories/storage.sqlite", "SELECT count(*) FROM points")
    memory_id, old_id, old_text = sqlite3.connect(path).execute(
        "SELECT memory_id, id, new_memory FROM history WHERE new_memory = 'Amara lives in Lagos.'").fetchone()
    with connector_for(path) as conn:
        records, rows = read_all(conn)
        assert rows == history + points     # history rows plus one payload per memory that has one
        cursor = conn.cursor
        assert cursor["rowid"] == count(path, "SELECT max(rowid) FROM history")
        # what Memory.update() writes to history
        write(path, "INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, updated_at, "
                    "is_deleted, actor_id, role) VALUES ('upd-1', ?, ?, 'Amara moved to Accra.', 'UPDATE', "
                    "'2026-10-20T13:15:39.153614+00:00', '2026-11-28T10:00:00.000000+00:00', 0, NULL, 'user')",
              (memory_id, old_text))
        new, rows = read_all(conn, cursor)
        assert rows == 2 + 1                 # that memory's two events and its payload
        by_pk = {r.pk["id"]: r for r in new}
        assert set(by_pk) == {old_id, "upd-1"}
        assert by_pk[old_id].replaced_by == {"id": "upd-1"}
        assert by_pk["upd-1"].replaced_by is None and by_pk["upd-1"].subject == "u_amara"
        # Memory.delete()
        write(path, "INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, updated_at, "
                    "is_deleted, actor_id, role) VALUES ('del-1', ?, 'Amara moved to Accra.', NULL, 'DELETE', "
                    "'2026-10-20T13:15:39.153614+00:00', '2026-11-29T10:00:00.000000+00:00', 1, NULL, 'user')",
              (memory_id,))
        gone, rows = read_all(conn, conn.cursor)
        assert {r.pk["id"]: r.status for r in gone} == {old_id: STATUS_DELETED, "upd-1": STATUS_DELETED}


def test_mem0_without_qdrant_folder_has_no_subject(tmp_path, agent_store):
    folder = agent_store("mem0")
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "history.db").write_bytes((folder / "history.db").read_bytes())
    with connector_for(lone / "history.db") as conn:
        records, rows = read_all(conn)
    assert records and {r.subject for r in records} == {None}
    assert rows == count(lone / "history.db", "SELECT count(*) FROM history")


def test_memlife_cursor_sees_rows_revised_in_place(agent_store):
    path = agent_store("memlife") / "u_tomasz" / "memlife.db"
    total = count(path, "SELECT count(*) FROM facts")
    with connector_for(path) as conn:
        records, rows = read_all(conn)
        assert rows == total
        cursor = conn.cursor
        assert cursor["updated_at"] == count(path, "SELECT max(updated_at) FROM facts")
        nothing, rows = read_all(conn, cursor)
        assert rows <= 1 and all(r.pk["id"] in {x.pk["id"] for x in records} for r in nothing)
        # what memlife's expire_fact() does: an UPDATE of an old row, no new rowid
        fact_id = "fact_f4a69c92b28e"
        now = time.time()
        write(path, "UPDATE facts SET superseded_by = '__retired__:moved', updated_at = ? WHERE id = ?",
              (now, fact_id))
        changed, rows = read_all(conn, cursor)
        assert rows <= 2
        retired = [r for r in changed if r.pk["id"] == fact_id]
        assert len(retired) == 1 and retired[0].expires_at == pytest.approx(now)
        assert retired[0].subject == "u_tomasz"


def test_memlife_incremental_sync_marks_a_revision_contradicted(agent_store, tmp_path):
    path = agent_store("memlife") / "u_tomasz" / "memlife.db"
    source = source_from_detection(detect(str(path)), name="bot")
    store = OverlayStore(tmp_path / "overlay.db")
    try:
        engine = SyncEngine(store, Config())
        engine.sync(source, full=True)
        # memlife revise_fact(): a new fact row, the old one points at it
        now = time.time()
        write(path, "INSERT INTO facts (id, content, source, confidence, created_at, updated_at, superseded_by) "
                    "VALUES ('fact_new', 'Tomasz moved to Gdansk.', 'user', 0.8, ?, ?, '')", (now, now))
        write(path, "UPDATE facts SET superseded_by = 'fact_new', updated_at = ? WHERE id = 'fact_f4a69c92b28e'",
              (now,))
        stats = engine.sync(source, full=False)
        assert stats.rows_read <= 3
        row = store.conn.execute("SELECT status FROM facts WHERE ref = 'bot:facts:fact_f4a69c92b28e'").fetchone()
        assert row["status"] == "contradicted"
        assert store.contradicted_by(store.fact_id("bot:facts:fact_f4a69c92b28e")) == ["bot:facts:fact_new"]
    finally:
        store.close()


@pytest.mark.parametrize("framework,file,insert", [
    ("crewai", "long_term_memory_storage.db",
     ("INSERT INTO long_term_memories (task_description, metadata, datetime, score) VALUES (?, ?, ?, ?)",
      ("Reply to a user", json.dumps({"suggestions": ["Remember: the user moved to Lisbon."], "quality": 8}),
       str(time.time()), 8.0))),
    ("langgraph", "langgraph_store.sqlite",
     ("INSERT OR REPLACE INTO store (prefix, key, value) VALUES (?, ?, ?)",
      ("users.u_amara.memories", "new-key", json.dumps({"memory": "Amara moved to Accra."}).encode()))),
])
def test_append_only_stores_read_only_new_rows(agent_store, framework, file, insert):
    path = agent_store(framework) / file
    with connector_for(path) as conn:
        records, rows = read_all(conn)
        assert rows == len(records) == 33 and conn.cursor["rowid"] is not None
        cursor = conn.cursor
        write(path, *insert)
        new, rows = read_all(conn, cursor)
        assert rows == 1 and len(new) == 1
        assert "moved to" in new[0].text
