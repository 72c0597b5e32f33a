"""mem0's `history.db` (SQLiteManager): an event log turned into one fact per memory version.

`history` holds one row per ADD / UPDATE / DELETE of a memory (`memory_id`). The preset
reads it ordered by memory_id and time and, per memory:
- every ADD/UPDATE row with a `new_memory` text is a fact whose pk is that row's `id`;
  the latest one is the live fact;
- an earlier version gets `replaced_by` = the row that replaced it, so the overlay
  records a `value` contradiction naming mem0's UPDATE (the older fact becomes
  `contradicted`);
- a DELETE row (`is_deleted = 1`) marks the versions before it `deleted`.
Times: `created_at` is the memory's creation, `updated_at` the event's time (an
UPDATE row's text was learned then).

The user lives only in the vector store's payload. With qdrant in local mode the payload
gives the subject (`user_id`, else `agent_id`, else `run_id`), mem0's `expiration_date` (a
date: the memory is valid through that day, so it expires at the next midnight UTC) and a
`category` kept in metadata. The qdrant storage is looked for
- at `qdrant_path` when the source names it (mem0's `vector_store.config.path`);
- else beside history.db (`qdrant/collection/<name>/storage.sqlite`, or `collection/…`);
- else where mem0 puts it by default: `/tmp/qdrant` (mem0's QdrantConfig path; its
  history.db defaults to `~/.mem0/history.db`, or `$MEM0_DIR/history.db`).
When live memories find no payload there, the read warns (their subject stays None, so
their users' facts would meet): set `qdrant_path`. mem0 drops a deleted memory's point, so
a deleted version comes without a subject; the overlay keeps the subject it had.

Streaming: rows come ordered by memory_id from one cursor and are grouped on the fly;
payloads are fetched per chunk of memories, so memory stays bounded by the chunk.
Incremental reads (cursor = last rowid) re-read the whole history of the memories
that got new events, nothing else.
"""
from __future__ import annotations

import datetime as dt
import itertools
import os
from pathlib import Path
from typing import Any, Iterator

from sqlglot import exp

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.base import STATUS_DELETED, Record
from memwatch_overlay.connectors.sqlite import ROWID, SqliteConnector
from memwatch_overlay.connectors.presets import Match, has_columns
from memwatch_overlay.connectors.presets.qdrant_local import QdrantPayloads, collections_in

HISTORY_COLUMNS = ("id", "memory_id", "old_memory", "new_memory", "event", "created_at",
                   "updated_at", "is_deleted")
SUBJECT_KEYS = ("user_id", "agent_id", "run_id")
MEMORIES_PER_CHUNK = 200
# Where mem0 keeps qdrant when its config names no path (mem0/configs/vector_stores/qdrant.py).
MEM0_DEFAULT_QDRANT = Path("/tmp/qdrant")


def expiry_of(value: Any) -> float | None:
    """mem0's `expiration_date` (YYYY-MM-DD, or a full timestamp) as epoch seconds.

    A bare date means "valid through that day": it expires at the following midnight UTC.
    """
    if value in (None, ""):
        return None
    text = str(value).strip()
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        try:
            return parse_timestamp(text)
        except ValueError:
            return None
    nxt = day + dt.timedelta(days=1)
    return dt.datetime(nxt.year, nxt.month, nxt.day, tzinfo=dt.timezone.utc).timestamp()


