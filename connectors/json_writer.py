"""Write-back to a JSON or JSON Lines file: rewritten atomically, only if unchanged since read.

A transaction reads the file once (bytes, identity, size, mtime), applies the batch to
the parsed values in memory, and on commit checks that the file on disk is still exactly
what it read. If the bot changed it in the meantime nothing is written and the batch is
retried on the next tick (SourceBusy); otherwise the new content goes to a temporary file
in the same folder, is fsynced, takes the original's permissions and replaces the file by
rename, so a reader sees the old file or the new one, never half of one.

JSON Lines keep every untouched line byte for byte; a changed line is re-serialised in
the file's own style (compact or spaced). A JSON document is re-serialised whole, with
the indentation it had. Records are found by the source's pk (its `id` fields, or the
record's path); images are the record's JSON value, so undo puts back exactly that value.

Not supported (refused with a clear error): presets that read a fixed layout of their
own (the MCP memory server's graph), records held as JSON text inside a string, and
`delete` without `id` (removing an element would move the path of every later one).
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.connectors.json_file import Document, JsonConnector, json_format
from memwatch_overlay.connectors.paths import chain_of
from memwatch_overlay.connectors.writer import Image, Key, SourceBusy, SourceWriter, WriteTxn

RECORD = "@"          # the one image entry: the record's JSON value
LOCATION = "@at"      # key entry: where the record sat (for re-inserting a deleted one)
_UNPARSED = object()


@dataclass
class _Line:
    raw: bytes | None            # the line as read (None once changed or inserted)
    value: Any = _UNPARSED


@dataclass
class _FileState:
    """The file as one transaction (or one plan) read it."""

    path: Path
    data: bytes
    stat: tuple
    fmt: str
    doc: Any = None                                   # JSON: the document
    lines: list[_Line] = field(default_factory=list)  # JSONL
    dirty: bool = False

    def documents(self) -> Iterator[tuple[int | None, Document]]:
        if self.fmt == "json":
            yield None, Document(self.doc)
            return
        for i, line in enumerate(self.lines):
            if line.value is not _UNPARSED:
                yield i, Document(line.value, i + 1)


def _stat(path: Path) -> tuple:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _read_state(path: Path) -> _FileState:
    try:
        data = path.read_bytes()
        st = _stat(path)
    except OSError as exc:
        raise ConnectorError(f"{path}: cannot read ({exc.strerror or exc})") from None
    fmt = json_format(path)
    state = _FileState(path, data, st, fmt)
    if fmt == "json":
        try:
            state.doc = json.loads(data.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ConnectorError(f"{path}: not valid JSON now ({exc}); write-back retried later") from None
        return state
    for raw in data.splitlines(keepends=True):
        line = _Line(raw)
        if raw.strip():
            try:
                line.value = json.loads(raw)
            except ValueError:
                pass                  # kept byte for byte, as the reader skips it
        state.lines.append(line)
    return state


def _pk(key: Key) -> dict:
    return {k: v for k, (_, v) in key.items() if k != LOCATION}


def _field_get(record: Any, name: str) -> Any:
    if not isinstance(record, dict):
        return None
    if name in record:
        return record[name]
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _field_set(record: dict, name: str, value: Any) -> None:
    if name in record or "." not in name:
        record[name] = value
        return
    parts = name.split(".")
    target = record
    for part in parts[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            nxt = target[part] = {}
        target = nxt
    target[parts[-1]] = value


def _fields(record: Any) -> set[str]:
    """Field names a set may use: keys, and keys one object deeper as `a.b`."""
    if not isinstance(record, dict):
        return set()
    out = set()
    for k, v in record.items():
        out.add(k)
        if isinstance(v, dict):
            out.update(f"{k}.{kk}" for kk in v)
    return out


class JsonWriter(SourceWriter):
    kind = "json"

    def __init__(self, connector: JsonConnector, table_name: str | None = None):
        # a JSON source needs no `table` (it only names the records in refs)
        self.connector = connector
        self.source = connector.source
        self.table = table_name or connector.table_name
        if getattr(connector, "fixed_mapping", False) or type(connector).read is not JsonConnector.read:
            raise ConnectorError(f"source {self.source.name!r}: write-back to the {connector.preset} layout "
                                 f"is not supported (it is read by its own rules); use do = \"annotate\"")
        self.path = connector.path or self.source.resolved_path
        self._plan_state: _FileState | None = None
        self._plan_index: dict | None = None

    # -- records -----------------------------------------------------------------------
    def _index(self, state: _FileState) -> dict[tuple, tuple[int | None, tuple, int | None]]:
        """pk -> (line index or None, trail, 1-based line) of every record."""
        index = {}
        for line_idx, doc in state.documents():
            for _, trail in self.connector.select(doc):
                try:
                    chain = chain_of(doc.value, trail)
                except (KeyError, IndexError, TypeError):
                    continue
                pk = self.connector.pk_of(doc, trail, chain)
                if pk is not None:
                    index[tuple(sorted(pk.items()))] = (line_idx, tuple(trail), doc.line)
        return index

    def _plan(self) -> tuple[_FileState, dict]:
        if self._plan_state is None:
            self._plan_state = _read_state(self.path)
            self._plan_index = self._index(self._plan_state)
        return self._plan_state, self._plan_index

    def refresh(self) -> None:
        self._plan_state = self._plan_index = None

    def columns(self) -> list[str]:
        state, index = self._plan()
        out: set[str] = set()
        for line_idx, trail, _ in index.values():
            out |= _fields(_get(state, line_idx, trail))
        return sorted(out)

    def key_columns(self) -> list[str]:
        if self.connector._ids:
            return [rp.spec for rp in self.connector._ids]
        return ["line", "path"] if self.connector.format == "jsonl" else ["path"]

    def check_action(self, do: str, sets: dict) -> str | None:
        if do == "delete" and not self.connector._ids:
            return ("delete on a json source needs `id` in its [[sources]] entry: without it records "
                    "are known by their position, which removing one would shift for every later record")
        return None

    def locate(self, pk: dict[str, str]) -> tuple[Key, Image] | None:
        state, index = self._plan()
        where = index.get(tuple(sorted(pk.items())))
        if where is None:
            return None
        line_idx, trail, line = where
        key = {k: ("text", v) for k, v in pk.items()}
        key[LOCATION] = ("loc", {"line": line, "trail": list(trail)})
        return key, {RECORD: ("json", copy.deepcopy(_get(state, line_idx, trail)))}

    def sample(self, col: str) -> Any:
        from memwatch_overlay.core.timeparse import parse_timestamp
        state, index = self._plan()
        for line_idx, trail, _ in index.values():
            value = _field_get(_get(state, line_idx, trail), col)
            try:
                if value is not None and parse_timestamp(value) is not None:
                    return value
            except ValueError:
                continue
        return None

    def plain(self, image: Image | None) -> dict[str, Any] | None:
        if image is None:
            return None
        record = image[RECORD][1]
        return {name: _field_get(record, name) for name in _fields(record)}

    def holds(self, image: Image, col: str, value: Any) -> bool:
        record = image[RECORD][1]
        current = _field_get(record, col)
        return current == value and type(current) is type(value)

    @contextlib.contextmanager
    def transaction(self) -> Iterator["JsonTxn"]:
        txn = JsonTxn(self, _read_state(self.path))
        yield txn
        if txn.state.dirty:
            txn.commit()


def _get(state: _FileState, line_idx: int | None, trail: tuple) -> Any:
    value = state.doc if line_idx is None else state.lines[line_idx].value
    for step in trail:
        if isinstance(value, str):
            raise ConnectorError(f"{state.path}: the record sits inside JSON text held in a string; "
                                 f"write-back cannot rewrite it")
        value = value[step]
    return value


class JsonTxn(WriteTxn):
    def __init__(self, writer: JsonWriter, state: _FileState):
        self.w = writer
        self.state = state
        self._index: dict | None = None

    def _where(self, key: Key) -> tuple[int | None, tuple] | None:
        if self._index is None:
            self._index = self.w._index(self.state)
        pk = tuple(sorted((k, v) for k, (_, v) in key.items() if k != LOCATION))
        found = self._index.get(pk)
        return None if found is None else found[:2]

    def _parent(self, line_idx: int | None, trail: tuple) -> Any:
        return _get(self.state, line_idx, trail[:-1])

    def _replace(self, line_idx: int | None, trail: tuple, value: Any) -> None:
        if not trail:
            if line_idx is None:
                self.state.doc = value
            else:
                self.state.lines[line_idx] = _Line(None, value)
        else:
            self._parent(line_idx, trail)[trail[-1]] = value
            if line_idx is not None:
                self.state.lines[line_idx].raw = None
        self.state.dirty = True

    def read(self, key: Key) -> Image | None:
        where = self._where(key)
        if where is None:
            return None
        return {RECORD: ("json", copy.deepcopy(_get(self.state, *where)))}

    def update(self, key: Key, values: dict[str, Any]) -> None:
        where = self._where(key)
        if where is None:
            raise ConnectorError(f"{self.state.path}: record {_pk(key)} is gone")
        record = copy.deepcopy(_get(self.state, *where))
        if not isinstance(record, dict):
            raise ConnectorError(f"{self.state.path}: record {_pk(key)} is not an object; "
                                 f"its fields cannot be set")
        for name, value in values.items():
            _field_set(record, name, value)
        self._replace(*where, record)

    def restore(self, key: Key, image: Image) -> None:
        where = self._where(key)
        if where is None:
            raise ConnectorError(f"{self.state.path}: record {_pk(key)} is gone")
        self._replace(*where, copy.deepcopy(image[RECORD][1]))

    def delete(self, key: Key) -> Key:
        where = self._where(key)
        if where is None:
            raise ConnectorError(f"{self.state.path}: record {_pk(key)} is gone")
        line_idx, trail = where
        at_deletion = {**key, LOCATION: ("loc", {"line": None if line_idx is None else line_idx + 1,
                                                 "trail": list(trail)})}
        if not trail:
            if line_idx is None:
                raise ConnectorError(f"{self.state.path}: the record is the whole document; not deleted")
            del self.state.lines[line_idx]
        else:
            parent = self._parent(line_idx, trail)
            del parent[trail[-1]]
            if line_idx is not None:
                self.state.lines[line_idx].raw = None
        self.state.dirty = True
        self._index = None            # positions after it moved
        return at_deletion

    def insert(self, key: Key, image: Image) -> None:
        loc = key[LOCATION][1]
        value = copy.deepcopy(image[RECORD][1])
        trail = tuple(loc["trail"])
        line_idx = None if loc["line"] is None else max(0, min(len(self.state.lines), loc["line"] - 1))
        if not trail:
            if line_idx is None:
                self.state.doc = value
            else:
                self.state.lines.insert(line_idx, _Line(None, value))
        else:
            if line_idx is not None and line_idx >= len(self.state.lines):
                raise ConnectorError(f"{self.state.path}: line {loc['line']} no longer exists")
            parent = self._parent(line_idx, trail)
            if isinstance(parent, list):
                parent.insert(min(int(trail[-1]), len(parent)), value)
            else:
                parent[trail[-1]] = value
            if line_idx is not None:
                self.state.lines[line_idx].raw = None
        self.state.dirty = True
        self._index = None

    # -- commit --------------------------------------------------------------------------
    def commit(self) -> None:
        path = self.state.path
        try:
            unchanged = _stat(path) == self.state.stat and path.read_bytes() == self.state.data
        except OSError:
            unchanged = False
        if not unchanged:
            raise SourceBusy(f"{path}: changed since it was read; nothing written, retried later")
        _atomic_write(path, self._serialise())

    def _serialise(self) -> bytes:
        data = self.state.data
        if self.state.fmt == "json":
            text = data.decode("utf-8-sig")
            m = re.search(r"\n([ \t]+)\S", text)
            indent = (m.group(1) if "\t" in m.group(1) else len(m.group(1))) if m else None
            out = json.dumps(self.state.doc, ensure_ascii=False, indent=indent)
            if text.endswith("\n"):
                out += "\n"
            return (b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b"") + out.encode("utf-8")
        first = next((ln.raw for ln in self.state.lines if ln.raw and ln.raw.strip()), b"")
        compact = b'":' in first and b'": ' not in first
        seps = (",", ":") if compact else (", ", ": ")
        out = []
        for line in self.state.lines:
            if line.raw is not None:
                out.append(line.raw if line.raw.endswith(b"\n") else line.raw + b"\n")
            else:
                out.append(json.dumps(line.value, ensure_ascii=False, separators=seps).encode("utf-8") + b"\n")
        joined = b"".join(out)
        if not data.endswith(b"\n") and joined.endswith(b"\n") and self.state.lines and \
                self.state.lines[-1].raw is not None:
            joined = joined[:-1]     # the file had no final newline and its last line is untouched
        return joined


def _atomic_write(path: Path, data: bytes) -> None:
    """Temp file in the same folder, fsync, original permissions, rename, fsync the folder."""
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".memwatch-tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

