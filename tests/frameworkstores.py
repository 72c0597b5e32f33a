"""Stores written by the agent frameworks' own code (the test-integrations extra), from tests/storeplan.py.

Each builder writes the plan through the framework's storage API (no LLM: fixed texts,
the deterministic embedder where vectors are needed), then moves each row's timestamps
back to its intended age in the framework's own format, with plain SQL on the file (or the
framework's own update where the format is not SQL). Each returns {item id: pk dict} for
the planted items it wrote, so tests can find every item in an audit by its own key.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import os
import sqlite3
import tempfile
import uuid
from pathlib import Path
from typing import Callable

import storeplan as plan

UTC = dt.timezone.utc
# No framework phones home from a test (there is no network here anyway), and mem0 keeps its
# ~/.mem0 (config.json, written at import) in a temporary folder, not the user's home.
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="memwatch-test-mem0-"))
os.environ.update({"MEM0_TELEMETRY": "False", "ANONYMIZED_TELEMETRY": "False", "AGNO_TELEMETRY": "false",
                   "OPENAI_AGENTS_DISABLE_TRACING": "1", "CREWAI_DISABLE_TELEMETRY": "true",
                   "OTEL_SDK_DISABLED": "true"})


def _sqlite_stamp(when: dt.datetime) -> str:
    """SQLite CURRENT_TIMESTAMP text: 'YYYY-MM-DD HH:MM:SS' (UTC)."""
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def item_key(item: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "memwatch-test/" + item))


# -- LangGraph --------------------------------------------------------------------------------
LANGGRAPH_LAYOUTS = {
    # LangGraph's Stores docs: (user_id, "memories"); TTL items in (user_id, "working")
    "user-first": lambda p: (p.user, "working" if p.ttl_days else "memories"),
    # LangMem's default: ("memories", user_id)
    "langmem": lambda p: ("working" if p.ttl_days else "memories", p.user),
    # ("users", user_id, "memories")
    "users": lambda p: ("users", p.user, "working" if p.ttl_days else "memories"),
}


def langgraph_value(p: plan.Planted, i: int) -> dict:
    """The shapes apps put(): {"memory": …}, LangMem's {"kind", "content": {"content"}}, the docs'
    single free-named field ({"food_preference": "…"})."""
    shape = i % 3
    if shape == 0:
        return {"memory": p.text}
    if shape == 1:
        return {"kind": "Memory", "content": {"content": p.text}}
    return {p.category + "_note": p.text}


def _langgraph_update_and_delete(store, pks: dict) -> None:
    """put() again under the same key (LangGraph's update), delete() one item."""
    up = pks[plan.UPDATED_ITEM]
    store.put(tuple(up["prefix"].split(".")), up["key"], {"memory": plan.UPDATED_TEXT})
    gone = pks.pop(plan.DELETED_ITEM)
    store.delete(tuple(gone["prefix"].split(".")), gone["key"])


def langgraph_sqlite(path: Path, layout: str = "user-first", ttl_config: dict | None = None) -> dict:
    from langgraph.store.sqlite import SqliteStore
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    store = SqliteStore(conn, ttl=ttl_config)
    store.setup()
    pks = {}
    for i, p in enumerate(plan.by_age()):
        ns = LANGGRAPH_LAYOUTS[layout](p)
        store.put(ns, item_key(p.item), langgraph_value(p, i), ttl=p.ttl_days * 1440 if p.ttl_days else None)
        pks[p.item] = {"prefix": ".".join(ns), "key": item_key(p.item)}
    _langgraph_update_and_delete(store, pks)
    for item, pk in pks.items():
        when = plan.BY_ID[item].at()
        created, expires = conn.execute("SELECT created_at, expires_at FROM store WHERE prefix = ? AND key = ?",
                                        (pk["prefix"], pk["key"])).fetchone()
        delta = when - dt.datetime.fromisoformat(created).replace(tzinfo=UTC)
        moved = str(dt.datetime.fromisoformat(expires) + delta) if expires else None   # put()'s str(datetime)
        conn.execute("UPDATE store SET created_at = ?, updated_at = ?, expires_at = ? WHERE prefix = ? AND key = ?",
                     (_sqlite_stamp(when), _sqlite_stamp(when), moved, pk["prefix"], pk["key"]))
    conn.close()
    return pks


def langgraph_postgres(dsn: str, layout: str = "user-first") -> dict:
    from langgraph.store.postgres import PostgresStore
    import psycopg
    pks = {}
    with PostgresStore.from_conn_string(dsn) as store:
        store.setup()
        for i, p in enumerate(plan.by_age()):
            ns = LANGGRAPH_LAYOUTS[layout](p)
            store.put(ns, item_key(p.item), langgraph_value(p, i), ttl=p.ttl_days * 1440 if p.ttl_days else None)
            pks[p.item] = {"prefix": ".".join(ns), "key": item_key(p.item)}
        _langgraph_update_and_delete(store, pks)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for item, pk in pks.items():
            when = plan.BY_ID[item].at()
            conn.execute("UPDATE store SET expires_at = expires_at + (%s::timestamptz - created_at), "
                         "created_at = %s, updated_at = %s WHERE prefix = %s AND key = %s",
                         (when, when, when, pk["prefix"], pk["key"]))
    return pks


# -- mem0 --------------------------------------------------------------------------------------
def mem0_memory(history_db: Path, qdrant_path: Path):
    """mem0 `Memory` with qdrant local at `qdrant_path` (mem0's default is /tmp/qdrant; tests
    pass their own) and langchain's DeterministicFakeEmbedding; close() it when done."""
    os.environ.setdefault("OPENAI_API_KEY", "unused-no-llm-call")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from mem0 import Memory
    return Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {"embedding_model_dims": plan.EMBED_DIM,
                                                           "path": str(qdrant_path)}},
        "history_db_path": str(history_db),
        "embedder": {"provider": "langchain", "config": {"model": DeterministicFakeEmbedding(size=plan.EMBED_DIM)}}})


