"""LangGraph `PostgresStore` (langgraph-checkpoint-postgres): table `store`.

Created by `PostgresStore.setup()`: prefix text, key text, value jsonb, created_at and
updated_at timestamptz, expires_at timestamptz and ttl_minutes int (LangGraph's own
TTL), primary key (prefix, key). The value is the dict given to put(); the text and
the subject are found as in the SQLite store (see presets/langgraph.py).
"""
from __future__ import annotations

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.postgres import PostgresConnector
from memwatch_overlay.connectors.presets import Match
from memwatch_overlay.connectors.presets.langgraph import subject_from_prefix, text_from_value

REQUIRED = {"prefix", "key", "value", "created_at", "updated_at"}


class LangGraphPostgresStore(PostgresConnector):
    preset = "langgraph-postgres"
    kind = "postgres"
    description = "LangGraph PostgresStore (table store: prefix, key, value jsonb, expires_at)"
    defaults = dict(table="store", id=["prefix", "key"], text="value", key="key", subject="prefix",
                    created_at="created_at", updated_at="updated_at", expires_at="expires_at")
    # PostgresStore's sweeper deletes rows whose expires_at (timestamptz) is past.
    natural_writebacks = {"expire": {"expires_at": "now"}}

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

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        if self.source.text == "value":
            rec.text = text_from_value(row.get("value")) or rec.text
        if self.source.subject == "prefix":
            rec.subject = subject_from_prefix(rec.subject)
        return rec
