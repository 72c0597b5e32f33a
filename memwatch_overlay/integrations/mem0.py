"""A mem0 client wrapper: every add() goes to mem0 first, then its memories are scored and
checked for contradictions among that user's stored memories.

    from mem0 import Memory
    from memwatch_overlay.integrations.mem0 import WatchedMemory

    memory = WatchedMemory(Memory(), db="memwatch.db")
    memory.add("I work at Google", user_id="u1", infer=False)
    result = memory.add("I just joined Stripe", user_id="u1", infer=False)
    result["results"]            # mem0's own result, untouched
    result["watch"]["summary"]   # "1 contradiction(s) detected. 0 stale memories."

`add()` passes every argument through to the wrapped client (`Memory`, `AsyncMemory` is not
wrapped, or anything with mem0's `add()`), and returns mem0's result (a dict, as mem0
returns it) with one more key, ``"watch"``:

- ``user_id``: the user the memories belong to (mem0's `user_id`, else `agent_id`, else `run_id`);
- ``memories``: per memory mem0 reported (ADD, UPDATE, DELETE; NONE is skipped): its
  ``ref`` (``mem0:memories:<memory id>``), ``memory_id``, ``event``, ``category``,
  ``label``, ``status`` and the refs of the older memories it ``contradicts``;
- ``contradictions``: every stored memory of that user that a newer one contradicts
  (``older``/``older_text``, ``newer``/``newer_text``, ``kind``, ``confidence``, ``evidence``, ``update``);
- ``stale``: that user's memories already ``stale`` or ``expired``;
- ``summary``: ``"N contradiction(s) detected. M stale memories."``.

Other attributes (search, get_all, update, delete, ...) are mem0's, passed through;
`update()` and `delete()` are recorded too. The overlay source is ``mem0`` (table
``memories``, pk mem0's memory id): the facts the wrapper saw, not a read of mem0's
history.db (an `audit` of that file is the preset's source ``mem0`` of another overlay).
"""
from __future__ import annotations

import time
from typing import Any, Callable

from memwatch_overlay.connectors.base import Record, make_ref
from memwatch_overlay.overlay.engine.added_facts import sync_records
from memwatch_overlay.integrations.watching import OverlayWatcher
from memwatch_overlay.rules.config import Config

SOURCE = "mem0"
TABLE = "memories"
EVENTS = ("ADD", "UPDATE", "DELETE")
STALE_LABELS = ("stale", "expired")


class WatchedMemory(OverlayWatcher):
    """Wraps a mem0 client; `add()` returns mem0's result plus ``"watch"`` (module docstring)."""

    def __init__(self, memory: Any, *, db: str = "memwatch.db", config: str | Config | None = None,
                 source: str = SOURCE, clock: Callable[[], float] = time.time):
        self.memory = memory
        self.clock = clock
        self._open_overlay(db, config, source, "mem0", f"{type(memory).__name__} (in process)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getattr__(self, name: str):          # search, get_all, history, reset, ...: mem0's own
        return getattr(self.memory, name)

    # -- writes ---------------------------------------------------------------------------
    def add(self, messages, *args, **kwargs) -> dict:
        result = self.memory.add(messages, *args, **kwargs)
        user = kwargs.get("user_id") or kwargs.get("agent_id") or kwargs.get("run_id")
        items = (result or {}).get("results", []) if isinstance(result, dict) else (result or [])
        memories = self._record(items, user)
        out = dict(result) if isinstance(result, dict) else {"results": result}
        out["watch"] = self.watch(user, memories)
        return out

    def update(self, memory_id: str, data: str, *args, **kwargs):
        result = self.memory.update(memory_id, data, *args, **kwargs)
        row = self.overlay.fact_row(self.ref(memory_id))
        self._record([{"id": memory_id, "memory": data, "event": "UPDATE"}],
                     row["subject"] if row is not None else None)
        return result

    def delete(self, memory_id: str, *args, **kwargs):
        result = self.memory.delete(memory_id, *args, **kwargs)
        self._record([{"id": memory_id, "event": "DELETE"}], None)
        return result

    def ref(self, memory_id: str) -> str:
        return make_ref(self.source.name, TABLE, {"id": str(memory_id)})

    def _record(self, items: list, user: str | None) -> list[dict]:
        now = self.clock()
        records, deleted, seen = [], [], []
        for item in items:
            event = str(item.get("event") or "ADD").upper()
            if event not in EVENTS or not item.get("id"):
                continue
            ref = self.ref(item["id"])
            seen.append((ref, str(item["id"]), event))
            if event == "DELETE":
                deleted.append(ref)
                continue
            row = self.overlay.fact_row(ref)
            records.append(Record(source=self.source.name, table=TABLE, pk={"id": str(item["id"])},
                                  text=str(item.get("memory") or item.get("data") or ""),
                                  subject=user if user is not None else (row["subject"] if row is not None else None),
                                  created_at=row["created_at"] if row is not None else now,
                                  updated_at=now if row is not None else None))
        if records:
            sync_records(self.engine, self.source, records, now)
        if deleted:
            with self.overlay.transaction():
                self.overlay.set_status([r for r in deleted if self.overlay.fact_id(r) is not None], "deleted")
                self.overlay.apply_contradiction_status()
        out = []
        for ref, memory_id, event in seen:
            row = self.overlay.fact_row(ref)
            if row is None:
                continue
            out.append({"ref": ref, "memory_id": memory_id, "event": event, "category": row["category"],
                        "label": row["label"], "status": row["status"],
                        "contradicts": self.overlay.contradicts(row["id"])})
        return out

    # -- the watch result -----------------------------------------------------------------
    def watch(self, user_id: str | None, memories: list[dict] | None = None) -> dict:
        """What the overlay says about `user_id`'s stored memories now (see the module docstring)."""
        self.engine.rescore(self.clock())
        source_id = self.overlay.source_row(self.source.name)
        ids = [] if source_id is None else [source_id["id"]]
        rows = [r for r in self.overlay.find_facts(subject=user_id) if r["source_name"] == self.source.name]
        text = {r["ref"]: r["text"] for r in rows}
        contradictions = []
        for c in self.overlay.iter_contradictions(ids):
            if c["older"] in text:
                newer = self.overlay.fact_row(c["newer"])
                contradictions.append({**c, "older_text": text[c["older"]],
                                       "newer_text": newer["text"] if newer is not None else None})
        stale = [{"ref": r["ref"], "text": r["text"], "label": r["label"], "freshness": r["freshness"]}
                 for r in rows if r["label"] in STALE_LABELS]
        return {"user_id": user_id, "memories": memories or [], "contradictions": contradictions,
                "stale": stale,
                "summary": f"{len(contradictions)} contradiction(s) detected. {len(stale)} stale memories."}
