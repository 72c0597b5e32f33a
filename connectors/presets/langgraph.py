"""LangGraph `SqliteStore` (langgraph-checkpoint-sqlite): table `store`.

value is orjson bytes (BLOB) of the dict given to put(); the text lives at
`value.memory` for plain apps, `value.content.content` for langmem, or another
field: the preset tries those, then the whole value as text. The namespace
`users.<uid>.…` gives the subject. `expires_at` is LangGraph's own TTL column.
"""
from __future__ import annotations

import json

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.paths import maybe_json
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import Match, has_columns

TEXT_FIELDS = ("memory", "content", "text", "data", "fact", "value")


def text_from_value(value) -> str | None:
    """The memory text inside a LangGraph item value (dict written by put())."""
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
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return None


def subject_from_prefix(prefix: str | None) -> str | None:
    """`users.u_priya.memories` -> `u_priya`: the namespace's second part; a one-part
    namespace is the subject itself."""
    if not prefix:
        return None
    parts = prefix.split(".")
    if len(parts) >= 2:
        return parts[1]
    return parts[0]


class LangGraphSqliteStore(SqliteConnector):
    preset = "langgraph"
    description = "LangGraph SqliteStore (table store: prefix, key, value, expires_at)"
    defaults = dict(table="store", id=["prefix", "key"], text="value", key="key", subject="prefix",
                    created_at="created_at", updated_at="updated_at", expires_at="expires_at")
    # LangGraph's TTL sweeper runs `DELETE … WHERE expires_at < CURRENT_TIMESTAMP` (a text
    # comparison), so an expiry must be written the way put(ttl=…) writes it: str(datetime).
    natural_writebacks = {"expire": {"expires_at": "now"}}
    timestamp_samples = {"expires_at": "2000-01-01 00:00:00.000000+00:00"}

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

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        if self.source.text == "value":   # the default: dig the text out of the JSON
            rec.text = text_from_value(row.get("value")) or rec.text
        if self.source.subject == "prefix":
            rec.subject = subject_from_prefix(rec.subject)
        return rec