def mem0_close(mem) -> None:
    mem.vector_store.client.close()
    mem.db.close()


def mem0(history_db: Path, qdrant_path: Path, delete: bool = True) -> dict:
    """The plan through mem0's `Memory.add(infer=False)` (no LLM), one update(), one delete()
    (unless `delete` is False); returns item -> pk, plus "memory_ids" -> item -> mem0's id."""
    mem = mem0_memory(history_db, qdrant_path)
    memory_ids = {}
    for p in plan.by_age():
        expiry = (p.at() + dt.timedelta(days=p.ttl_days)).date().isoformat() if p.ttl_days else None
        res = mem.add(p.text, user_id=p.user, infer=False, expiration_date=expiry)
        memory_ids[p.item] = res["results"][0]["id"]
    mem.update(memory_ids[plan.UPDATED_ITEM], plan.UPDATED_TEXT)
    if delete:
        mem.delete(memory_ids[plan.DELETED_ITEM])
    mem0_close(mem)
    conn = sqlite3.connect(history_db)
    pks = {}
    for item, mid in memory_ids.items():
        when = plan.BY_ID[item].at()
        rows = conn.execute("SELECT id, event FROM history WHERE memory_id = ? ORDER BY rowid", (mid,)).fetchall()
        for n, (hid, event) in enumerate(rows):
            event_time = when + dt.timedelta(hours=n)   # an UPDATE/DELETE comes after the ADD
            conn.execute("UPDATE history SET created_at = ?, updated_at = ? WHERE id = ?",
                         (when.isoformat(), event_time.isoformat(), hid))
        live = [hid for hid, event in rows if event in ("ADD", "UPDATE")]
        pks[item] = {"id": live[-1]}
    conn.commit()
    conn.close()
    pks["memory_ids"] = memory_ids
    return pks


