"""How big is a source? A cheap estimate of its record count, for the progress line.

Never part of a read and never an error: anything it cannot tell cheaply is None.

- SQLite: ``count(*)`` of the mapped table (a preset's table when the source names none),
  on the read-only connection; a `query` source is not counted (it could be a full scan).
- JSON Lines: the file's size times the lines per byte of its first SAMPLE bytes (an
  estimate, shown with "~").
- JSON: the file's size only (`size_bytes`): records cannot be counted without parsing.
"""
from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass
from pathlib import Path

SAMPLE = 256 * 1024


@dataclass(frozen=True)
class SizeEstimate:
    records: int | None = None      # expected records, when it can be told
    exact: bool = False             # records is a count (SQLite), not an extrapolation
    size_bytes: int | None = None   # the file's size, when the source is a file


def estimate(source) -> SizeEstimate:
    """The SizeEstimate of one SourceConfig (SizeEstimate() when nothing is cheap to tell)."""
    try:
        path = source.resolved_path
        if path is None or not stat.S_ISREG(os.stat(path).st_mode):
            return SizeEstimate()     # a FIFO or device would block an estimate forever
        if source.connector == "sqlite" and not source.query:
            return _sqlite(dataclasses.replace(source, path=str(path)))
        if source.connector == "json":
            return _json(path)
    except Exception:               # noqa: BLE001 - an estimate never fails an audit
        pass
    return SizeEstimate()


def _table_of(source) -> str | None:
    if source.table:
        return source.table
    if source.preset:
        from memwatch_overlay.connectors.registry import preset_class
        return dict(getattr(preset_class(source.preset, kind="sqlite"), "defaults", {}) or {}).get("table")
    return None


def _sqlite(source) -> SizeEstimate:
    from sqlglot import exp
    from memwatch_overlay.connectors import sqlguard
    from memwatch_overlay.connectors.sqlite import open_readonly
    table = _table_of(source)
    size = os.path.getsize(source.path)
    if not table:
        return SizeEstimate(size_bytes=size)
    sql = exp.select("count(*)").from_(sqlguard.table(table)).sql("sqlite")
    conn = open_readonly(Path(source.path))
    try:
        (n,) = conn.execute(sql).fetchone()
    finally:
        conn.close()
    return SizeEstimate(records=int(n), exact=True, size_bytes=size)


def _json(path: Path) -> SizeEstimate:
    size = path.stat().st_size
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        return SizeEstimate(size_bytes=size)
    with open(path, "rb") as fh:
        head = fh.read(SAMPLE)
    lines = sum(1 for line in head.splitlines() if line.strip())
    if not head or not lines:
        return SizeEstimate(records=0, size_bytes=size)
    return SizeEstimate(records=lines if len(head) >= size else round(size * lines / len(head)),
                        exact=len(head) >= size, size_bytes=size)
