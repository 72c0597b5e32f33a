"""JSON and JSON Lines files: records picked by a selector, fields mapped by paths.

A JSON file is parsed whole; a JSONL file is read line by line from a byte-offset
cursor, so a bot appending lines costs only the new lines. The reference for users is
docs/json-sources.md (selector and path syntax, pk, cursor).

Why the JSONL cursor carries a hash of the prefix as well as the offset: some writers
(the MCP memory server) rewrite the whole file on every change, so "the file grew"
does not mean "lines were appended". When the prefix no longer matches, the file is
re-read from the start and the read reports itself as complete (`read_all`).
"""
from __future__ import annotations

import hashlib
import json
import os
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.rules.config import DEFAULT_MAX_LINE_BYTES, MAPPING_KEYS, SourceConfig
from memwatch_overlay.connectors.base import Connector, Record, TableInfo, require_readable_file
from memwatch_overlay.connectors.paths import (
    RecordPath,
    chain_of,
    iter_path_with_trail,
    maybe_json,
    parse_path,
    parse_record_path,
    resolve_record_path,
    trail_to_path,
)

JSONL_SUFFIXES = (".jsonl", ".ndjson")
TIME_FIELDS = ("created_at", "updated_at", "accessed_at", "expires_at")
HASH_WINDOW = 64 * 1024          # bytes of the prefix hashed at each end (see prefix_digest)
DESCRIBE_LINES = 1000            # JSONL lines sampled by describe_file
DESCRIBE_RECORDS = 200           # records per collection sampled by describe_file
UNSUPPORTED_KEYS = ("query", "where", "dsn", "dsn_env")


@dataclass
class Document:
    """One parsed JSON value: the whole file, or one JSONL line (`line` is 1-based)."""

    value: Any
    line: int | None = None


# -- format and errors -----------------------------------------------------------------

# an id quoted in a warning, shortened: a warning stays one short line whatever the file holds
_ID_REPR = reprlib.Repr()
_ID_REPR.maxstring = 60


def json_format(path: Path) -> str:
    """"jsonl" or "json": by suffix, else by whether the first line is a whole value.

    The MCP memory server names its JSON Lines file `memory.json` in older versions, so
    a `.json` file whose first line parses alone and is followed by more is JSONL.
    """
    if path.suffix.lower() in JSONL_SUFFIXES:
        return "jsonl"
    with open(path, "rb") as fh:
        first = b""
        for raw in fh:
            if raw.strip():
                first = raw
                break
        if not first.strip() or not first.endswith(b"\n"):
            return "json"
        try:
            value = loads_hostile(first)
        except ValueError:
            return "json"
        if not isinstance(value, (dict, list)):
            return "json"
        rest = any(raw.strip() for raw in fh)
    return "jsonl" if rest else "json"


SKIP_CHUNK = 1024 * 1024        # bytes read at a time while skipping an over-long line


def read_lines(fh, limit: int) -> Iterator[tuple[bytes | None, int]]:
    """(line, length in bytes) for each line of a binary file, streamed.

    A line longer than `limit` bytes is never held in memory: it is read past in chunks and
    given as (None, its length), or (None, -length) when the file ends before its newline.
    """
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        size = len(raw)
        while True:
            chunk = fh.readline(SKIP_CHUNK)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        yield None, (size if chunk.endswith(b"\n") else -size)


def loads_hostile(raw: bytes | str):
    """json.loads, with the errors hostile input causes as ValueError: nesting deeper than the
    interpreter can follow (RecursionError), an integer past Python's digit limit."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _parse_error(path: Path, exc: json.JSONDecodeError, line: int | None = None) -> str:
    where = f"{path}:{line}:{exc.colno}" if line is not None else f"{path}:{exc.lineno}:{exc.colno}"
    return f"{where}: invalid JSON: {exc.msg}"


def load_json(path: Path) -> tuple[Any, bytes]:
    """Parse a whole JSON file; ConnectorError with file:line:col when it is malformed."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConnectorError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConnectorError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise ConnectorError(f"{path}: empty file, not JSON")
    try:
        return loads_hostile(text), data
    except json.JSONDecodeError as exc:
        raise ConnectorError(_parse_error(path, exc)) from None
    except ValueError as exc:        # too deep, or an integer with thousands of digits
        raise ConnectorError(f"{path}: cannot read this JSON: {str(exc).splitlines()[0]}") from None


