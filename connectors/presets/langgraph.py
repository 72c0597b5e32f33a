"""LangGraph `SqliteStore` (langgraph-checkpoint-sqlite): table `store`.

value is orjson bytes (BLOB) of the dict given to put(); the text lives at `value.memory`
for plain apps, `value.content.content` for LangMem, or another field: the preset tries
those, then a value's only string field (LangGraph's docs put `{"food_preference": "I like
pizza"}`), then the whole value as JSON text.

Subject: the part of the namespace that names the user, chosen over all the store's
namespaces (presets/namespaces.py: `(user_id, "memories")`, `("memories", user_id)`,
`("users", user_id, …)` all give the user id); `subject = "prefix[N]"` in memwatch.toml names
the position instead. The choice is kept in the cursor, so incremental reads give the same
subjects as the full read before them.

`expires_at` is LangGraph's own TTL column. With a TTL config of refresh_on_read, every
get()/search() moves `expires_at` to now + ttl_minutes without touching `updated_at` or
the rowid; the preset therefore also watches `expires_at - ttl_minutes` ("when was the TTL
last started"), a time that every put(ttl=…) and every refresh moves forward: incremental
reads pick up those rows too, through LangGraph's partial index on expires_at.
"""
from __future__ import annotations

import json

import sqlglot
from sqlglot import exp

from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.paths import maybe_json
from memwatch_overlay.connectors.sqlite import ROWID, SqliteConnector
from memwatch_overlay.connectors.presets import Match, has_columns
from memwatch_overlay.connectors.presets.namespaces import subject_of, subject_positions

TEXT_FIELDS = ("memory", "content", "text", "data", "fact", "value")
# When the TTL was last (re)started, epoch seconds, from the two TTL columns (ms precision).
TTL_STARTED_SQL = "ROUND((JULIANDAY(expires_at) - 2440587.5) * 86400.0 - ttl_minutes * 60.0, 3)"
TTL_STARTED = "__mw_ttl_started__"
TTL_AT_MARK = 256           # rows at the TTL mark remembered by rowid


