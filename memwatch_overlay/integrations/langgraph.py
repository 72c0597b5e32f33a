"""A LangGraph `BaseStore` wrapper: every put() is scored and checked; stale items are hidden or annotated.

    from langgraph.store.memory import InMemoryStore
    from memwatch_overlay.integrations.langgraph import WatchedStore

    store = WatchedStore(InMemoryStore(), db="memwatch.db", expired="annotate")
    store.put(("users", "u1", "memories"), "employer", {"memory": "Works at Google"})
    store.put(("users", "u1", "memories"), "job", {"memory": "I just joined Stripe"})
    store.last_watch          # {"ref": …, "contradicts": ["langgraph:store:users.u1.memories:employer"], …}
    store.get(("users", "u1", "memories"), "employer").value["_memwatch"]["status"]   # "contradicted"

The wrapped store keeps its data as it is; the overlay (`db`) holds scores and flags,
under the source name `langgraph` (table `store`, pk `prefix` + `key`) — the refs a
zero-config audit of a LangGraph SqliteStore file gives; for a SqliteStore the source's
target is its file, so a later `audit` of that file updates the same facts — and
`memwatch-overlay report --overlay db` shows them. Each put() goes through the same sync engine as any store row (category
rules, freshness, confidence, contradiction detection within the subject's block);
the subject is the namespace's second part (`("users", "u1", …)` -> `u1`).

On get()/search(), `expired` chooses what happens to an item whose label is `expired` or
that a newer item contradicts: "annotate" (default) adds `value["_memwatch"]` (freshness,
label, confidence, status, contradicted_by) to every watched item, "hide" drops those
items (get() returns None), "keep" returns items untouched.
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchItem, SearchOp

from memwatch_overlay.connectors.base import Record, make_ref
from memwatch_overlay.connectors.presets.langgraph import subject_from_prefix, text_from_value
from memwatch_overlay.overlay.engine.added_facts import sync_records
from memwatch_overlay.integrations.watching import OverlayWatcher
from memwatch_overlay.rules.config import Config

SOURCE = "langgraph"
TABLE = "store"
MODES = ("annotate", "hide", "keep")
ANNOTATION = "_memwatch"


class WatchedStore(OverlayWatcher, BaseStore):
    """Wraps any LangGraph store (InMemoryStore, SqliteStore, PostgresStore, …)."""

    def __init__(self, store: BaseStore, *, db: str = "memwatch.db", expired: str = "annotate",
                 source: str = SOURCE, target: str | None = None, config: str | Config | None = None,
                 clock: Callable[[], float] = time.time):
        if expired not in MODES:
            raise ValueError(f"expired must be one of {', '.join(MODES)}, not {expired!r}")
        self.store = store
        self.expired = expired
        self.clock = clock
        self._open_overlay(db, config, source, "langgraph",
                    target or _store_file(store) or f"{type(store).__name__} (in process)")
        self.last_watch: list[dict] = []     # one entry per item the last batch put

    # -- BaseStore ------------------------------------------------------------------------
    def batch(self, ops: Iterable) -> list:
        ops = list(ops)
        results = self.store.batch(ops)
        self._record(ops)
        return [self._watch_result(op, r) for op, r in zip(ops, results)]

    async def abatch(self, ops: Iterable) -> list:
        ops = list(ops)
        results = await self.store.abatch(ops)
        self._record(ops)
        return [self._watch_result(op, r) for op, r in zip(ops, results)]

    # -- puts ---------------------------------------------------------------------------------
    def ref(self, namespace: tuple[str, ...], key: str) -> str:
        return make_ref(self.source.name, TABLE, {"prefix": ".".join(namespace), "key": key})

    def _record(self, ops: list) -> None:
        puts = [op for op in ops if isinstance(op, PutOp)]
        if not puts:
            return
        now = self.clock()
        records, deleted = [], []
        for op in puts:
            ref = self.ref(op.namespace, op.key)
            if op.value is None:
                deleted.append(ref)
                continue
            prefix = ".".join(op.namespace)
            row = self.overlay.fact_row(ref)
            records.append(Record(source=self.source.name, table=TABLE, pk={"prefix": prefix, "key": op.key},
                                  text=text_from_value(op.value) or "", key=op.key,
                                  subject=subject_from_prefix(prefix),
                                  created_at=row["created_at"] if row is not None else now,
                                  updated_at=now if row is not None else None))
        if records:
            sync_records(self.engine, self.source, records, now)
        if deleted:
            with self.overlay.transaction():
                self.overlay.set_status(deleted, "deleted")
                self.overlay.apply_contradiction_status()
        self.last_watch = [self._watch(r.ref) for r in records]

    def _watch(self, ref: str) -> dict:
        """What the overlay now says about one put item, and which older items it contradicts."""
        row = self.overlay.fact_row(ref)
        contradicts = self.overlay.contradicts(row["id"])
        return {"ref": ref, "category": row["category"], "freshness": row["freshness"], "label": row["label"],
                "confidence": row["confidence"], "status": row["status"], "contradicts": contradicts,
                "contradicted_by": row["contradicted_by"].split("\x1f") if row["contradicted_by"] else []}

    # -- gets and searches --------------------------------------------------------------------
    def _watch_result(self, op, result):
        if self.expired == "keep":
            return result
        if isinstance(op, GetOp):
            return self._item(result)
        if isinstance(op, SearchOp):
            return [i for i in (self._item(item) for item in result) if i is not None]
        return result

    def _item(self, item: Item | None) -> Item | None:
        if item is None:
            return None
        row = self.overlay.fact_row(self.ref(item.namespace, item.key))
        if row is None:
            return item                       # put before the wrapper was there: not watched
        self.engine.rescore(self.clock(), fact_ids=[row["id"]])
        row = self.overlay.fact_row(row["ref"])
        problem = row["label"] == "expired" or row["status"] == "contradicted"
        if self.expired == "hide":
            return None if problem else item
        note = {"freshness": row["freshness"], "label": row["label"], "confidence": row["confidence"],
                "status": row["status"], "days_left": row["days_left"],
                "contradicted_by": row["contradicted_by"].split("\x1f") if row["contradicted_by"] else []}
        value: dict[str, Any] = {**item.value, ANNOTATION: note}
        if isinstance(item, SearchItem):
            return SearchItem(item.namespace, item.key, value, item.created_at, item.updated_at, item.score)
        return Item(value=value, key=item.key, namespace=item.namespace, created_at=item.created_at,
                    updated_at=item.updated_at)


def _store_file(store: BaseStore) -> str | None:
    """The database file of a SqliteStore (what an audit of that file names its target)."""
    conn = getattr(store, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return None
    for _, name, path in conn.execute("PRAGMA database_list"):
        if name == "main" and path:
            return str(Path(path).resolve())
    return None
