"""LanceDB tables (`<folder>/<table>.lance`), read-only through the `lancedb` package (the [lancedb] extra).

CrewAI 1.x keeps its memory in LanceDB (`memories.lance`); any app may. A LanceDB table is a
Lance dataset: immutable data fragments plus one manifest per version under `_versions/`.
Writers never change a fragment: an append adds fragments, a delete writes a deletion file,
an update (and CrewAI's update(), a delete + add) writes the new rows into new fragments,
and compaction rewrites old rows into new fragments. So:

- `has_changes()` compares the table's version with the last one read (nothing changed,
  nothing read);
- an incremental read takes the rows of fragments newer than any seen before
  (`_rowid >= (max fragment + 1) << 32`: Lance's row address is fragment id << 32 | offset),
  which covers appends, updates and compaction; deletions are found by the deletion pass,
  which reads the key column only.
The folder is only read: lancedb opens the dataset at its latest version and writes nothing
(tests/test_connector_lancedb.py checks the bytes). TARGET may be the database folder or a
`<table>.lance` folder itself.
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any, Iterator

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.rules.config import SourceConfig
from memwatch_overlay.connectors.base import Record, TableInfo
from memwatch_overlay.connectors.tabular import TableConnector, _pk_text

LANCE_SUFFIX = ".lance"
BATCH_ROWS = 2048
ROW_ID = "_rowid"
FRAGMENT_SHIFT = 32
_MANIFEST_NAME = re.compile(r"(\d{1,20})\.manifest")
_INVERTED_NAMES = 1 << 63      # a name above this is 2**64 - 1 - version


def _lancedb():
    try:
        import lancedb
    except ImportError:
        raise ConnectorError("reading LanceDB needs the [lancedb] extra "
                             "(pip install 'memwatch-overlay[lancedb]')") from None
    return lancedb


def latest_manifest(table_dir: Path) -> Path | None:
    """The manifest of a table's latest version, told from the names in its `_versions`
    folder without opening it: `<2**64 - 1 - version>.manifest` (Lance's current naming, 20
    digits) or `<version>.manifest` (the older one). None when it holds no manifest."""
    try:
        names = os.listdir(table_dir / "_versions")
    except OSError:
        return None
    best: tuple[int, str] | None = None
    for name in names:
        m = _MANIFEST_NAME.fullmatch(name)
        if m is None:
            continue
        n = int(m.group(1))
        version = (1 << 64) - 1 - n if n >= _INVERTED_NAMES else n
        if best is None or version > best[0]:
            best = (version, name)
    return None if best is None else table_dir / "_versions" / best[1]


def folder_signature(path: Path) -> list[list[str]] | None:
    """What describe_folder(path) reads, named: each table and the manifest of its latest
    version (a manifest is never rewritten, and it holds the schema). None when a table has
    no manifest by a known name."""
    folder, only = split_target(path)
    out = []
    for table_dir in lance_tables(folder):
        if only is not None and table_dir.name[: -len(LANCE_SUFFIX)] != only:
            continue
        manifest = latest_manifest(table_dir)
        if manifest is None:
            return None
        out.append([table_dir.name, manifest.name])
    return out


def is_lance_table(path: Path) -> bool:
    return path.is_dir() and path.suffix == LANCE_SUFFIX and (path / "_versions").is_dir()


def lance_tables(folder: Path) -> list[Path]:
    """The `<table>.lance` datasets directly in `folder` (a LanceDB database folder)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if is_lance_table(p))


def split_target(path: Path) -> tuple[Path, str | None]:
    """(database folder, table) for a database folder or a `<table>.lance` folder."""
    if is_lance_table(path):
        return path.parent, path.name[: -len(LANCE_SUFFIX)]
    return path, None


def describe_folder(path: Path) -> list[TableInfo]:
    """Tables and columns of a LanceDB folder, read from each dataset's schema."""
    folder, only = split_target(path)
    db = _connect(folder)
    out = []
    for table_dir in lance_tables(folder):
        name = table_dir.name[: -len(LANCE_SUFFIX)]
        if only is not None and name != only:
            continue
        try:
            schema = db.open_table(name).schema
        except Exception as exc:    # a damaged dataset: name it, keep the others
            raise ConnectorError(f"{table_dir}: not a readable LanceDB table ({exc})") from None
        out.append(TableInfo(name, [f.name for f in schema], [], rowid=False))
    return out


def _connect(folder: Path):
    lancedb = _lancedb()
    if not folder.is_dir():
        raise ConnectorError(f"{folder}: no such folder")
    try:
        return lancedb.connect(str(folder))
    except Exception as exc:
        raise ConnectorError(f"{folder}: cannot open as a LanceDB database ({exc})") from None