def text_from_value(value) -> str | None:
    """The memory text inside a LangGraph item value (the dict given to put())."""
    value = maybe_json(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for name in TEXT_FIELDS:
            inner = value.get(name)
            if isinstance(inner, str) and inner.strip():
                return inner
            if isinstance(inner, dict):
                found = text_from_value(inner)
                if found:
                    return found
        strings = [v for v in value.values() if isinstance(v, str) and v.strip()]
        if len(strings) == 1 and len(value) == 1:
            return strings[0]
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return None


def subject_from_prefix(prefix: str | None) -> str | None:
    """The subject of one namespace judged alone (no other namespaces known), as the
    LangGraph store wrapper sees a single put()."""
    return subject_of(prefix, None)


def namespace_position(mapping: dict) -> int | None:
    """N when the config says `subject = "prefix[N]"` (a namespace position)."""
    col, path = mapping.get("subject", (None, []))
    if col == "prefix" and len(path) == 1 and isinstance(path[0], int):
        return path[0]
    return None


class LangGraphSqliteStore(SqliteConnector):
    preset = "langgraph"
    description = "LangGraph SqliteStore (table store: prefix, key, value, expires_at)"
    defaults = dict(table="store", id=["prefix", "key"], text="value", key="key", subject="prefix",
                    created_at="created_at", updated_at="updated_at", expires_at="expires_at")
    # LangGraph's TTL sweeper runs `DELETE … WHERE expires_at < CURRENT_TIMESTAMP` (a text
    # comparison), so an expiry must be written the way put(ttl=…) writes it: str(datetime).
    natural_writebacks = {"expire": {"expires_at": "now"}}
    timestamp_samples = {"expires_at": "2000-01-01 00:00:00.000000+00:00"}
    rows_are_records = True     # one row, one record: the key-only deletion pass serves

    def __init__(self, source, **kwargs):
        super().__init__(source, **kwargs)
        self._positions: dict[int, int] | None = None

    @classmethod
    def match(cls, tables):
        reasons = has_columns(tables, "store", {"prefix", "key", "value", "created_at", "updated_at"})
        if reasons is None:
            return None
        score = 0.9
        if has_columns(tables, "store", {"expires_at"}):
            reasons.append("native expiry column store.expires_at")
            score = 1.0
        return Match(cls.preset, score, reasons, dict(cls.defaults))

    # -- subjects ----------------------------------------------------------------------
    def _namespaced(self) -> bool:
        """Subjects from the namespace: the default mapping on the store table (a user's
        query gets its `prefix` column judged namespace by namespace)."""
        return self.source.subject == "prefix"

    def _store_table(self) -> bool:
        return self.source.query is None and bool(self.source.table)

    def namespace_positions(self) -> dict[int, int]:
        """The subject position per namespace depth, from the store's distinct namespaces
        (one pass over LangGraph's prefix index)."""
        if self._positions is None and not self._store_table():
            self._positions = {}
        if self._positions is None:
            stmt = exp.select(sqlguard.column("prefix")).distinct().from_(sqlguard.table(self.source.table))
            before = self.rows_read
            prefixes = [r["prefix"] for r in self.iter_rows(stmt.sql(dialect=self.dialect))]
            self.rows_read = before
            self._positions = subject_positions(p.decode() if isinstance(p, bytes) else p for p in prefixes)
        return self._positions

    # -- reading -----------------------------------------------------------------------
    def _watches_ttl(self) -> bool:
        cols = self.table_info(self.source.table).columns if self.source.table else []
        return self.source.query is None and self.source.expires_at == "expires_at" \
            and {"expires_at", "ttl_minutes"} <= set(cols)

    def read(self, cursor: dict | None = None):
        cursor = dict(cursor or {})
        incremental = bool(cursor)
        if self._namespaced():
            saved = cursor.get("namespaces") if incremental else None
            self._positions = {int(k): v for k, v in saved.items()} if saved else None
            self.namespace_positions()
        ttl = self._watches_ttl()
        mark = cursor.get("ttl_started") if incremental else None
        at_mark = list(cursor.get("ttl_at_mark") or [])
        if ttl and mark is None:
            mark, at_mark = self._ttl_mark()          # before the rows: later refreshes are above it
        seen: set[tuple] = set()
        for rec in super().read(cursor or None):
            if incremental:
                seen.add(tuple(rec.pk.values()))
            yield rec
        base = dict(self.cursor or {})
        if ttl and incremental and cursor.get("ttl_started") is not None:
            mark, at_mark = yield from self._ttl_restarted(mark, at_mark, seen)
        if ttl:
            base.update({"ttl_started": mark, "ttl_at_mark": at_mark})
        if self._positions is not None:
            base["namespaces"] = {str(k): v for k, v in self._positions.items()}
        self.cursor = base

    def _ttl_mark(self) -> tuple[float | None, list[int]]:
        """The latest TTL start in the table and the rows sitting at it."""
        stmt = sqlglot.parse_one(f"SELECT rowid, {TTL_STARTED_SQL} FROM store WHERE expires_at IS NOT NULL "
                                 f"AND ttl_minutes IS NOT NULL AND {TTL_STARTED_SQL} = (SELECT MAX({TTL_STARTED_SQL}) "
                                 "FROM store WHERE expires_at IS NOT NULL AND ttl_minutes IS NOT NULL) LIMIT ?",
                                 read="sqlite")
        for table in stmt.find_all(exp.Table):
            table.replace(sqlguard.table(self.source.table))
        rows = self._execute(stmt.sql(dialect=self.dialect), (TTL_AT_MARK,)).fetchall()
        return (rows[0][1] if rows else None), [r[0] for r in rows]

    def _ttl_restarted(self, mark: float, at_mark: list[int], seen: set):
        """Yield the rows whose TTL was (re)started after `mark` and not read yet."""
        mapping, pks, wanted, _, _ = self._plan()
        started = exp.alias_(sqlglot.parse_one(TTL_STARTED_SQL, read="sqlite"),
                             exp.to_identifier(TTL_STARTED, quoted=True))
        stmt = self._select(wanted, True).select(started)
        # `expires_at >= 'second of the mark'` lets the partial index on expires_at serve: a TTL
        # started after the mark ends after it (both formats LangGraph writes sort as text).
        floor = sqlglot.parse_one("STRFTIME('%Y-%m-%d %H:%M:%S', ?, 'unixepoch')", read="sqlite")
        cond = exp.and_(exp.Not(this=exp.Is(this=sqlguard.column("expires_at"), expression=exp.Null())),
                        exp.Not(this=exp.Is(this=sqlguard.column("ttl_minutes"), expression=exp.Null())),
                        exp.GTE(this=sqlguard.column("expires_at"), expression=floor))
        params: list = [mark]
        newer = exp.GT(this=sqlglot.parse_one(TTL_STARTED_SQL, read="sqlite"), expression=exp.Placeholder())
        params.append(mark)
        same = exp.EQ(this=sqlglot.parse_one(TTL_STARTED_SQL, read="sqlite"), expression=exp.Placeholder())
        params.append(mark)
        if at_mark:
            same = exp.and_(same, exp.Not(this=exp.In(this=exp.column("rowid"),
                                                       expressions=[exp.Placeholder() for _ in at_mark])))
            params.extend(at_mark)
        stmt = stmt.where(exp.and_(cond, exp.paren(exp.or_(newer, exp.paren(same)))))
        new_mark, new_at = mark, list(at_mark)
        for row in self.iter_rows(stmt.sql(dialect=self.dialect), tuple(params)):
            value, rid = row.get(TTL_STARTED), row.get(ROWID)
            if value is not None and value > new_mark:
                new_mark, new_at = value, []
            if value == new_mark and rid is not None and len(new_at) < TTL_AT_MARK:
                new_at.append(rid)
            rec = self.row_to_record(row, pks, mapping)
            if rec is None:
                continue
            if tuple(rec.pk.values()) in seen:
                # already read by the updated_at pass (its same-second recheck sees the new
                # expires_at as changed content): one row read once, in rows_read too
                self.rows_read -= 1
                continue
            yield rec
        return new_mark, new_at

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        if self.source.text == "value":   # the default: dig the text out of the JSON
            rec.text = text_from_value(row.get("value")) or rec.text
        fixed = namespace_position(mapping)
        if fixed is not None or self._namespaced():
            prefix = row.get("prefix")
            prefix = prefix.decode() if isinstance(prefix, bytes) else prefix
            rec.subject = subject_of(prefix, None if fixed is not None else self.namespace_positions(), fixed)
        return rec
