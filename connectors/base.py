"""What every connector yields and promises.

A connector opens a source read-only, yields `Record`s (one per memory, streamed,
never a list of the whole store), and reports how many source rows it read so tests
can assert that work follows change, not store size.
"""
from __future__ import annotations

import abc
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.rules.config import SourceConfig
from memwatch_overlay.core.vocab import Status

STATUS_ACTIVE = Status.ACTIVE.value
STATUS_DELETED = Status.DELETED.value          # the source itself deleted or soft-deleted it
STATUS_CONTRADICTED = Status.CONTRADICTED.value


@dataclass
class Record:
    """One memory as read from a source, before the overlay scores it.

    `pk` holds the source's own primary-key values as text (for JSON sources, the
    record's path). Times are epoch seconds UTC or None.
    """

    source: str
    table: str
    pk: dict[str, str]
    text: str
    subject: str | None = None
    key: str | None = None
    created_at: float | None = None
    updated_at: float | None = None
    accessed_at: float | None = None
    access_count: int = 0
    category: str | None = None
    expires_at: float | None = None     # an expiry the source records itself
    status: str = STATUS_ACTIVE
    replaced_by: dict[str, str] | None = None   # pk (same table) of a newer record the source says replaces this one
    replaced_note: str | None = None

    @property
    def ref(self) -> str:
        return make_ref(self.source, self.table, self.pk)

    @property
    def learned_at(self) -> float | None:
        """When the memory was (re-)learned: updated_at counts as re-learned."""
        times = [t for t in (self.created_at, self.updated_at) if t is not None]
        return max(times) if times else None


