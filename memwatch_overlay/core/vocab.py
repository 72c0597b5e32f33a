"""The one vocabulary: every list of labels, statuses, formats, kinds is derived from here.

Enums are the source of truth; the tuples beside them hold plain strings (the values that
go into the overlay, the JSON contract and memwatch.toml), in the order people read them.

Example:
    >>> LABELS
    ('fresh', 'aging', 'stale', 'expired')
    >>> Status.CONTRADICTED in LIVE_STATUSES
    True
"""
from __future__ import annotations

from enum import StrEnum


class Label(StrEnum):
    """A fact's freshness label, best first (the design's thresholds separate them)."""

    FRESH = "fresh"
    AGING = "aging"
    STALE = "stale"
    EXPIRED = "expired"


class Status(StrEnum):
    """Where a fact stands in the overlay."""

    ACTIVE = "active"
    CONTRADICTED = "contradicted"   # a newer fact of its subject outdates it
    DELETED = "deleted"             # the source deleted (or soft-deleted) it
    FORGOTTEN = "forgotten"         # `memwatch-overlay forget`: hidden until its content changes


class ActionKind(StrEnum):
    """What an [[actions]] entry does (`do = ...`)."""

    ANNOTATE = "annotate"           # overlay only
    SET = "set"                     # columns the source already has
    DELETE = "delete"
    EXPIRE = "expire"               # the store's own way (a preset's natural write-back)


class ContradictionKind(StrEnum):
    """How a contradiction was found (the detector's cascade, cheapest first)."""

    VALUE = "value"
    CUE = "cue"
    SEMANTIC = "semantic"           # embeddings, or the learned pair model (overlay/detect/learned.py)
    JUDGE = "judge"


class ReportFormat(StrEnum):
    """Formats of `audit` and `report` (--format)."""

    TABLE = "table"
    JSON = "json"
    JUNIT = "junit"
    SARIF = "sarif"
    MARKDOWN = "markdown"
    HTML = "html"
    NDJSON = "ndjson"     # one fact per line
    CSV = "csv"           # a header row, one fact per row


class ListFormat(StrEnum):
    """Formats of the listing commands (stats, status, report --trend, ...)."""

    TABLE = "table"
    JSON = "json"


class BuiltinConnector(StrEnum):
    """Connector kinds shipped with the package; plugins add more (ENTRY_POINT_GROUP)."""

    SQLITE = "sqlite"
    JSON = "json"
    POSTGRES = "postgres"
    LANCEDB = "lancedb"      # read-only: no write-back


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


def values(enum) -> tuple[str, ...]:
    """An enum's values as plain strings, in definition order."""
    return tuple(m.value for m in enum)


LABELS = values(Label)
STATUSES = values(Status)
LIVE_STATUSES = (Status.ACTIVE.value, Status.CONTRADICTED.value)   # counted in `total` and the gate
ACTION_CONDITIONS = LABELS + (Status.CONTRADICTED.value,)           # what [[actions]] `when` may name
ACTION_KINDS = values(ActionKind)
WRITE_KINDS = (ActionKind.SET.value, ActionKind.DELETE.value)       # kinds that write to a source
CONTRADICTION_KINDS = values(ContradictionKind)
REPORT_FORMATS = values(ReportFormat)
LIST_FORMATS = values(ListFormat)
BUILTIN_CONNECTORS = values(BuiltinConnector)
READ_ONLY_CONNECTORS = (BuiltinConnector.LANCEDB.value,)    # built-in kinds without write-back
LOG_FORMATS = values(LogFormat)

# The entry-point group third-party connectors register under (loaded lazily by name).
CONNECTOR_ENTRY_POINTS = "memwatch_overlay.connectors.v1"
