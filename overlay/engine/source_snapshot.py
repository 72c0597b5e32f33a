"""A source's files as one digest: whether a full read would find the source as the last
full sync left it.

A full read of a source whose files hold the same bytes as when a full sync read them, mapped
the same way (the same connector, configuration fingerprint and, for a plain SQLite table,
CompareSpec), into facts that nothing has changed since, makes the same Records of the same
rows: every fact is unchanged, and the read (a set comparison in SQL for a plain table, a
Record per row for a preset or a JSON file) would only say so. `SyncEngine` records a
snapshot after a full sync during which the files did not change (`Snapshot.record_of`) and
answers the next full read from it when everything still matches (`Snapshot.matches`): one
hash of the files instead of a read of every row.

The files are what the connector says a full read reads (`Connector.snapshot_files`: a
SQLite file, a JSON file, mem0's history.db with its qdrant collections); a source that
reads anything else (a server, a folder) has none; a LanceDB table names the manifest of the
version it reads (Lance never rewrites a manifest or a data file: the manifest stands for the rows). Each file is hashed with its `-wal` and
`-journal` files where they exist: a SQLite commit changes at least one of them (rollback
journal mode bumps the file change counter in the header; WAL mode appends frames, or starts
the file over with a new salt), so equal bytes mean the same content. The files are only
ever opened for reading. Files larger than BYTES_PER_ROW a row (plus SLACK) are not hashed
(a small table in a large file is read faster than the file is hashed), except where a full
read parses every byte anyway (`Connector.reads_whole_files`: JSON).

The facts' side is `OverlayStore.facts_state()`: the source's fact count, its largest
`changed_sync` (every write by a sync moves it) and its counts per status other than active
(a fact forgotten, deleted or pruned moves them). A snapshot is recorded only when the
records read are the live facts, one each, and none is forgotten (a plain table: each row
read became one). With it go the cursor the read left and its warnings, which the answered
read gives again. (Fact rows edited behind the store's back, by SQL on the overlay file, are
not seen.) A migration of the overlay forgets every recorded snapshot
(overlay/store/schema.py): what a fact holds may have changed meaning.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import NamedTuple, Sequence

from memwatch_overlay.core.version import __version__
from memwatch_overlay.overlay.store.schema import SNAPSHOT_META

BYTES_PER_ROW = 1024      # hash a source only up to this many bytes per row of its table ...
SLACK = 16 << 20          # ... plus this much (small tables in small files)
_SUFFIXES = ("", "-wal", "-journal")


def files_digest(paths: Sequence[Path], limit: int | None) -> str | None:
    """sha256 over the files and their -wal and -journal files (each with its name and size;
    a file's own name only where there are several); None when they hold more than `limit`
    bytes (None: any size), one is missing or one cannot be read."""
    files = []
    for path in paths:
        for suffix in _SUFFIXES:
            name = Path(f"{path}{suffix}")
            try:
                st = os.stat(name)
            except FileNotFoundError:
                if not suffix:
                    return None
                continue
            except OSError:
                return None
            if not stat.S_ISREG(st.st_mode):     # a FIFO or a device would never end
                return None
            files.append((suffix, name, st.st_size))
    if limit is not None and sum(size for _, _, size in files) > limit:
        return None
    several = len(paths) > 1
    digest = hashlib.sha256()
    try:
        for suffix, name, _ in files:
            label = f"{name}" if several else suffix
            # (opened without blocking and checked again: a file swapped for a FIFO since)
            with os.fdopen(os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    return None
                digest.update(f"{label}:{st.st_size}:".encode())
                digest.update(hashlib.file_digest(f, "sha256").digest())
    except OSError:
        return None
    return digest.hexdigest()


def snapshot_key(source_name: str) -> str:
    """The overlay meta key a source's recorded snapshot is kept under."""
    return SNAPSHOT_META + source_name


def plain_mapping(spec, fingerprint: str | None) -> list:
    """What a plain SQLite table's rows are read with: its CompareSpec and the fingerprint."""
    return [repr(spec._replace(busy_timeout=0)), fingerprint]


def connector_mapping(connector, paths: Sequence[Path], fingerprint: str | None) -> list:
    """What a preset's or a JSON file's rows are read with: the connector, its files, the fingerprint."""
    kind = type(connector)
    return [f"{kind.__module__}.{kind.__qualname__}", [str(p) for p in paths], fingerprint]


class Snapshot(NamedTuple):
    """A full sync's view of a source's files before it read them: the meta key, what the
    rows are read with (as one text), the files' digest, the files and the size limit they
    were hashed under, and the snapshot recorded under the key (None: none)."""

    key: str
    mapping: str
    digest: str
    paths: tuple[Path, ...]
    limit: int | None
    recorded: dict | None

    @classmethod
    def take(cls, key: str, paths: Sequence[Path], mapping: list, recorded, rows_bound: int,
             any_size: bool = False) -> "Snapshot | None":
        """The snapshot of the files `paths` now; None when they are not hashed. The size
        limit counts the rows the recorded snapshot saw, else `rows_bound`; `any_size`: none.
        `recorded`: what the overlay holds under `key` (anything but a recorded snapshot is
        taken for none)."""
        if not (isinstance(recorded, dict) and isinstance(recorded.get("rows"), int)
                and isinstance(recorded.get("records"), int)):
            recorded = None
        rows = recorded["rows"] if recorded else max(rows_bound, 0)
        limit = None if any_size else rows * BYTES_PER_ROW + SLACK
        paths = tuple(paths)
        digest = files_digest(paths, limit)
        if digest is None:
            return None
        # (the version too: another release may read the same rows into other Records)
        return cls(key, json.dumps([*mapping, __version__]), digest, paths, limit, recorded)

    def matches(self, facts_state: list[int]) -> bool:
        """Whether the recorded snapshot is this one, over facts still as they were."""
        recorded = self.recorded
        return (recorded is not None and recorded.get("digest") == self.digest
                and recorded.get("mapping") == self.mapping and recorded.get("facts") == facts_state)

    def unchanged_since(self) -> bool:
        """Whether the files still hold the bytes this snapshot hashed."""
        return files_digest(self.paths, self.limit) == self.digest

    def record_of(self, rows: int, records: int, facts_state: list[int], cursor: dict | None = None,
                  warnings: Sequence[str] = ()) -> dict:
        """What the overlay keeps of a full sync that read these files: with the cursor the
        read left and its warnings (a plain table's answer asks the table for its cursor)."""
        got = {"digest": self.digest, "mapping": self.mapping, "rows": rows, "records": records,
               "facts": facts_state}
        if cursor is not None:
            got["cursor"] = cursor
            got["warnings"] = list(warnings)
        return got