# -- OpenAI Agents SDK -------------------------------------------------------------------------
def per_user(p: plan.Planted) -> str:
    return f"assistant-{p.user}"


def per_conversation(p: plan.Planted) -> str:
    """One session per conversation: `chat-<user>-<day>` (so no two items share one)."""
    return f"chat-{p.user}-{p.at().date().isoformat()}"


async def _agents_items(make_session: Callable[[str], object], session_of: Callable) -> list:
    order = []
    for p in plan.by_age():
        session = make_session(session_of(p))
        await session.add_items([{"role": "user", "content": p.utterance},
                                 {"role": "assistant", "content": "Noted."}])
        order.append(p)
    return order


def openai_agents_sqlite(path: Path, session_of: Callable = per_user) -> dict:
    from agents import SQLiteSession
    sessions = []

    def make(sid):
        s = SQLiteSession(sid, str(path))
        sessions.append(s)
        return s
    asyncio.run(_agents_items(make, session_of))
    for s in sessions:
        s.close()
    conn = sqlite3.connect(path)
    pks = _move_agent_messages(conn, session_of, "?")
    conn.commit()
    conn.close()
    return pks


def openai_agents_postgres(url: str, session_of: Callable = per_user) -> dict:
    """SQLAlchemySession on Postgres (the SDK's documented path), async psycopg driver."""
    from agents.extensions.memory import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine
    import psycopg

    async def write():
        engine = create_async_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        await _agents_items(lambda sid: SQLAlchemySession(sid, engine=engine, create_tables=True), session_of)
        await engine.dispose()
    asyncio.run(write())
    with psycopg.connect(url, autocommit=True) as conn:
        return _move_agent_messages(conn, session_of, "%s")


def _move_agent_messages(conn, session_of, mark: str) -> dict:
    rows = conn.execute("SELECT id, session_id, message_data FROM agent_messages ORDER BY id").fetchall()
    by_text = {(session_of(p), p.utterance): p for p in plan.ITEMS}
    pks, current = {}, None
    for mid, sid, data in rows:
        if '"role":"user"' in data.replace(" ", ""):
            current = next(p for (s, u), p in by_text.items() if s == sid and u in data)
            pks[current.item] = {"id": str(mid)}
        when = current.at() + (dt.timedelta(seconds=1) if pks[current.item]["id"] != str(mid) else dt.timedelta(0))
        conn.execute(f"UPDATE agent_messages SET created_at = {mark} WHERE id = {mark}",
                     (_sqlite_stamp(when), mid))
    return pks


# -- agno, LlamaIndex, Chroma, AutoGen -----------------------------------------------------------
def agno(path: Path) -> dict:
    from agno.db.schemas.memory import UserMemory
    from agno.db.sqlite import SqliteDb
    db = SqliteDb(db_file=str(path))
    for p in plan.by_age():
        ts = int(p.at().timestamp())
        db.upsert_user_memory(UserMemory(memory_id=p.item, memory=p.text, user_id=p.user, topics=[p.category],
                                         input=p.utterance, created_at=ts, updated_at=ts))
    changed = plan.BY_ID[plan.UPDATED_ITEM]
    db.upsert_user_memory(UserMemory(memory_id=changed.item, memory=plan.UPDATED_TEXT, user_id=changed.user,
                                     topics=[changed.category], created_at=int(changed.at().timestamp())))
    db.delete_user_memory(plan.DELETED_ITEM)
    conn = sqlite3.connect(path)      # the update's time: one hour after it was learned
    conn.execute("UPDATE agno_memories SET updated_at = ? WHERE memory_id = ?",
                 (int(changed.at().timestamp()) + 3600, changed.item))
    conn.commit()
    conn.close()
    return {p.item: {"memory_id": p.item} for p in plan.ITEMS if p.item != plan.DELETED_ITEM}


