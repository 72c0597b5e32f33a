"""Payloads from qdrant-client's local storage, read without qdrant-client.

mem0 keeps a memory's user in its vector store only. With qdrant in local mode
(`QdrantClient(path=…)`) each collection is `<path>/collection/<name>/storage.sqlite`,
table `points(id TEXT PRIMARY KEY, point BLOB)`: `id` is base64 of the pickled point id,
`point` a pickled `PointStruct`.

Unpickling untrusted bytes can run code, so `SafeUnpickler.find_class` never imports
what a pickle names: every global becomes an inert stand-in (`Inert`) that only
records the arguments and state the pickle hands it. Only plain data comes out
(dicts, lists, strings, numbers); the payload dict is read from the stand-in's state.
"""
from __future__ import annotations

import base64
import io
import pickle
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from memwatch_overlay.connectors.sqlite import open_readonly

STORAGE_FILE = "storage.sqlite"
# qdrant-client pickles the point id with the running Python's default protocol
# (4 up to Python 3.13, 5 from 3.14).
KEY_PROTOCOLS = (4, 5)
_STAND_INS_MAX = 256
LOOKUP_CHUNK = 500          # ids per `IN (…)` query, well under SQLite's variable limit


class Inert:
    """Stand-in for any class a pickle names: holds its arguments and state, runs nothing."""

    __slots__ = ("pickled_name", "args", "kwargs", "state")

    def __new__(cls, *args, **kwargs):
        obj = object.__new__(cls)
        obj.pickled_name, obj.args, obj.kwargs, obj.state = cls.__name__, args, kwargs, None
        return obj

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __call__(self, *args, **kwargs):   # an inert "function" stays inert when called
        return Inert(*args, **kwargs)


_stand_ins: dict[tuple[str, str], type] = {}


class SafeUnpickler(pickle.Unpickler):
    """An Unpickler whose globals are all inert stand-ins; persistent ids are refused."""

    def find_class(self, module: str, name: str):
        key = (module, name)
        cls = _stand_ins.get(key)
        if cls is None:
            cls = type(f"{module}.{name}", (Inert,), {"__slots__": ()})
            if len(_stand_ins) < _STAND_INS_MAX:   # stores name a handful of classes
                _stand_ins[key] = cls
        return cls

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("persistent ids are not supported")


def safe_loads(data: bytes) -> Any:
    return SafeUnpickler(io.BytesIO(bytes(data))).load()


def fields_of(obj: Any) -> dict:
    """The attribute dict of an unpickled object (pydantic v1/v2 state or a plain dict)."""
    if isinstance(obj, dict):
        return obj
    if not isinstance(obj, Inert):
        return {}
    state = obj.state
    if isinstance(state, tuple):                        # (dict state, slot state)
        merged: dict = {}
        for part in state:
            if isinstance(part, dict):
                merged.update(part)
        state = merged
    if not isinstance(state, dict):
        return {}
    inner = state.get("__dict__")
    return inner if isinstance(inner, dict) else state


def point_payload(blob: bytes) -> tuple[str | None, dict]:
    """(point id, payload dict) of one pickled PointStruct; None / {} when absent."""
    fields = fields_of(safe_loads(blob))
    payload = fields.get("payload")
    pid = fields.get("id")
    return (None if pid is None else str(pid)), (payload if isinstance(payload, dict) else {})


def point_keys(point_id: str) -> list[str]:
    """The `points.id` values qdrant-client may have written for `point_id`."""
    keys = []
    for proto in KEY_PROTOCOLS:
        key = base64.b64encode(pickle.dumps(point_id, protocol=proto)).decode("ascii")
        if key not in keys:
            keys.append(key)
    return keys


def collections_in(folder: Path) -> list[Path]:
    """The collections of a qdrant local storage folder (`QdrantClient(path=folder)`):
    `<folder>/collection/*/storage.sqlite`."""
    return sorted(p for p in folder.glob("collection/*/" + STORAGE_FILE) if p.is_file())


def find_storages(store_file: Path) -> list[Path]:
    """qdrant local collections beside a store file: `qdrant/collection/*/storage.sqlite`
    (mem0's history.db next to its qdrant folder) or `collection/*/storage.sqlite`."""
    folder = store_file.parent
    return collections_in(folder / "qdrant") + collections_in(folder)


class QdrantPayloads:
    """Looks up point payloads by id in one or more local collections, read-only."""

    def __init__(self, storages: Iterable[Path]):
        self.paths = list(storages)
        self.conns: list[sqlite3.Connection] = []
        self.points_read = 0
        self.errors: list[str] = []

    def open(self) -> None:
        for path in self.paths:
            try:
                self.conns.append(open_readonly(path))
            except Exception as exc:   # a broken side store costs the subject, not the audit
                self.errors.append(f"{path}: {exc}")

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.conns.clear()

    def lookup(self, point_ids: list[str]) -> dict[str, dict]:
        """point id -> payload for the ids found (bounded by len(point_ids))."""
        out: dict[str, dict] = {}
        for start in range(0, len(point_ids), LOOKUP_CHUNK):
            chunk = point_ids[start:start + LOOKUP_CHUNK]
            keys = [k for pid in chunk for k in point_keys(pid)]
            wanted = set(chunk)
            for conn in self.conns:
                sql = "SELECT point FROM points WHERE id IN (" + ", ".join("?" * len(keys)) + ")"
                try:
                    rows = conn.execute(sql, keys).fetchall()
                except sqlite3.DatabaseError as exc:
                    self.errors.append(str(exc))
                    continue
                self.points_read += len(rows)
                for (blob,) in rows:
                    try:
                        pid, payload = point_payload(blob)
                    except Exception as exc:   # malformed pickle: skip the point, keep going
                        self.errors.append(f"unreadable point: {exc}")
                        continue
                    if pid in wanted and pid not in out:
                        out[pid] = payload
        return out
