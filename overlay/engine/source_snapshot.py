"""A SQLite source's files as one digest: whether a full read would find the table as the
last full sync left it.

A full read of a source whose files hold the same bytes as when a full sync read it, mapped
the same way (the same CompareSpec and configuration fingerprint), into facts that nothing
has changed since, makes the same Records of the same rows: every fact is unchanged, and
the set comparison (overlay/store/compare.py), a pass over every row, would only say so.
`SyncEngine` records a snapshot after a full sync during which the files did not change
(`Snapshot.record`) and answers the next full read from it when everything still matches
(`Snapshot.matches`): one hash of the files instead of a comparison of every row.

The bytes hashed are the database file and its `-wal` and `-journal` files where they exist:
a commit changes at least one of them (rollback journal mode bumps the file change counter
in the header; WAL mode appends frames, or starts the file over with a new salt), so equal
bytes mean the same content. The files are only ever opened for reading. A database larger
than BYTES_PER_ROW a row (plus SLACK) is not hashed: a small table in a large file is
compared faster than the file is read.

The facts' side is `OverlayStore.facts_state()`: the source's fact count, its largest
`changed_sync` (every write by a sync moves it) and its counts per status other than active
(a fact forgotten, deleted or pruned moves them). A snapshot is recorded only when each row
read became one live fact and none is forgotten. (Fact rows edited behind the store's back,
by SQL on the overlay file, are not seen.) A migration of the overlay forgets every
recorded snapshot (overlay/store/schema.py): what a fact holds may have changed meaning.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import NamedTuple

from memwatch_overlay.core.version import __version__
from memwatch_overlay.overlay.store.schema import SNAPSHOT_META

BYTES_PER_ROW = 1024      # hash a source only up to this many bytes per row of its table ...
SLACK = 16 << 20          # ... plus this much (small tables in small files)
_SUFFIXES = ("", "-wal", "-journal")


def files_digest(path: Path, limit: int) -> str | None:
    """sha256 over the database file and its -wal and -journal files (each with its suffix
    and size); None when they hold more than `limit` bytes or cannot be read."""
    files = []
    for suffix in _SUFFIXES:
        name = Path(f"{path}{suffix}")
        try:
            files.append((suffix, name, os.stat(name).st_size))
        except FileNotFoundError:
            if not suffix:
                return None
        except OSError:
            return None
    if sum(size for _, _, size in files) > limit:
        return None
    digest = hashlib.sha256()
    try:
        for suffix, name, size in files:
            digest.update(f"{suffix}:{size}:".encode())
            with open(name, "rb") as f:
                digest.update(hashlib.file_digest(f, "sha256").digest())
    except OSError:
        return None
    return digest.hexdigest()


def snapshot_key(source_name: str) -> str:
    """The overlay meta key a source's recorded snapshot is kept under."""
    return SNAPSHOT_META + source_name


class Snapshot(NamedTuple):
    """A full sync's view of a SQLite source before it read it: the meta key, what the rows
    are read with (spec and fingerprint, as one text), the files' digest, and the snapshot
    recorded under the key (None: none)."""

    key: str
    mapping: str
    digest: str
    path: Path
    limit: int
    recorded: dict | None

    @classmethod
    def take(cls, key: str, spec, fingerprint: str | None, recorded, largest_rowid: int) -> "Snapshot | None":
        """The snapshot of the source file `spec.path` now; None when it is not hashed. The
        size limit counts the rows the recorded snapshot saw, else the table's largest rowid.
        `recorded`: what the overlay holds under `key` (anything but a recorded snapshot is
        taken for none)."""
        if not (isinstance(recorded, dict) and isinstance(recorded.get("rows"), int)
                and isinstance(recorded.get("records"), int)):
            recorded = None
        rows = recorded["rows"] if recorded else max(largest_rowid, 0)
        limit = rows * BYTES_PER_ROW + SLACK
        digest = files_digest(spec.path, limit)
        if digest is None:
            return None
        # (the version too: another release may read the same rows into other Records)
        mapping = json.dumps([repr(spec._replace(busy_timeout=0)), fingerprint, __version__])
        return cls(key, mapping, digest, spec.path, limit, recorded)

    def matches(self, facts_state: list[int]) -> bool:
        """Whether the recorded snapshot is this one, over facts still as they were."""
        recorded = self.recorded
        return (recorded is not None and recorded.get("digest") == self.digest
                and recorded.get("mapping") == self.mapping and recorded.get("facts") == facts_state)

    def unchanged_since(self) -> bool:
        """Whether the files still hold the bytes this snapshot hashed."""
        return files_digest(self.path, self.limit) == self.digest

    def record_of(self, rows: int, records: int, facts_state: list[int]) -> dict:
        return {"digest": self.digest, "mapping": self.mapping, "rows": rows, "records": records,
                "facts": facts_state}
