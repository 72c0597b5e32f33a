"""Write-back to a source: the small interface each connector kind implements.

Reading stays with the connector (read-only). A writer adds exactly what write-back and
undo need, nothing more:

- `columns()` / `key_columns()`: the live schema, to validate a plan before anything runs;
- `locate(pk)`: find a row from the overlay's text primary key (read-only) and return its
  typed key and whole-row image;
- `transaction()`: a short write transaction whose `read / update / delete / insert /
  restore` work on typed keys and images, committed on exit, rolled back on error.

An *image* is the whole row as `{column: (type, value)}`, with the store's own type names
(SQLite: integer, real, text, blob, null), so undo can put back exactly what was there and
two images compare equal only when every value and type matches. `encode_image` /
`decode_image` turn images into JSON for the overlay's before-images.

The generic plan / apply / undo logic lives in overlay/writeback/engine.py; adding write-back
for a connector kind means one subclass here and one entry in WRITERS.
"""
from __future__ import annotations

import abc
import contextlib
import importlib
from typing import Any, ClassVar, Iterator

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.connectors.base import Connector

TypedValue = tuple[str, Any]
Image = dict[str, TypedValue]
Key = dict[str, TypedValue]

# connector kind -> "module:Class", imported on first use.
WRITERS = {
    "sqlite": "memwatch_overlay.connectors.sqlite_writer:SqliteWriter",
    "postgres": "memwatch_overlay.connectors.postgres_writer:PostgresWriter",
    "json": "memwatch_overlay.connectors.json_writer:JsonWriter",
}


class SourceBusy(ConnectorError):
    """The bot holds the write lock longer than the busy timeout: try again next tick."""


class SourceLocked(SourceBusy):
    """A lock wait timed out (SQLite busy, Postgres lock timeout): the same batch may be
    tried again at once, after a short jittered pause (overlay/writeback/apply.py)."""


class WriteTxn(abc.ABC):
    """One short write transaction on one table."""

    @abc.abstractmethod
    def read(self, key: Key) -> Image | None:
        """The row's current image, or None when no row has this key."""

    @abc.abstractmethod
    def update(self, key: Key, values: dict[str, Any]) -> None:
        """Set columns to plain values (the store applies its own conversions)."""

    @abc.abstractmethod
    def restore(self, key: Key, image: Image) -> None:
        """Set every column whose value differs from `image` back to its typed value."""

    @abc.abstractmethod
    def delete(self, key: Key) -> Key | None:
        """Delete the row; a store whose keys carry a position returns the key as it was
        at the moment of deletion (what `insert` needs to put the row back there)."""

    @abc.abstractmethod
    def insert(self, key: Key, image: Image) -> None:
        """Put a deleted row back, key included."""


class SourceWriter(abc.ABC):
    """Write-back for one source table. `connector` is open (read-only) for lookups."""

    kind: ClassVar[str] = ""
    # True when an image's plain values are what the connector's row_to_record reads, so
    # the optimistic check can use the overlay's content hash (see overlay/writeback/engine.py);
    # otherwise a row is checked against the whole image read when the plan was made.
    hash_check: ClassVar[bool] = False

    def __init__(self, connector: Connector, table: str | None = None):
        self.connector = connector
        self.source = connector.source
        self.table = table or self.source.table
        if not self.table:
            raise ConnectorError(
                f"source {self.source.name!r} reads a query; write-back needs `table` "
                f"(the table the query's rows live in)")

    @abc.abstractmethod
    def columns(self) -> list[str]:
        """Columns the table has now."""

    @abc.abstractmethod
    def key_columns(self) -> list[str]:
        """Columns (or the rowid sentinel) that identify a row."""

    @abc.abstractmethod
    def locate(self, pk: dict[str, str]) -> tuple[Key, Image] | None:
        """Find the row the overlay knows by its text pk; None when it is gone."""

    def sample(self, column: str) -> Any:
        """Some non-empty value of `column`, to copy its format (None when there is none)."""
        return None

    def refresh(self) -> None:
        """Forget what was read for planning (the source was just synced again)."""

    def check_action(self, do: str, sets: dict) -> str | None:
        """Why this store cannot take an action of kind `do` (None when it can)."""
        return None

    def holds(self, image: Image, column: str, value: Any) -> bool:
        """True when the row already stores `value` in `column` (the write would change nothing)."""
        return False

    def declared_type(self, column: str) -> str:
        return ""

    @abc.abstractmethod
    def transaction(self) -> contextlib.AbstractContextManager[WriteTxn]:
        ...

    # -- images ----------------------------------------------------------------------
    def plain(self, image: Image | None) -> dict[str, Any] | None:
        """Column -> value, without types (what the connector's mapping reads)."""
        if image is None:
            return None
        return {col: value for col, (_, value) in image.items()}

    @staticmethod
    def encode_value(tv: TypedValue) -> list:
        kind, value = tv
        if isinstance(value, (bytes, bytearray, memoryview)):
            return [kind, bytes(value).hex()]
        return [kind, value]

    @staticmethod
    def decode_value(item: list) -> TypedValue:
        kind, value = item
        if kind == "blob" and isinstance(value, str):
            return kind, bytes.fromhex(value)
        return kind, value

    @classmethod
    def encode_image(cls, image: Image | None) -> dict | None:
        if image is None:
            return None
        return {col: cls.encode_value(tv) for col, tv in image.items()}

    @classmethod
    def decode_image(cls, data: dict | None) -> Image | None:
        if data is None:
            return None
        return {col: cls.decode_value(item) for col, item in data.items()}


def writer_class(kind: str) -> type[SourceWriter]:
    spec = WRITERS.get(kind)
    if spec is None:
        raise ConnectorError(f"write-back to {kind} sources is not available yet "
                             f"(supported: {', '.join(WRITERS)}); use do = \"annotate\" for them")
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def writer_for(connector: Connector, table: str | None = None) -> SourceWriter:
    return writer_class(connector.kind)(connector, table)


def iter_chunks(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class TakeTurns:
    """Pauses between write transactions so a waiting bot gets the lock.

    SQLite's busy handler is not a queue: a bot waiting for the lock retries on its own
    schedule (1, 2, 5 … 100 ms sleeps) and loses every time if the next transaction starts
    right after the last commit. Pausing for as long as the lock was held (at least
    MIN_PAUSE) leaves the store free at least half the time.
    """

    MIN_PAUSE = 0.005
    MAX_PAUSE = 0.25

    def __init__(self, sleep=None):
        import time
        self._clock = time.perf_counter
        self._sleep = sleep or time.sleep
        self._held = 0.0

    def batches(self, items: list, size: int) -> Iterator[list]:
        """iter_chunks, pausing before every batch but the first."""
        for n, chunk in enumerate(iter_chunks(items, size)):
            if n:
                self._sleep(min(self.MAX_PAUSE, max(self.MIN_PAUSE, self._held)))
            started = self._clock()
            yield chunk
            self._held = self._clock() - started