def require_readable_file(path: Path, what: str = "store file") -> None:
    """ConnectorError unless `path` is a regular file we may read.

    A FIFO, a device or a socket would block a read forever (or never end), so they are
    refused before anything opens them; links are followed (the file they name counts).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ConnectorError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConnectorError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        return    # folders are the caller's to judge (LanceDB tables, store folders)
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else
                "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise ConnectorError(f"{path}: is {kind}, not a {what}")
    if not os.access(path, os.R_OK):
        raise ConnectorError(f"{path}: cannot read (Permission denied)")


def make_ref(source: str, table: str, pk: dict[str, str]) -> str:
    """`source:table:pk1[:pk2…]`, the id reports and contradictions use."""
    return ":".join([source, table, *map(str, pk.values())])


@dataclass
class TableInfo:
    name: str
    columns: list[str]
    pk: list[str] = field(default_factory=list)
    rowid: bool = True  # SQLite: has an implicit rowid


class Connector(abc.ABC):
    """Base class: `open()`, `read()`, `close()`; also a context manager."""

    kind: ClassVar[str] = ""           # sqlite | json | postgres
    description: ClassVar[str] = ""
    preset: ClassVar[str | None] = None  # set on preset subclasses
    # Write-backs the store itself understands, declared by presets: `do = "expire"` in
    # [[actions]] writes natural_writebacks["expire"], a {column: value} table like `set`.
    natural_writebacks: ClassVar[dict[str, dict]] = {}
    # Format samples for timestamp columns that may be NULL in every row, so a value
    # written there still takes the store's own format (timeparse.format_like).
    timestamp_samples: ClassVar[dict[str, str]] = {}
    # True when row_to_record() turns one row into its Record with nothing else read (the
    # base mapping). Write-back then re-checks a row by the overlay's content hash; presets
    # whose records also depend on other rows or files set False and are checked by the
    # whole row instead (overlay/writeback/engine.py).
    row_local: ClassVar[bool] = True

    def __init__(self, source: SourceConfig):
        self.source = source
        self.rows_read = 0             # source rows read since open (for growth tests and status)
        self.keys_read = 0             # keys read by deletion passes (keys()), counted apart
        self.warnings: list[str] = []  # per-row problems (bad timestamp...), capped
        self.cursor: dict[str, Any] | None = None  # position after the last read()
        # Set by read(): True when it yielded every live record although given a cursor
        # (a rewritten file is re-read whole), so the caller may treat it as a full read.
        self.read_all = False

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()

    @abc.abstractmethod
    def open(self) -> None:
        """Open read-only; raise ConnectorError with a clear message if impossible."""

    @abc.abstractmethod
    def close(self) -> None:
        ...

    @abc.abstractmethod
    def read(self, cursor: dict[str, Any] | None = None) -> Iterator[Record]:
        """Yield records changed since `cursor` (all of them when None).

        After the iterator is exhausted, `self.cursor` holds the position to pass
        next time. `full` reads (cursor None) see every live record, so the caller
        can mark the ones it no longer sees as deleted in the source.
        """

    def read_for_compare(self, cursor: dict[str, Any] | None = None) -> Iterator:
        """read(cursor) for a sync that compares each record with its stored fact: a
        connector may yield, in place of a plain row's Record, a tuple of its values
        (connectors/tabular.py PLAIN_FIELDS), which the sync compares without a Record and
        turns into one (`record(row)`) only when it differs. The default yields Records."""
        return self.read(cursor)

    def describe(self) -> list[TableInfo]:
        """Tables and columns the source holds (for detection and error messages)."""
        return []

    # -- what the daemon uses; the defaults are correct, connectors make them cheap --------
    def has_changes(self) -> bool:
        """False only when the source certainly has not changed since the previous call.

        Called before every daemon tick's read, so it must cost next to nothing (SQLite:
        `PRAGMA data_version`). The default cannot tell and says True.
        """
        return True

    def watch_paths(self) -> list[Path]:
        """Files whose changes should wake the daemon for this source (none: poll only)."""
        path = self.source.resolved_path
        return [path] if path is not None else []

    # -- source snapshots (overlay/engine/source_snapshot.py) -----------------------------
    # True when a full read reads every byte of its files (a JSON document is parsed whole):
    # hashing them always costs less than the read, at any size.
    reads_whole_files: ClassVar[bool] = False
    # True when the source's own file (`path`) is all a full read reads (SQLite, JSON)
    reads_own_file: ClassVar[bool] = False

    def snapshot_files(self) -> list[Path] | None:
        """Every file a full read reads, when equal bytes in them mean an equal read (a SQLite
        file's -wal and -journal are added by the digest); None when a full read also reads
        something that cannot be hashed (a server, a folder). Opened read-only to hash."""
        path = self.source.resolved_path
        return [path] if self.reads_own_file and path is not None else None

    def rows_bound(self) -> int:
        """A bound on the rows a full read reads, known without reading them (0: unknown);
        with reads_whole_files False, files larger than this many rows' worth are not hashed."""
        return 0

    def unchanged_cursor(self, cursor: dict[str, Any]) -> dict[str, Any]:
        """The cursor a full read would leave now, given the one it left when the files held
        the same bytes (a clock reading in it moves to now)."""
        return dict(cursor)

    def count_rows_read(self, rows: int) -> None:
        """`rows` source rows were read for this connector elsewhere (the overlay's set
        comparison, or a source snapshot standing for a full read)."""
        self.rows_read += rows

    def keys(self) -> Iterator[dict[str, str]]:
        """The primary key of every live record, for the deletion pass.

        Must yield exactly the `pk` dicts `read(None)` would give. The default does a full
        read (correct, not cheap); connectors override it with a key-only query.
        """
        saved = self.cursor
        try:
            for rec in self.read(None):
                self.keys_read += 1
                yield rec.pk
        finally:
            self.cursor = saved

    def fetch(self, pks: Iterable[dict[str, str]]) -> Iterator[Record]:
        """Records with these keys (rows the deletion pass found missing from the overlay).

        The default filters a full read; connectors override it with key lookups.
        """
        wanted = {json.dumps(pk) for pk in pks}
        if not wanted:
            return
        saved = self.cursor
        try:
            for rec in self.read(None):
                if json.dumps(rec.pk) in wanted:
                    yield rec
        finally:
            self.cursor = saved

    def warn(self, message: str, limit: int = 50) -> None:
        if len(self.warnings) < limit:
            self.warnings.append(message)