def llamaindex(path: Path) -> dict:
    from llama_index.core.llms import ChatMessage
    from llama_index.storage.chat_store.sqlite import SQLiteChatStore
    store = SQLiteChatStore.from_uri(f"sqlite:///{path}")
    for p in plan.by_age():
        store.add_message(p.user, ChatMessage(role="user", content=p.utterance))
        store.add_message(p.user, ChatMessage(role="assistant", content="Noted."))
    conn = sqlite3.connect(path)
    pks = {}
    for mid, value in conn.execute("SELECT id, value FROM data_chatstore ORDER BY id"):
        for p in plan.ITEMS:
            if p.utterance in value:
                pks[p.item] = {"id": str(mid)}
    conn.close()
    return pks


class DeterministicEmbeddings:
    """A chromadb EmbeddingFunction over storeplan.embed (no model download)."""

    def __init__(self, **_):
        pass

    def __call__(self, input):
        return [plan.embed(t) for t in input]

    @staticmethod
    def name() -> str:
        return "memwatch-test-deterministic"

    def get_config(self) -> dict:
        return {}

    @staticmethod
    def build_from_config(config):
        return DeterministicEmbeddings()

    def is_legacy(self) -> bool:
        return False


def chroma(folder: Path) -> dict:
    """chromadb.PersistentClient: one collection, user and time in each record's metadata."""
    import chromadb
    client = chromadb.PersistentClient(path=str(folder), settings=chromadb.Settings(anonymized_telemetry=False))
    col = client.get_or_create_collection("memories", embedding_function=DeterministicEmbeddings())
    for p in plan.by_age():
        col.add(ids=[p.item], documents=[p.text], metadatas=[{"user_id": p.user, "created_at": p.at().isoformat()}])
    col.update(ids=[plan.UPDATED_ITEM], documents=[plan.UPDATED_TEXT])
    col.delete(ids=[plan.DELETED_ITEM])
    return {p.item: {"collection": "memories", "id": p.item} for p in plan.ITEMS if p.item != plan.DELETED_ITEM}


def autogen(folder: Path) -> dict:
    """AutoGen's ChromaDBVectorMemory: one persistent collection per user (`prefs_<user>`), as
    its docs do; metadata is the caller's plus mime_type, no user, no time (chroma's own
    created_at is moved back in place)."""
    from autogen_core.memory import MemoryContent, MemoryMimeType
    from autogen_ext.memory.chromadb import (ChromaDBVectorMemory, CustomEmbeddingFunctionConfig,
                                             PersistentChromaDBVectorMemoryConfig)

    async def write():
        for user in plan.USERS:
            memory = ChromaDBVectorMemory(config=PersistentChromaDBVectorMemoryConfig(
                collection_name=f"prefs_{user}", persistence_path=str(folder),
                embedding_function_config=CustomEmbeddingFunctionConfig(function=DeterministicEmbeddings)))
            for p in [q for q in plan.by_age() if q.user == user]:
                await memory.add(MemoryContent(content=p.text, mime_type=MemoryMimeType.TEXT,
                                               metadata={"category": "preferences"}))
            await memory.close()
    asyncio.run(write())
    conn = sqlite3.connect(folder / "chroma.sqlite3")
    pks = {}
    for rid, eid, doc, collection in conn.execute(
            "SELECT e.id, e.embedding_id, m.string_value, c.name FROM embeddings e "
            "JOIN embedding_metadata m ON m.id = e.id AND m.key = 'chroma:document' "
            "JOIN segments s ON s.id = e.segment_id JOIN collections c ON c.id = s.collection"):
        p = next(q for q in plan.ITEMS if q.text == doc)
        conn.execute("UPDATE embeddings SET created_at = ? WHERE id = ?", (_sqlite_stamp(p.at()), rid))
        pks[p.item] = {"collection": collection, "id": eid}
    conn.commit()
    conn.close()
    return pks
