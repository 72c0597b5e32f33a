"""Chroma's persistent store (`chroma.sqlite3`), as chromadb and AutoGen's ChromaDBVectorMemory write it.

`chromadb.PersistentClient(path)` keeps every collection's documents and metadata in SQLite:
- `collections(id, name, …)` and `segments(id, type, scope, collection)`: each collection has
  a METADATA segment whose rows hold the documents;
- `embeddings(id INTEGER PRIMARY KEY, segment_id, embedding_id, seq_id, created_at)`: one row
  per record; `embedding_id` is the id given to `add()`, `seq_id` the write-ahead-log position
  of the record's last write (an `update()`/`upsert()` moves it; chroma < 0.5 kept it as a
  big-endian BLOB), `created_at` SQLite's CURRENT_TIMESTAMP of the first write;
- `embedding_metadata(id, key, string_value, int_value, float_value, bool_value)`: the
  document under key `chroma:document`, the caller's metadata under its own keys.
The vectors themselves live in the HNSW files beside it and are not read.

A fact per record with a document: pk {collection, id}; the subject is the metadata's
`user_id` (or `user`, `agent_id`, `session_id`…), else the collection name (AutoGen apps
keep one collection per user or topic, and records of different collections are never
compared); `created_at` from the metadata when it has one (`created_at`, `timestamp`…),
else the row's; `category` from the metadata's `category`. Incremental reads take the
rows whose `seq_id` passed the cursor.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import Match, has_columns
from memwatch_overlay.connectors.presets.generic import CREATED_NAMES, EXPIRES_NAMES, SUBJECT_NAMES, UPDATED_NAMES

DOCUMENT_KEY = "chroma:document"
TABLE = "embeddings"
METADATA_CHUNK = 500        # records per embedding_metadata lookup
_ROWS_SQL = """
SELECT e.id AS rid, e.embedding_id AS embedding_id, e.seq_id AS seq_id, e.created_at AS created_at,
       c.name AS collection
FROM embeddings AS e
JOIN segments AS s ON s.id = e.segment_id
JOIN collections AS c ON c.id = s.collection
WHERE s.scope = 'METADATA' {since}
ORDER BY e.id
"""
_METADATA_SQL = ("SELECT id, key, string_value, int_value, float_value, bool_value FROM embedding_metadata "
                 "WHERE id IN ({marks})")


def seq_number(value: Any) -> int | None:
    """`embeddings.seq_id` as an integer (chroma < 0.5 stored big-endian bytes)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return int.from_bytes(bytes(value), "big")
    return value if isinstance(value, int) else None


def metadata_value(string_value, int_value, float_value, bool_value):
    for v in (string_value, int_value, float_value):
        if v is not None:
            return v
    return None if bool_value is None else bool(bool_value)


def first_of(meta: dict, names: Iterable[str]):
    lowered = {k.lower(): v for k, v in meta.items()}
    for name in names:
        v = lowered.get(name)
        if v not in (None, ""):
            return v
    return None


class ChromaCollections(SqliteConnector):
    preset = "chroma"
    description = "Chroma persistent store (chroma.sqlite3: documents and metadata of every collection)"
    defaults = dict(table=TABLE, id=["collection", "id"], text=DOCUMENT_KEY, subject="user_id",
                    created_at="created_at")
    fixed_mapping = True       # the layout is read as described above; mapping keys do not apply
    row_local = False          # a record joins three tables

    @classmethod
    def match(cls, tables):
        reasons = has_columns(tables, "embeddings", {"id", "segment_id", "embedding_id", "seq_id", "created_at"})
        if reasons is None or has_columns(tables, "embedding_metadata", {"id", "key", "string_value"}) is None \
                or has_columns(tables, "segments", {"id", "scope", "collection"}) is None:
            return None
        reasons.append("embedding_metadata (documents under 'chroma:document') and segments/collections")
        return Match(cls.preset, 1.0, reasons, dict(cls.defaults))

    # -- reading -----------------------------------------------------------------------
    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        since = (cursor or {}).get("seq")
        sql = _ROWS_SQL.format(since="AND e.seq_id > ?" if since is not None else "")
        newest = since
        chunk: list[dict] = []
        for row in self.iter_rows(sql, (since,) if since is not None else ()):
            seq = seq_number(row["seq_id"])
            if seq is not None and (newest is None or seq > newest):
                newest = seq
            chunk.append(row)
            if len(chunk) >= METADATA_CHUNK:
                yield from self._records(chunk)
                chunk = []
        yield from self._records(chunk)
        self.cursor = {"seq": newest}

    def keys(self) -> Iterator[dict[str, str]]:
        before = self.rows_read
        try:
            for row in self.iter_rows(_ROWS_SQL.format(since=""), ()):
                self.keys_read += 1
                yield {"collection": str(row["collection"]), "id": str(row["embedding_id"])}
        finally:
            self.rows_read = before

    def _records(self, rows: list[dict]) -> Iterator[Record]:
        if not rows:
            return
        metas: dict[int, dict] = {r["rid"]: {} for r in rows}
        sql = _METADATA_SQL.format(marks=", ".join("?" * len(metas)))
        for rid, key, *values in self._execute(sql, tuple(metas)).fetchall():
            metas[rid][key] = metadata_value(*values)
        for row in rows:
            rec = self.record_of(row, metas[row["rid"]])
            if rec is not None:
                yield rec

    def record_of(self, row: dict, meta: dict) -> Record | None:
        text = meta.pop(DOCUMENT_KEY, None)
        if not isinstance(text, str) or not text.strip():
            return None
        meta = {k: v for k, v in meta.items() if not k.startswith("chroma:")}
        subject = first_of(meta, SUBJECT_NAMES)
        pk = {"collection": str(row["collection"]), "id": str(row["embedding_id"])}
        category = meta.get("category")
        return Record(source=self.source.name, table=TABLE, pk=pk, text=text,
                      subject=str(subject) if subject is not None else str(row["collection"]),
                      created_at=self._time(pk, "created_at", first_of(meta, CREATED_NAMES), row["created_at"]),
                      updated_at=self._time(pk, "updated_at", first_of(meta, UPDATED_NAMES)),
                      expires_at=self._time(pk, "expires_at", first_of(meta, EXPIRES_NAMES)),
                      category=category if isinstance(category, str) and category else None)

    def _time(self, pk: dict, name: str, *values) -> float | None:
        for value in values:
            if value is None or isinstance(value, bool):
                continue
            try:
                return parse_timestamp(value)
            except ValueError:
                self.warn(f"{TABLE} {pk}: {name} {value!r} is not a timestamp; ignored")
        return None
