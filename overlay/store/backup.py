"""JSONL export and import of the overlay: backups, and moving an overlay between machines.

One JSON object per line, in a fixed order so that an export of an import of an export
is byte-identical to the first export:

    {"type": "header", "format": "memwatch-overlay-export", "schema_version": 2}
    {"type": "source", "name": "bot", ...}
    {"type": "fact", "source": "bot", "ref": ..., ...}
    {"type": "contradiction", "older": REF, "newer": REF, ...}
    {"type": "run", ...}

Each kind in the order its rows were written. Row ids are internal and never exported
(facts point at their source by name, contradictions at facts by ref); an import writes
the rows in the same order, so the copy lists facts as the original did. Every other column is exported under its own name,
so columns added by later migrations travel without changes here. An import goes into an
empty overlay only, in one transaction: a bad line (named by file and line number)
leaves the overlay as it was.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import IO, Any

from memwatch_overlay.core.errors import ConfigError, OverlayError
from memwatch_overlay.overlay.store.database import SCHEMA_VERSION, OverlayStore

FORMAT = "memwatch-overlay-export"
_HIDDEN = {"sources": {"id"}, "facts": {"id", "source_id"}, "contradictions": {"id", "older_id", "newer_id"},
           "runs": {"id"}}
# Columns a fact line carries only when they are not NULL (an import reads a missing one as
# NULL): `category_given` (v10) is NULL for every fact whose source gives no category and for
# every fact an older overlay held, so their exports stay byte for byte what they were.
_OMITTED_WHEN_NULL = frozenset({"category_given"})


def _columns(store: OverlayStore, table: str) -> list[str]:
    return [c for c in store.table_columns(table) if c not in _HIDDEN[table]]


def _line(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def export_overlay(store: OverlayStore, out: IO[str]) -> dict:
    """Write the whole overlay to `out`; returns counts per record type."""
    counts = {"source": 0, "fact": 0, "contradiction": 0, "run": 0}
    out.write(_line({"type": "header", "format": FORMAT, "schema_version": SCHEMA_VERSION}))
    with store.transaction():   # one consistent snapshot
        cols = _columns(store, "sources")
        for row in store.conn.execute(f"SELECT {', '.join(cols)} FROM sources ORDER BY id"):
            out.write(_line({"type": "source", **dict(zip(cols, row))}))
            counts["source"] += 1
        cols = _columns(store, "facts")
        for row in store.conn.execute(
                f"SELECT s.name, {', '.join('f.' + c for c in cols)} FROM facts f "
                "JOIN sources s ON s.id = f.source_id ORDER BY f.id"):
            fact = {c: v for c, v in zip(cols, row[1:]) if v is not None or c not in _OMITTED_WHEN_NULL}
            out.write(_line({"type": "fact", "source": row[0], **fact}))
            counts["fact"] += 1
        cols = _columns(store, "contradictions")
        for row in store.conn.execute(
                f"SELECT o.ref, n.ref, {', '.join('c.' + c for c in cols)} FROM contradictions c "
                "JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id ORDER BY c.id"):
            out.write(_line({"type": "contradiction", "older": row[0], "newer": row[1], **dict(zip(cols, row[2:]))}))
            counts["contradiction"] += 1
        cols = _columns(store, "runs")
        for row in store.conn.execute(f"SELECT {', '.join(cols)} FROM runs ORDER BY id"):
            out.write(_line({"type": "run", **dict(zip(cols, row))}))
            counts["run"] += 1
    return counts


def export_file(store: OverlayStore, path: str | Path) -> dict:
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as out:
            counts = export_overlay(store, out)
        tmp.replace(path)
    except OSError as exc:
        raise OverlayError(f"{path}: cannot write the export ({exc.strerror or exc})") from None
    return counts


class _Importer:
    def __init__(self, store: OverlayStore, name: str):
        self.store = store
        self.name = name
        self.columns = {t: set(_columns(store, t)) for t in _HIDDEN}
        self.source_ids: dict[Any, int] = {}      # by the "name" an export line gives
        self.counts = {"source": 0, "fact": 0, "contradiction": 0, "run": 0}
        self.lineno = 0

    def fail(self, message: str):
        raise ConfigError(message, path=f"{self.name}:{self.lineno}")

    def insert(self, table: str, record: dict, extra: dict | None = None) -> int:
        unknown = sorted(set(record) - self.columns[table])
        if unknown:
            self.fail(f"unknown field {unknown[0]!r} for a {table[:-1]} (is the export from a newer version?)")
        values = {**record, **(extra or {})}
        for key, value in values.items():
            if isinstance(value, (dict, list)):
                self.fail(f"field {key!r} must be a string, a number or null")
        cols = list(values)
        try:
            cur = self.store.conn.execute(
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [values[c] for c in cols])
        except (sqlite3.Error, OverlayError) as exc:   # a duplicate ref, a NOT NULL column left out…
            self.fail(f"cannot import this {table[:-1]}: {exc}")
        return cur.lastrowid

    def record(self, obj: dict) -> None:
        kind = obj.pop("type", None)
        if kind == "source":
            self.source_ids[obj.get("name")] = self.insert("sources", obj)
        elif kind == "fact":
            source = obj.pop("source", None)
            if source not in self.source_ids:
                self.fail(f"fact of unknown source {source!r} (its source line must come first)")
            self.insert("facts", obj, {"source_id": self.source_ids[source]})
        elif kind == "contradiction":
            ids = [self.store.fact_id(obj.pop(end, None) or "") for end in ("older", "newer")]
            if None in ids:
                self.fail("contradiction between facts that are not in the file")
            self.insert("contradictions", obj, {"older_id": ids[0], "newer_id": ids[1]})
        elif kind == "run":
            self.insert("runs", obj)
        else:
            self.fail(f"unknown record type {kind!r}")
        self.counts[kind] += 1


def import_overlay(store: OverlayStore, lines, name: str = "<input>") -> dict:
    """Load an export into `store`, which must be empty; all or nothing."""
    if not store.is_empty():
        raise OverlayError(f"{store.label}: the overlay is not empty; import into a new overlay file")
    imp = _Importer(store, name)
    with store.transaction():
        header_seen = False
        for imp.lineno, text in enumerate(lines, 1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as exc:
                imp.fail(f"not valid JSON ({exc.msg} at column {exc.colno})")
            if not isinstance(obj, dict):
                imp.fail("each line must be a JSON object")
            if not header_seen:
                if obj.get("type") != "header" or obj.get("format") != FORMAT:
                    imp.fail(f"not a memwatch-overlay export (the first line must be its {FORMAT} header)")
                version = obj.get("schema_version")
                if not isinstance(version, int) or version > SCHEMA_VERSION:
                    imp.fail(f"export of overlay schema v{version}; this memwatch-overlay reads up to "
                             f"v{SCHEMA_VERSION}: upgrade it")
                header_seen = True
                continue
            imp.record(obj)
        if not header_seen:
            raise ConfigError("empty file: not a memwatch-overlay export", path=name)
    return imp.counts


def import_file(store: OverlayStore, path: str | Path) -> dict:
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            return import_overlay(store, f, str(path))
    except FileNotFoundError:
        raise ConfigError("file not found", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text ({exc.reason})", path=str(path)) from None