class Mem0History(SqliteConnector):
    preset = "mem0"
    description = "mem0 history.db (event log; user and expiry from qdrant local storage beside it)"
    defaults = dict(table="history", id=["id"], text="new_memory", created_at="created_at",
                    updated_at="updated_at")
    # Write-back: a history row with is_deleted = 1 counts as mem0's DELETE (see memory_records).
    # mem0's vector store still holds the memory; its own search does not read this flag.
    natural_writebacks = {"expire": {"is_deleted": 1}}
    row_local = False       # a version's record depends on the memory's other events and qdrant

    def __init__(self, source, **kwargs):
        super().__init__(source, **kwargs)
        self.payloads: QdrantPayloads | None = None

    @classmethod
    def match(cls, tables):
        reasons = has_columns(tables, "history", {"memory_id", "old_memory", "new_memory", "event",
                                                   "is_deleted"})
        if reasons is None:
            return None
        if has_columns(tables, "messages", {"session_scope", "content"}):
            reasons.append("mem0 message buffer table 'messages'")
        return Match(cls.preset, 1.0, reasons, dict(cls.defaults))

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        super().open()
        self.qdrant_places = self.qdrant_folders()
        storages = [s for folder in self.qdrant_places for s in collections_in(folder)]
        if storages:
            self.payloads = QdrantPayloads(storages)
            self.payloads.open()

    def qdrant_folders(self) -> list[Path]:
        """Where to look for qdrant local storage: qdrant_path, else beside history.db, else
        mem0's default; the first of these that exists."""
        if self.source.qdrant_path:
            path = Path(os.path.expanduser(self.source.qdrant_path))
            return [path if path.is_absolute() else self.source.base_dir / path]
        history = self.source.resolved_path
        beside = [history.parent / "qdrant", history.parent]
        for folder in (*beside, MEM0_DEFAULT_QDRANT):
            if collections_in(folder):
                return [folder]
        return [*beside, MEM0_DEFAULT_QDRANT]

    def snapshot_files(self) -> list[Path] | None:
        """history.db and the qdrant collections it reads payloads from (a collection that
        appears later changes the list, and with it the digest)."""
        files = super().snapshot_files()
        if files is None:
            return None
        return files + (list(self.payloads.paths) if self.payloads is not None else [])

    def close(self) -> None:
        if self.payloads is not None:
            self.payloads.close()
            self.payloads = None
        super().close()

    # -- reading -----------------------------------------------------------------------
    def build_select(self, cursor: dict | None) -> tuple[str, tuple, list[str]]:
        table = self.source.table or "history"
        info = self.table_info(table)
        missing = [c for c in HISTORY_COLUMNS if c not in info.columns]
        if missing:
            raise ConnectorError(f"{self.source.target}: table {table!r} lacks mem0 history column(s) "
                                 f"{', '.join(missing)} (columns: {', '.join(info.columns)})")
        stmt = sqlguard.select_rows(table, None, list(HISTORY_COLUMNS), self.dialect,
                                    where=self.source.where, extra=[sqlguard.sqlglot_rowid()])
        params: tuple = ()
        since = (cursor or {}).get("rowid")
        if since is not None:
            changed = (exp.select(sqlguard.column("memory_id")).from_(sqlguard.table(table))
                       .where(exp.GT(this=exp.column("rowid"), expression=exp.Placeholder())))
            stmt = stmt.where(sqlguard.column("memory_id").isin(query=changed))
            params = (int(since),)
        stmt = stmt.order_by(sqlguard.column("memory_id"), sqlguard.column("updated_at"), exp.column("rowid"))
        return stmt.sql(dialect=self.dialect), params, ["id"]

    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        self._unplaced = 0
        sql, params, _ = self.build_select(cursor)
        last_rowid = (cursor or {}).get("rowid")
        rows = self.iter_rows(sql, params)
        groups = itertools.groupby(rows, key=lambda r: r["memory_id"])
        while True:
            chunk = [(mid, list(events)) for mid, events in itertools.islice(groups, MEMORIES_PER_CHUNK)]
            if not chunk:
                break
            for _, events in chunk:
                for row in events:
                    if last_rowid is None or row[ROWID] > last_rowid:
                        last_rowid = row[ROWID]
            payloads = self._payloads([mid for mid, _ in chunk if mid is not None])
            for mid, events in chunk:
                payload = payloads.get(str(mid)) if mid is not None else None
                if payload is None and not _deleted(events):
                    self._unplaced += 1
                yield from self.memory_records(mid, events, payload)
        self.cursor = {"rowid": last_rowid}
        if self._unplaced:
            self.warn_unplaced(self._unplaced)

    def warn_unplaced(self, count: int) -> None:
        """Live memories whose user could not be read: say where we looked and what to set."""
        if self.payloads is None:
            looked = ", ".join(str(p) for p in self.qdrant_places)
            where = f"no qdrant local storage found (looked in {looked})"
        else:
            where = "no qdrant point for them in " + ", ".join(str(p) for p in self.payloads.paths)
        self.warn(f"{count} live mem0 memor{'y has' if count == 1 else 'ies have'} no user: {where}; "
                  f"their subject is unknown, so different users' memories may be compared. Set "
                  f"qdrant_path in the source to mem0's vector_store path (mem0's default is "
                  f"{MEM0_DEFAULT_QDRANT})")

    def _payloads(self, memory_ids: list) -> dict[str, dict]:
        if self.payloads is None or not memory_ids:
            return {}
        before = self.payloads.points_read
        found = self.payloads.lookup([str(m) for m in memory_ids])
        self.rows_read += self.payloads.points_read - before
        for err in self.payloads.errors:
            self.warn(f"qdrant storage: {err}")
        self.payloads.errors.clear()
        return found

    def memory_records(self, memory_id, events: list[dict], payload: dict | None) -> Iterator[Record]:
        """The facts of one memory from its ordered events (see the module docstring)."""
        payload = payload or {}
        subject = next((str(payload[k]) for k in SUBJECT_KEYS if payload.get(k)), None)
        expires_at = expiry_of(payload.get("expiration_date"))
        category = payload.get("category") if isinstance(payload.get("category"), str) else None
        versions: list[dict] = []
        deleted_upto = 0
        for row in events:
            event = str(row["event"] or "").upper()
            if event == "DELETE" or _truthy(row["is_deleted"]):
                deleted_upto = len(versions)
                continue
            if row["new_memory"] is not None and str(row["new_memory"]).strip():
                versions.append(row)
        table = self.table_name
        for i, row in enumerate(versions):
            rec = Record(source=self.source.name, table=table, pk={"id": _text(row["id"])},
                         text=_text(row["new_memory"]), subject=subject, category=category,
                         created_at=self._time(row, "created_at"), updated_at=self._time(row, "updated_at"),
                         expires_at=expires_at)
            if i < deleted_upto:
                rec.status = STATUS_DELETED
            if i + 1 < len(versions):
                newer = versions[i + 1]
                rec.replaced_by = {"id": _text(newer["id"])}
                rec.replaced_note = (f"mem0 {str(newer['event'] or 'UPDATE').upper()} {_text(newer['id'])} "
                                     f"of memory {memory_id} replaced this text with {_text(newer['new_memory'])!r}")
            yield rec

    def _time(self, row: dict, column: str) -> float | None:
        try:
            return parse_timestamp(row[column])
        except ValueError:
            self.warn(f"{self.table_name} {row['id']}: {column} {row[column]!r} is not a timestamp; ignored")
            return None


def _deleted(events: list[dict]) -> bool:
    """The memory's last event deleted it (mem0 dropped its point too)."""
    last = events[-1] if events else None
    return last is not None and (str(last["event"] or "").upper() == "DELETE" or _truthy(last["is_deleted"]))


def _truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "t", "yes")


def _text(value) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)
