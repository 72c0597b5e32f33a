"""The overlay's record of write-back actions (table `actions`, migration v2).

Each applied action keeps the whole row before and after the write, with the store's type
of every value, so `undo` can put the row back exactly and can tell whether the bot has
touched it since. A write is logged as `pending` in the overlay *before* the source
transaction commits and flipped to `applied` after; a crash in between leaves a pending
entry that `reconcile` settles by looking at the row.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Iterable

from memwatch_overlay.overlay.store.database import OverlayStore

PENDING, APPLIED, FAILED = "pending", "applied", "failed"


@dataclass
class LoggedAction:
    """One row of `actions`, decoded."""

    id: int
    run_id: str
    run_at: float
    source: str
    tbl: str
    ref: str
    pk: dict
    kind: str
    action_index: int | None
    spec: dict
    label: str | None
    fact_hash: str | None
    after_hash: str | None
    key: dict | None
    before: dict | None          # encoded images (SourceWriter.decode_image turns them back)
    after: dict | None
    values: dict | None
    sweepable: bool
    state: str
    undone_at: float | None
    note: str | None

    @classmethod
    def from_row(cls, r: sqlite3.Row) -> "LoggedAction":
        def load(text):
            return None if text is None else json.loads(text)
        return cls(r["id"], r["run_id"], r["run_at"], r["source"], r["tbl"], r["ref"], load(r["pk"]),
                   r["kind"], r["action_index"], load(r["spec"]), r["label"], r["fact_hash"],
                   r["after_hash"], load(r["key_json"]), load(r["before_json"]), load(r["after_json"]),
                   load(r["values_json"]), bool(r["sweepable"]), r["state"], r["undone_at"], r["note"])


_INSERT = (
    "INSERT INTO actions (run_id, run_at, source, tbl, ref, pk, kind, action_index, spec, label, "
    "fact_hash, after_hash, key_json, before_json, after_json, values_json, sweepable, state, note) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


def spec_text(spec: dict) -> str:
    """Canonical JSON of an [[actions]] entry: the same entry always gives the same text."""
    return json.dumps(spec, sort_keys=True, ensure_ascii=False)


def _dump(value) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=False)


class ActionLog:
    def __init__(self, store: OverlayStore):
        self.store = store
        self.conn = store.conn

    def add(self, entries: Iterable[dict], state: str) -> list[int]:
        """Insert entries (dicts with the column names above) in one transaction; ids in order."""
        ids = []
        with self.store.transaction():
            for e in entries:
                cur = self.conn.execute(_INSERT, (
                    e["run_id"], e["run_at"], e["source"], e["tbl"], e["ref"], _dump(e["pk"]), e["kind"],
                    e.get("action_index"), spec_text(e["spec"]), e.get("label"), e.get("fact_hash"),
                    e.get("after_hash"), _dump(e.get("key")), _dump(e.get("before")), _dump(e.get("after")),
                    _dump(e.get("values")), int(bool(e.get("sweepable"))), state, e.get("note")))
                ids.append(cur.lastrowid)
        return ids

    def set_state(self, ids: list[int], state: str, note: str | None = None) -> None:
        with self.store.transaction():
            self.conn.executemany("UPDATE actions SET state = ?, note = coalesce(?, note) WHERE id = ?",
                                  [(state, note, i) for i in ids])

    def mark_undone(self, ids: list[int], when: float, note: str | None = None) -> None:
        with self.store.transaction():
            self.conn.executemany("UPDATE actions SET undone_at = ?, note = coalesce(?, note) WHERE id = ?",
                                  [(when, note, i) for i in ids])

    def get(self, action_id: int) -> LoggedAction | None:
        row = self.conn.execute("SELECT * FROM actions WHERE id = ?", (action_id,)).fetchone()
        return LoggedAction.from_row(row) if row else None

    def pending(self, sources: Iterable[str] | None = None) -> list[LoggedAction]:
        rows = self.conn.execute("SELECT * FROM actions WHERE state = 'pending' ORDER BY id").fetchall()
        wanted = None if sources is None else set(sources)
        return [LoggedAction.from_row(r) for r in rows if wanted is None or r["source"] in wanted]

    def since(self, when: float) -> list[LoggedAction]:
        """Applied, not undone actions from `when` on, newest first (the order undo needs)."""
        rows = self.conn.execute(
            "SELECT * FROM actions WHERE state = 'applied' AND undone_at IS NULL AND run_at >= ? "
            "ORDER BY id DESC", (when - 1e-6,)).fetchall()    # printed times have whole microseconds
        return [LoggedAction.from_row(r) for r in rows]

    def _for_refs(self, sql: str, source: str, refs: list[str] | None):
        """Rows of `sql` (whose WHERE ends with the source) for all refs, or only `refs`."""
        if refs is None:
            yield from self.conn.execute(sql, (source,))
            return
        for i in range(0, len(refs), 500):
            chunk = refs[i:i + 500]
            yield from self.conn.execute(f"{sql} AND ref IN ({', '.join('?' * len(chunk))})", (source, *chunk))

    def done_keys(self, source: str, refs: list[str] | None = None) -> set[tuple[str, str, str]]:
        """(ref, spec, content hash) of rows an action already handled, applied or undone.

        A fact is planned again for the same [[actions]] entry only once its content differs
        from both the row we wrote and the row we found: an undone expiry stays undone until
        the bot itself changes the memory, and a daemon does not rewrite `now` every tick.
        """
        out = set()
        for ref, spec, fact_hash, after_hash in self._for_refs(
                "SELECT ref, spec, fact_hash, after_hash FROM actions WHERE source = ? AND state = 'applied'",
                source, refs):
            for h in (fact_hash, after_hash):
                if h:
                    out.add((ref, spec, h))
        return out

    def written_images(self, source: str, refs: list[str] | None = None) -> dict[tuple[str, str], list[dict]]:
        """(ref, spec) -> after-images of applied writes whose content hash is unknown
        (non-row-local presets): a row still equal to one of them was handled already."""
        out: dict[tuple[str, str], list[dict]] = {}
        for ref, spec, after in self._for_refs(
                "SELECT ref, spec, after_json FROM actions WHERE state = 'applied' AND undone_at IS NULL "
                "AND kind = 'set' AND after_hash IS NULL AND after_json IS NOT NULL AND source = ?",
                source, refs):
            out.setdefault((ref, spec), []).append(json.loads(after))
        return out

    def history(self, limit: int = 50, source: str | None = None) -> list[LoggedAction]:
        sql = "SELECT * FROM actions WHERE state != 'pending'"
        params: tuple = ()
        if source:
            sql += " AND source = ?"
            params = (source,)
        rows = self.conn.execute(sql + " ORDER BY id DESC LIMIT ?", (*params, limit)).fetchall()
        return [LoggedAction.from_row(r) for r in reversed(rows)]
