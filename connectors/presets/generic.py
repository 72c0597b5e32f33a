"""A generic single table: one text-like column and one timestamp-like column.

The fallback for home-made stores: a table whose column names say "this is the
memory" (`fact`, `memory`, `content`, `text`, …) and "this is when" (`created_at`, …).
"""
from __future__ import annotations

from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import Match

TEXT_NAMES = ("fact_value", "memory", "fact", "content", "text", "value", "note", "observation",
              "summary", "message", "body", "data")
CREATED_NAMES = ("created_at", "created", "timestamp", "ts", "time", "datetime", "date", "inserted_at",
                 "added_at", "learned_at")
UPDATED_NAMES = ("updated_at", "updated", "modified_at", "last_modified")
ACCESSED_NAMES = ("accessed_at", "last_accessed", "last_used", "last_seen", "last_access")
COUNT_NAMES = ("access_count", "hits", "uses", "use_count", "hit_count")
SUBJECT_NAMES = ("user_id", "user", "subject", "owner", "namespace", "agent_id", "session_id")
KEY_NAMES = ("fact_key", "key", "name", "slot", "attribute")
CATEGORY_NAMES = ("category", "kind", "type", "memory_type")
EXPIRES_NAMES = ("expires_at", "expiry", "expiration_date", "valid_until")


def _pick(columns, names, exclude=()):
    lowered = {c.lower(): c for c in columns if c not in exclude}
    for name in names:
        if name in lowered:
            return lowered[name]
    return None


OPTIONAL_FIELDS = (("updated_at", UPDATED_NAMES), ("accessed_at", ACCESSED_NAMES),
                   ("access_count", COUNT_NAMES), ("subject", SUBJECT_NAMES), ("key", KEY_NAMES),
                   ("category", CATEGORY_NAMES), ("expires_at", EXPIRES_NAMES))


def optional_fields(columns, used: set) -> dict:
    """The optional mapping keys whose usual column names are present (each column used once)."""
    out = {}
    used = set(used)
    for key, names in OPTIONAL_FIELDS:
        col = _pick(columns, names, exclude=used)
        if col:
            out[key] = col
            used.add(col)
    return out


class GenericTable(SqliteConnector):
    preset = "generic"
    description = "Any table with a memory-text column and a timestamp column"
    defaults: dict = {}

    @classmethod
    def match(cls, tables):
        best = None
        for t in tables:
            text = _pick(t.columns, TEXT_NAMES)
            created = _pick(t.columns, CREATED_NAMES) or _pick(t.columns, UPDATED_NAMES, exclude={text})
            if not text or not created:
                continue
            # a table whose only time column is `updated_at` ages each row from its last write
            mapping = {"table": t.name, "text": text, "created_at": created}
            if t.pk:
                mapping["id"] = list(t.pk)
            mapping.update(optional_fields(t.columns, used={text, created}))
            reasons = [f"table {t.name!r}: text column {text!r}, timestamp column {created!r}"]
            score = 0.3 + 0.02 * len(mapping)
            if best is None or score > best.score:
                best = Match(cls.preset, score, reasons, mapping)
        return best