class LanceConnector(TableConnector):
    """One table of a LanceDB folder, mapped column by column like a SQL table."""

    kind = "lancedb"
    description = "LanceDB table (a <table>.lance dataset), read-only; columns mapped in memwatch.toml"
    row_local = True
    extra_columns: tuple[str, ...] = ()   # columns a preset reads beyond the mapping (absent ones skipped)

    def __init__(self, source: SourceConfig):
        super().__init__(source)
        self._db = None
        self.table = None
        self._tables: list[TableInfo] | None = None
        self._version: int | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> None:
        path = self.source.resolved_path
        if path is None:
            raise ConnectorError(f"source {self.source.name!r}: no path given")
        if not path.exists():
            raise ConnectorError(f"{path}: no such folder")
        folder, table = split_target(path)
        if not folder.is_dir():
            raise ConnectorError(f"{folder}: no such folder")
        if table is not None and not self.source.table:
            self.source = dataclasses.replace(self.source, table=table)
        self._db = None             # connected when first read: an answered re-audit never imports lancedb
        self._tables = None
        self.table = None

    def close(self) -> None:
        self._db = None
        self.table = None

    @property
    def db(self):
        if self._db is None:
            self._db = _connect(self.folder)
        return self._db

    @property
    def folder(self) -> Path:
        return split_target(self.source.resolved_path)[0]

    def watch_paths(self) -> list[Path]:
        if not self.source.table:
            return [self.folder]
        return [self.folder / (self.source.table + LANCE_SUFFIX) / "_versions"]

    def snapshot_files(self) -> list[Path] | None:
        """The manifest of the table version a full read would read now: Lance never rewrites a
        data file or a manifest (every write makes a new version with a manifest of its own), so
        the same manifest bytes are the same rows. None without a table or a manifest by a
        known name (`_versions/<2**64 - 1 - version>.manifest`, or `<version>.manifest`)."""
        if not self.source.table:
            return None
        manifest = latest_manifest(self.folder / (self.source.table + LANCE_SUFFIX))
        return None if manifest is None else [manifest]

    def unchanged_cursor(self, cursor: dict) -> dict:
        """(the version the cursor names is the one has_changes() compares with)"""
        self._version = cursor.get("version")
        return dict(cursor)

    def describe(self) -> list[TableInfo]:
        if self._tables is None:
            self._tables = describe_folder(self.folder)
        return self._tables

    def _open_table(self):
        if not self.source.table:
            raise ConnectorError(f"source {self.source.name!r}: give `table` (tables: "
                                 f"{', '.join(t.name for t in self.describe()) or 'none'})")
        self.table_info(self.source.table)        # names the tables when it is not there
        try:
            if self.table is None:
                self.table = self.db.open_table(self.source.table)
            else:
                self.table.checkout_latest()
        except Exception as exc:
            raise ConnectorError(f"{self.source.target}: cannot read table {self.source.table!r} ({exc})") from None
        return self.table

    def has_changes(self) -> bool:
        version = self._open_table().version
        changed = version != self._version
        self._version = version
        return changed

    def query_columns(self) -> list[str]:
        return self.table_info(self.source.table).columns

    def pk_columns(self, columns: list[str]) -> list[str]:
        if not self.source.id:
            raise ConnectorError(f"source {self.source.name!r}: set `id` (the column that identifies a row; "
                                 f"columns: {', '.join(columns)})")
        return super().pk_columns(columns)

    # -- reading -----------------------------------------------------------------------
    def _scan(self, columns: list[str], where: str | None) -> Iterator[dict[str, Any]]:
        table = self._open_table()
        query = table.search().with_row_id(True).select(columns)
        conds = [c for c in (self.source.where, where) if c]
        if conds:
            query = query.where(" AND ".join(f"({c})" for c in conds))
        try:
            for batch in query.to_batches(BATCH_ROWS):
                rows = batch.to_pylist()
                self.rows_read += len(rows)
                yield from rows
        except Exception as exc:
            raise ConnectorError(f"{self.source.target}: read of {self.source.table!r} failed ({exc})") from None

    def read(self, cursor: dict | None = None) -> Iterator[Record]:
        columns = self.query_columns()
        mapping = self.mapping(columns)
        pks = self.pk_columns(columns)
        extra = [c for c in self.extra_columns if c in columns]
        wanted = list(dict.fromkeys([*pks, *(c for c, _ in mapping.values()), *extra]))
        table = self._open_table()
        version = table.version
        cursor = cursor or {}
        since = cursor.get("fragment")
        self.read_all = since is None
        if since is not None and cursor.get("version") == version:
            self.cursor = dict(cursor)
            return
        where = f"{ROW_ID} >= {(int(since) + 1) << FRAGMENT_SHIFT}" if since is not None else None
        newest = since
        for row in self._scan(wanted, where):
            fragment = int(row[ROW_ID]) >> FRAGMENT_SHIFT
            if newest is None or fragment > newest:
                newest = fragment
            rec = self.row_to_record(row, pks, mapping)
            if rec is not None:
                yield rec
        self._version = version
        self.cursor = {"version": version, "fragment": newest}

    def keys(self) -> Iterator[dict[str, str]]:
        pks = self.pk_columns(self.query_columns())
        before = self.rows_read
        try:
            for row in self._scan(pks, None):
                self.keys_read += 1
                yield {p: _pk_text(row.get(p)) for p in pks}
        finally:
            self.rows_read = before
