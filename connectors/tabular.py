"""What SQL connectors share: a table (or one read-only SELECT) mapped column by column.

SQLite and Postgres differ in how they connect, list tables and stream rows; the
mapping from a row to a Record (columns, JSON paths inside columns, timestamps,
primary keys) is the same and lives here.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.rules.config import MAPPING_KEYS
from memwatch_overlay.connectors.base import Connector, Record, TableInfo
from memwatch_overlay.connectors.paths import get_path, split_column_path

ROWID = "__mw_rowid__"
TIME_FIELDS = ("created_at", "updated_at", "accessed_at", "expires_at")
# Record's leading fields, in order: row_to_record builds Records by position.
RECORD_FIELDS = ("source", "table", "pk", "text", "subject", "key", "created_at", "updated_at", "accessed_at",
                 "access_count", "category", "expires_at")


class TableConnector(Connector):
    """Base of SQL connectors: subclasses provide describe(), query_columns() and read()."""

    dialect = ""

    def table_info(self, name: str) -> TableInfo:
        for t in self.describe():
            if t.name == name or t.name.lower() == name.lower():
                return t
        seen = ", ".join(t.name for t in self.describe()) or "none"
        raise ConnectorError(f"{self.source.target}: no table {name!r} (tables: {seen})")

    @property
    def table_name(self) -> str:
        return self.source.table or "query"

    def query_columns(self) -> list[str]:
        """Columns the mapping may name: the table's, or the query's result columns."""
        raise NotImplementedError

    def pk_columns(self, columns: list[str]) -> list[str]:
        if self.source.id:
            # checked here: SQLite reads an unknown "quoted" name as a string literal, which
            # would give every row the same key instead of failing
            for col in self.source.id:
                if col not in columns:
                    raise ConnectorError(
                        f"source {self.source.name!r}: id = {col!r}: no column {col!r} in "
                        f"{self.table_name} (columns: {', '.join(columns)})")
            return self.source.id
        if self.source.table:
            info = self.table_info(self.source.table)
            if info.pk:
                return info.pk
            if info.rowid:
                return [ROWID]
        raise ConnectorError(f"source {self.source.name!r}: set `id` (the primary-key column(s))")

    def mapping(self, columns: list[str]) -> dict[str, tuple[str, list]]:
        """mapping key -> (column, json path), checked against the real columns."""
        out = {}
        if not self.source.text:
            raise ConnectorError(f"source {self.source.name!r}: `text` (the memory's column) is not mapped")
        for key in MAPPING_KEYS:
            value = getattr(self.source, key)
            if value is None:
                continue
            try:
                col, path = split_column_path(value, columns)
            except ValueError as exc:
                raise ConnectorError(f"source {self.source.name!r}: {key} = {value!r}: {exc}") from None
            if col not in columns:
                raise ConnectorError(
                    f"source {self.source.name!r}: {key} = {value!r}: no column {col!r} in "
                    f"{self.table_name} (columns: {', '.join(columns)})")
            out[key] = (col, path)
        return out

    # -- row -> Record -------------------------------------------------------------------
    def field(self, row: dict, mapping: dict, key: str) -> Any:
        if key not in mapping:
            return None
        col, path = mapping[key]
        value = row.get(col)
        return get_path(value, path) if path else value

    _row_plan: "_RowPlan | None" = None   # row_to_record's last plan (per connector)

    def row_to_record(self, row: dict, pks: list[str], mapping: dict) -> Record | None:
        # The per-row hot path of every sync: which columns to read is worked out once per
        # mapping (_RowPlan), and a timestamp repeated in the same row (created_at ==
        # updated_at is common) is parsed once.
        plan = self._row_plan
        if plan is None or plan.mapping is not mapping:
            plan = self._row_plan = _RowPlan(mapping, self.source.name, self.table_name)
        get = row.get
        if plan.text is None:
            return None
        col, path = plan.text
        text = get(col) if not path else get_path(get(col), path)
        if isinstance(text, (bytes, bytearray)):
            text = text.decode("utf-8", "replace")
        if text is None or (isinstance(text, str) and not text.strip()):
            return None
        pk = {}
        for p in pks:
            value = get(p)
            pk[p] = value if value.__class__ is str else str(value) if value.__class__ is int else _pk_text(value)
        m = plan.subject
        subject = None if m is None else _opt_text(get(m[0]) if not m[1] else get_path(get(m[0]), m[1]))
        m = plan.key
        key = None if m is None else _opt_text(get(m[0]) if not m[1] else get_path(get(m[0]), m[1]))
        m = plan.category
        category = None if m is None else _opt_text(get(m[0]) if not m[1] else get_path(get(m[0]), m[1]))
        m = plan.access_count
        if m is not None:
            count = get(m[0]) if not m[1] else get_path(get(m[0]), m[1])
            try:
                count = int(count or 0)
            except (TypeError, ValueError):
                count = 0
        else:
            count = 0
        times = [None, None, None, None]       # TIME_FIELDS
        last_raw = last = None
        for i, name, col, path in plan.times:
            raw = get(col) if not path else get_path(get(col), path)
            if raw is None:
                continue
            if raw == last_raw and raw.__class__ is last_raw.__class__:
                times[i] = last
                continue
            try:
                last = parse_timestamp(raw)
            except ValueError:
                self.warn(f"{self.table_name} {pk}: {name} {raw!r} is not a timestamp; ignored")
                last = None
            last_raw = raw
            times[i] = last
        created_at, updated_at, accessed_at, expires_at = times
        # By position, in RECORD_FIELDS order: a keyword call costs three times as much.
        return Record(plan.source, plan.table, pk, text if isinstance(text, str) else str(text), subject, key,
                      created_at, updated_at, accessed_at, count, category, expires_at)


    def tuple_records(self, names: list[str], pks: list[str], mapping: dict) -> Callable[[tuple], Record | None] | None:
        """record(row_tuple) -> row_to_record's Record for a row given as a tuple of `names`,
        without the per-row dict; None when this connector cannot (a preset's own
        row_to_record, a JSON path in the mapping, a repeated column name).

        The tuple path takes the values stores mostly hold (str text, int or str keys, str or
        NULL subject/key/category, int access counts, naive ISO text or NULL times) and hands
        any other row whole to row_to_record, so every Record (and warning) is the one
        row_to_record gives (tests/test_tuple_records.py).
        """
        fields = self._tuple_fields(names, pks, mapping)
        if fields is None:
            return None
        source, table = self.source.name, self.table_name
        general = self.row_to_record

        def record(row: tuple) -> Record | None:
            got = fields(row)
            if got.__class__ is tuple:
                pk, text, subject, key, category, count, created, updated, accessed, expires = got
                return Record(source, table, pk, text, subject, key, created, updated, accessed, count, category,
                              expires)
            return None if got is None else general(dict(zip(names, row)), pks, mapping)

        return record

    def tuple_plain(self, names: list[str], pks: list[str], mapping: dict,
                    record: Callable[[tuple], Record | None]) -> Callable[[tuple], tuple | None] | None:
        """plain(row_tuple) -> the PLAIN_FIELDS tuple of a row whose Record (`record(row)`, the
        tuple path's) would be a plain one, without making it: None for any other row (the
        caller makes its Record). None when tuple_records() declines, or for a key of several
        columns.

        A plain row is one the tuple path reads without falling back (_tuple_fields) and
        with no category of its own (the category column unmapped, NULL or empty). Its tuple
        holds exactly the Record's values (tests/test_plain_compare.py).
        """
        fields = self._tuple_fields(names, pks, mapping)
        if len(pks) != 1 or fields is None:
            return None
        table = self.table_name

        def plain(row: tuple) -> tuple | None:
            got = fields(row)
            if got.__class__ is not tuple or got[4] is not None:
                return None          # no Record, the general path, or a category of its own
            pk, text, subject, key, _, count, created, updated, accessed, expires = got
            (name, value), = pk.items()
            return (name, value, table, text, subject, key, created, updated, accessed, count, expires, row, record)

        return plain

    def _tuple_fields(self, names: list[str], pks: list[str], mapping: dict) -> Callable[[tuple], Any] | None:
        """fields(row_tuple) -> (pk, text, subject, key, category, access_count, created_at,
        updated_at, accessed_at, expires_at) as the Record of the row holds them; None for a
        row that makes no Record (NULL or blank text); GENERAL for one row_to_record must read
        (any value but the usual ones, see tuple_records). None when the mapping cannot be
        read from tuples at all."""
        if type(self).row_to_record is not _ROW_TO_RECORD or len(set(names)) != len(names):
            return None
        if any(path for _, path in mapping.values()) or "text" not in mapping:
            return None
        where = {name: i for i, name in enumerate(names)}
        try:
            text_at = where[mapping["text"][0]]
            pk_at = [(p, where[p]) for p in pks]
            opt_at = [None if mapping.get(k) is None else where[mapping[k][0]] for k in ("subject", "key", "category")]
            count_at = None if mapping.get("access_count") is None else where[mapping["access_count"][0]]
            time_at = [(n, where[mapping[k][0]]) for n, k in enumerate(TIME_FIELDS) if mapping.get(k) is not None]
        except KeyError:
            return None
        # (position in (subject, key, category), column index) of the mapped optional fields
        optional_at = [(j, i) for j, i in enumerate(opt_at) if i is not None]

        def fields(row: tuple) -> Any:
            text = row[text_at]
            if text.__class__ is not str:
                return None if text is None else GENERAL
            if not text.strip():
                return None
            pk = {}
            for p, i in pk_at:
                value = row[i]
                if value.__class__ is str:
                    pk[p] = value
                elif value.__class__ is int:
                    pk[p] = str(value)
                else:
                    return GENERAL
            optional = [None, None, None]           # subject, key, category: str or NULL
            for j, i in optional_at:
                value = row[i]
                if value.__class__ is str:
                    optional[j] = value or None
                elif value is not None:
                    return GENERAL
            count = 0
            if count_at is not None:
                count = row[count_at]
                if count is None:
                    count = 0
                elif count.__class__ is not int:
                    return GENERAL
            times = [None, None, None, None]
            last_raw = last = None
            for n, i in time_at:
                raw = row[i]
                if raw is None:
                    continue
                if raw != last_raw:
                    last, last_raw = naive_iso_epoch(raw), raw
                    if last is None:
                        return GENERAL
                times[n] = last
            return (pk, text, *optional, count, *times)

        return fields


GENERAL = object()      # _tuple_fields: the row goes to row_to_record whole


def naive_iso_epoch(raw: Any) -> float | None:
    """The tuple path's time: naive ISO text (read as UTC, parse_timestamp's own fast path) as
    epoch seconds; None for anything else (parse_timestamp reads it, with its warnings). The
    SQL first load parses staged times with it too (overlay/engine/sync.py)."""
    if raw.__class__ is not str or len(raw) < 10 or raw[4] != "-":
        return None
    try:
        parsed = _FROMISO(raw)
    except ValueError:
        return None
    return None if parsed.tzinfo is not None else (parsed - _NAIVE_EPOCH).total_seconds()


# What a connector's read_for_compare() yields for a plain row, in order (tuple_plain):
PLAIN_FIELDS = ("pk_name", "pk_value", "table", "text", "subject", "key", "created_at", "updated_at",
                "accessed_at", "access_count", "expires_at", "row", "record")


_ROW_TO_RECORD = TableConnector.row_to_record   # the general path tuple_records stands in for
_NAIVE_EPOCH = dt.datetime(1970, 1, 1)
_FROMISO = dt.datetime.fromisoformat


class _RowPlan:
    """What row_to_record reads for one mapping: (column, json path) per mapped key, None
    for an unmapped one, and the mapped timestamps as (index in TIME_FIELDS, key, column, path)."""

    __slots__ = ("mapping", "source", "table", "text", "subject", "key", "category", "access_count", "times")

    def __init__(self, mapping: dict, source: str, table: str):
        self.mapping = mapping          # kept (and compared by identity) to tell when to re-plan
        self.source, self.table = source, table
        self.text = mapping.get("text")
        self.subject = mapping.get("subject")
        self.key = mapping.get("key")
        self.category = mapping.get("category")
        self.access_count = mapping.get("access_count")
        self.times = [(i, name, *mapping[name]) for i, name in enumerate(TIME_FIELDS) if mapping.get(name) is not None]


def _pk_text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return "" if value is None else str(value)


def _opt_text(value: Any) -> str | None:
    if value.__class__ is str:
        return value or None
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    value = str(value) if not isinstance(value, str) else value
    return value or None