def prefix_digest(fh, offset: int) -> str:
    """A hash of bytes [0, offset): the first and last HASH_WINDOW bytes of it.

    Bounded so a poll of a large file costs the same as of a small one; together with
    the file's identity (device, inode) and size it tells "lines were appended" from
    "the file was rewritten".
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(str(offset).encode())
    fh.seek(0)
    h.update(fh.read(min(offset, HASH_WINDOW)))
    if offset > HASH_WINDOW:
        fh.seek(max(HASH_WINDOW, offset - HASH_WINDOW))
        h.update(fh.read(offset - max(HASH_WINDOW, offset - HASH_WINDOW)))
    return h.hexdigest()


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino]


# -- describe (detection) ----------------------------------------------------------------

def describe_file(path: Path) -> list[TableInfo]:
    """The record collections a JSON/JSONL file holds, for detection and hints.

    Each TableInfo's `name` is a valid `records` selector (`$` = each JSONL line, or
    the whole document), its `columns` the field names seen in a sample of records
    (one level of nested objects as `a.b`; `@` when the records are plain strings).
    Collections nested one level inside those records are listed too.
    """
    path = Path(path)
    require_readable_file(path, "JSON file")
    if json_format(path) == "jsonl":
        values = []
        first_error = None
        with open(path, "rb") as fh:
            for n, (raw, _size) in enumerate(read_lines(fh, DEFAULT_MAX_LINE_BYTES), start=1):
                if n > DESCRIBE_LINES:
                    break
                if raw is None or not raw.strip():
                    continue          # blank, or too long to sample
                try:
                    values.append(loads_hostile(raw))
                except ValueError as exc:
                    if first_error is None and isinstance(exc, json.JSONDecodeError) and raw.endswith(b"\n"):
                        first_error = _parse_error(path, exc, n)
        if not values:
            if first_error:
                raise ConnectorError(first_error)
            return []
        return _collections("$", values, nested=True)
    doc, _ = load_json(path)
    tables: list[TableInfo] = []
    if isinstance(doc, list):
        tables += _collections("[*]", doc, nested=True)
    elif isinstance(doc, dict):
        values = list(doc.values())
        if values and all(isinstance(maybe_json(v), dict) for v in values):
            tables += _collections("*", values, nested=True)
        for key, value in doc.items():
            value = maybe_json(value)
            if isinstance(value, list) and value:
                tables += _collections(_step(key) + "[*]", value, nested=True)
    return tables


def _step(key: str) -> str:
    """A selector step for an object key: `name`, or `["a.b"]` when it needs quoting."""
    step = trail_to_path((key,))[1:]
    return step[1:] if step.startswith(".") else step


def _fields(value: Any) -> set[str]:
    value = maybe_json(value)
    if not isinstance(value, dict):
        return {"@"}
    out = set()
    for k, v in value.items():
        out.add(k)
        v = maybe_json(v)
        if isinstance(v, dict):
            out.update(f"{k}.{kk}" for kk in v)
    return out


def _collections(selector: str, records: list, nested: bool) -> list[TableInfo]:
    sample = records[:DESCRIBE_RECORDS]
    columns: set[str] = set()
    for rec in sample:
        columns |= _fields(rec)
    out = [TableInfo(selector, sorted(columns), rowid=False)]
    if nested:
        inner: dict[str, list] = {}
        for rec in sample:
            rec = maybe_json(rec)
            if not isinstance(rec, dict):
                continue
            for k, v in rec.items():
                v = maybe_json(v)
                if isinstance(v, list) and v:
                    inner.setdefault(k, []).extend(v[:DESCRIBE_RECORDS])
        prefix = "" if selector == "$" else selector + "."
        for k, items in inner.items():
            step = _step(k)
            out += _collections((prefix + step if step[0] != "[" else prefix.rstrip(".") + step) + "[*]",
                                items, nested=False)
    return out


# -- the connector -----------------------------------------------------------------------

class JsonConnector(Connector):
    """Records of a JSON or JSONL file, picked by `records` and mapped by paths."""

    kind = "json"
    description = "JSON or JSON Lines file: records chosen by a selector, fields by dotted paths"
    reads_whole_files = True     # a full read parses every byte
    reads_own_file = True

    def __init__(self, source: SourceConfig):
        super().__init__(source)
        self.path: Path | None = None
        self.format: str | None = None
        self._fields: dict[str, RecordPath] = {}
        self._time_fields: list[str] = []       # the TIME_FIELDS mapped in _fields
        self._ids: list[RecordPath] = []
        self._selector: list | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        path = self.source.resolved_path
        if path is None:
            raise ConnectorError(f"source {self.source.name!r}: no path given")
        require_readable_file(path, "JSON file")
        if path.is_dir():
            raise ConnectorError(f"{path}: is a directory, not a JSON file")
        for key in UNSUPPORTED_KEYS:
            if getattr(self.source, key, None):
                raise ConnectorError(f"source {self.source.name!r}: `{key}` does not apply to a json source "
                                     f"(select records with `records`)")
        self.path = path
        self.format = json_format(path)
        self._compile()

    def close(self) -> None:
        self.path = None

    def describe(self) -> list[TableInfo]:
        return describe_file(self.path or self.source.resolved_path)

    def _compile(self) -> None:
        """Parse `records`, `id` and the mapping once, with errors naming the key."""
        name = self.source.name

        def parse(key: str, spec: str) -> RecordPath:
            try:
                return parse_record_path(spec)
            except ValueError as exc:
                raise ConnectorError(f"source {name!r}: {key} = {spec!r}: {exc}") from None

        if not self.source.text:
            raise ConnectorError(f"source {name!r}: `text` (the path of the memory's text) is not mapped")
        self._fields = {k: parse(k, getattr(self.source, k)) for k in MAPPING_KEYS if getattr(self.source, k)}
        self._time_fields = [k for k in TIME_FIELDS if k in self._fields]
        ids = [self.source.id] if isinstance(self.source.id, str) else self.source.id
        self._ids = [parse("id", spec) for spec in ids]
        records = self.source.records
        if records is None or records.strip() in ("$", ""):
            self._selector = None
        else:
            try:
                self._selector = parse_path(records.strip())
            except ValueError as exc:
                raise ConnectorError(f"source {name!r}: records = {records!r}: {exc}") from None

    @property
    def table_name(self) -> str:
        return self.source.table or (self.path or self.source.resolved_path).name

    # -- reading -----------------------------------------------------------------------
    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        """The records of the documents changed since `cursor`. A full read warns once when
        records share an id: the last one read is the fact (the file holds one value of each
        id; an earlier one is an older value or a mistake the user should hear of)."""
        self.read_all = True
        keys: set[int] = set()          # hash of each key read (a full read only)
        shared, first = 0, ""
        for doc in self.iter_documents(cursor):
            for rec in self.records_from(doc):
                if self.read_all:
                    key = hash(tuple(rec.pk.items()))
                    if key in keys:
                        shared += 1
                        if not first:
                            line = f":{doc.line}" if doc.line is not None else ""
                            first = f"{self.path}{line} id {_ID_REPR.repr(', '.join(rec.pk.values()))}"
                    else:
                        keys.add(key)
                yield rec
        if shared:
            self.warn(f"{first}: {shared} record(s) share an id with an earlier record of the file; "
                      "the last one read is kept")

    def iter_documents(self, cursor: dict | None) -> Iterator[Document]:
        """Parsed documents changed since `cursor`; sets `self.cursor` when exhausted."""
        if self.format == "jsonl":
            yield from self._iter_jsonl(cursor)
        else:
            yield from self._iter_json(cursor)

    def _iter_json(self, cursor: dict | None) -> Iterator[Document]:
        st = os.stat(self.path)
        if (cursor and cursor.get("format") == "json" and cursor.get("file") == _identity(st)
                and cursor.get("size") == st.st_size and cursor.get("mtime_ns") == st.st_mtime_ns):
            self.read_all = False
            self.cursor = cursor
            return
        doc, data = load_json(self.path)
        digest = hashlib.blake2b(data, digest_size=16).hexdigest()
        new_cursor = {"format": "json", "file": _identity(st), "size": len(data),
                      "mtime_ns": st.st_mtime_ns, "hash": digest}
        if cursor and cursor.get("format") == "json" and cursor.get("hash") == digest:
            self.read_all = False          # touched, not changed
            self.cursor = new_cursor
            return
        yield Document(doc)
        self.cursor = new_cursor

    def _iter_jsonl(self, cursor: dict | None) -> Iterator[Document]:
        path = self.path
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            start, line_no = 0, 0
            if cursor and cursor.get("format") == "jsonl":
                offset = int(cursor.get("offset", 0))
                same = (cursor.get("file") == _identity(st) and st.st_size >= offset
                        and prefix_digest(fh, offset) == cursor.get("prefix"))
                if same:
                    start, line_no = offset, int(cursor.get("line", 0))
                    if cursor.get("open"):
                        line_no -= 1   # the newline still to come ends the line already read
                    self.read_all = False
                    if st.st_size == offset:
                        self.cursor = cursor
                        return
            fh.seek(start)
            pos = start
            done_pos, done_line = start, line_no
            open_line = False
            limit = self.source.max_line_bytes
            for raw, size in read_lines(fh, limit):
                line_no += 1
                pos += abs(size)
                if raw is None:
                    if size > 0:     # a whole line, too long to read: skipped (a torn last line waits)
                        self.warn(f"{path}:{line_no}: line of {size} bytes is longer than max_line_bytes = "
                                  f"{limit}; line skipped")
                        done_pos, done_line = pos, line_no
                    continue
                complete = raw.endswith(b"\n")
                if not raw.strip():
                    if complete:
                        done_pos, done_line = pos, line_no
                    continue
                self.rows_read += 1
                try:
                    value = loads_hostile(raw)
                except UnicodeDecodeError:
                    if complete:
                        self.warn(f"{path}:{line_no}: not UTF-8 text; line skipped")
                        done_pos, done_line = pos, line_no
                    continue
                except json.JSONDecodeError as exc:
                    if complete:
                        self.warn(_parse_error(path, exc, line_no) + "; line skipped")
                        done_pos, done_line = pos, line_no
                    # else: the writer is still writing this last line; read it next time
                    continue
                except ValueError as exc:    # nested too deeply, an integer of thousands of digits
                    if complete:
                        self.warn(f"{path}:{line_no}: cannot read this JSON ({str(exc).splitlines()[0]}); "
                                  "line skipped")
                        done_pos, done_line = pos, line_no
                    continue
                if not complete and not isinstance(value, (dict, list)):
                    continue   # `12` may yet become `123`: wait for the newline
                done_pos, done_line = pos, line_no
                open_line = not complete
                yield Document(value, line_no)
            self.cursor = {"format": "jsonl", "file": _identity(st), "offset": done_pos,
                           "line": done_line, "prefix": prefix_digest(fh, done_pos), "open": open_line}

    # -- document -> records -----------------------------------------------------------
    def select(self, doc: Document) -> Iterator[tuple[Any, tuple]]:
        """(record, trail) pairs: what `records` picks in one document."""
        if self._selector is None:
            if self.format == "jsonl":
                yield doc.value, ()
                return
            yield from iter_path_with_trail(doc.value, default_selector(doc.value))
            return
        yield from iter_path_with_trail(doc.value, self._selector)

    def records_from(self, doc: Document) -> Iterator[Record]:
        for value, trail in self.select(doc):
            if self.format == "json":
                self.rows_read += 1
            try:
                rec = self.to_record(doc, value, trail)
            except (RecursionError, ValueError) as exc:   # a value too deep or too long to turn into text
                self.warn(f"{self._where(doc, trail)}: cannot read this record "
                          f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); skipped")
                continue
            if rec is not None:
                yield rec

    def record_path(self, doc: Document, trail: tuple) -> str:
        return trail_to_path(trail)

    def pk_of(self, doc: Document, trail: tuple, chain: list) -> dict[str, str] | None:
        if self._ids:
            pk = {}
            for rp in self._ids:
                value = resolve_record_path(rp, chain)
                if value is None or isinstance(value, (dict, list)):
                    self.warn(f"{self._where(doc, trail)}: id {rp.spec!r} is missing or not a scalar; record skipped")
                    return None
                pk[rp.spec] = _text(value)
            return pk
        if doc.line is not None:
            return {"line": str(doc.line), "path": trail_to_path(trail)}
        return {"path": trail_to_path(trail)}

    def _where(self, doc: Document, trail: tuple) -> str:
        line = f":{doc.line}" if doc.line is not None else ""
        return f"{self.path}{line} {trail_to_path(trail)}"

    def field(self, key: str, chain: list) -> Any:
        rp = self._fields.get(key)
        return None if rp is None else resolve_record_path(rp, chain)

    def to_record(self, doc: Document, value: Any, trail: tuple) -> Record | None:
        chain = chain_of(doc.value, trail)
        fields = self._fields         # (only the mapped fields are resolved: the rest are None)
        rp = fields.get("text")
        text = None if rp is None else resolve_record_path(rp, chain)
        if isinstance(text, (dict, list)):
            text = json.dumps(text, ensure_ascii=False, sort_keys=True)
        if text is None or isinstance(text, bool) or not str(text).strip():
            return None
        pk = self.pk_of(doc, trail, chain)
        if pk is None:
            return None
        times = dict.fromkeys(TIME_FIELDS)
        for key in self._time_fields:
            raw = resolve_record_path(fields[key], chain)
            try:
                times[key] = parse_timestamp(raw)
            except ValueError:
                self.warn(f"{self._where(doc, trail)}: {key} {raw!r} is not a timestamp; ignored")
        count = self.field("access_count", chain)
        try:
            count = int(count or 0)
        except (TypeError, ValueError):
            count = 0
        return Record(source=self.source.name, table=self.table_name, pk=pk, text=str(text),
                      subject=_opt_text(self.field("subject", chain)),
                      key=_opt_text(self.field("key", chain)),
                      category=_opt_text(self.field("category", chain)),
                      access_count=count, **times)


def default_selector(doc: Any) -> list:
    """Records when `records` is unset: a list's elements, or an object's values."""
    doc = maybe_json(doc)
    if isinstance(doc, dict):
        lists = [k for k, v in doc.items() if isinstance(v, list)]
        if doc and all(isinstance(maybe_json(v), dict) for v in doc.values()):
            return ["*"]          # objects keyed by id
        if len(lists) == 1:
            return [lists[0], "*"]  # {"memories": [...]}
    return ["*"]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _opt_text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return _text(value) or None
