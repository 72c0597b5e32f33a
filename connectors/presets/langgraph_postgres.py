"""LangGraph `PostgresStore` (langgraph-checkpoint-postgres): table `store`.

Created by `PostgresStore.setup()`: prefix text, key text, value jsonb, created_at and
updated_at timestamptz, expires_at timestamptz and ttl_minutes int (LangGraph's own
TTL), primary key (prefix, key). The value is the dict given to put(); the text and
the subject are found as in the SQLite store (see presets/langgraph.py), and so is a TTL
refreshed on read: `expires_at - ttl_minutes` moves forward without `updated_at`, so the
incremental read also takes rows whose TTL started after the watermark.
"""
from __future__ import annotations

import psycopg
from sqlglot import exp

from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.postgres import PostgresConnector, _iso
from memwatch_overlay.connectors.presets import Match
from memwatch_overlay.connectors.presets.langgraph import namespace_position, text_from_value
from memwatch_overlay.connectors.presets.namespaces import subject_of, subject_positions

REQUIRED = {"prefix", "key", "value", "created_at", "updated_at"}


class LangGraphPostgresStore(PostgresConnector):
    preset = "langgraph-postgres"
    kind = "postgres"
    description = "LangGraph PostgresStore (table store: prefix, key, value jsonb, expires_at)"
    defaults = dict(table="store", id=["prefix", "key"], text="value", key="key", subject="prefix",
                    created_at="created_at", updated_at="updated_at", expires_at="expires_at")
    # PostgresStore's sweeper deletes rows whose expires_at (timestamptz) is past.
    natural_writebacks = {"expire": {"expires_at": "now"}}

    def __init__(self, source, **kwargs):
        super().__init__(source, **kwargs)
        self._positions: dict[int, int] | None = None

    @classmethod
    def match(cls, tables):
        best = None
        for t in tables:
            cols = set(t.columns)
            if t.name.rsplit(".", 1)[-1] != "store" or not REQUIRED <= cols:
                continue
            reasons = [f"table {t.name!r} with columns {', '.join(sorted(REQUIRED))}"]
            score = 0.9
            defaults = {**cls.defaults, "table": t.name}
            if "expires_at" in cols:
                reasons.append(f"native expiry column {t.name}.expires_at")
                score = 1.0
            else:
                defaults.pop("expires_at")
            if any(o.name.rsplit(".", 1)[-1] == "store_migrations" for o in tables):
                reasons.append("LangGraph's store_migrations table")
            if best is None or score > best.score:
                best = Match(cls.preset, score, reasons, defaults)
        return best

    # -- subjects ----------------------------------------------------------------------
    def namespace_positions(self) -> dict[int, int]:
        if self._positions is None:
            rel, schema = self._from()
            stmt = exp.select(sqlguard.column("prefix")).distinct().from_(sqlguard.table(rel, schema))
            before = self.rows_read
            try:
                prefixes = [r["prefix"] for r in self.iter_rows(stmt.sql(dialect=self.dialect))]
            except psycopg.Error as exc:
                raise self._fail(exc, "read failed") from None
            finally:
                self.rows_read = before
            self._positions = subject_positions(prefixes)
        return self._positions

    def read(self, cursor=None):
        self._ensure_connected()
        saved = (cursor or {}).get("namespaces")
        self._positions = {int(k): v for k, v in saved.items()} if saved else None
        if self.source.subject == "prefix":
            self.namespace_positions()
        yield from super().read(cursor)
        if self._positions is not None:
            self.cursor = {**(self.cursor or {}), "namespaces": {str(k): v for k, v in self._positions.items()}}

    # -- reading -----------------------------------------------------------------------
    def build_select(self, mapping: dict, pks: list[str], since: float | None) -> str:
        cols = set(self._column_types or {})
        if since is None or self.source.query is not None or self.source.expires_at != "expires_at" \
                or not {"expires_at", "ttl_minutes"} <= cols:
            return super().build_select(mapping, pks, since)
        # written since the watermark, OR its TTL (re)started since: expires_at - ttl_minutes >= it
        stmt = exp.maybe_parse(super().build_select(mapping, pks, None), dialect=self.dialect)
        literal = exp.cast(exp.Literal.string(_iso(since)), "timestamptz")
        started = exp.Sub(this=sqlguard.column("expires_at"),
                          expression=exp.Mul(this=sqlguard.column("ttl_minutes"),
                                             expression=exp.Interval(this=exp.Literal.string("1"),
                                                                     unit=exp.var("MINUTE"))))
        changed = exp.or_(exp.GTE(this=self.watermark(mapping), expression=literal),
                          exp.GTE(this=started, expression=literal.copy()))
        return stmt.where(exp.paren(changed)).sql(dialect=self.dialect)

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        if self.source.text == "value":
            rec.text = text_from_value(row.get("value")) or rec.text
        fixed = namespace_position(mapping)
        if fixed is not None or self.source.subject == "prefix":
            rec.subject = subject_of(row.get("prefix"), None if fixed is not None else self.namespace_positions(),
                                     fixed)
        return rec
