"""A generic JSON/JSONL file: records with a memory-text field (timestamps if present).

The JSON counterpart of `generic`: picks the collection whose field names say "this is
the memory" (`memory`, `fact`, `text`, …) and, when there is one, "this is when". A
file without timestamps still matches (lower score): the overlay then ages records
from when it first saw them.
"""
from __future__ import annotations

from memwatch_overlay.connectors.json_file import JsonConnector
from memwatch_overlay.connectors.presets import Match
from memwatch_overlay.connectors.presets.generic import (
    CREATED_NAMES,
    TEXT_NAMES,
    _pick,
    optional_fields,
)

ID_NAMES = ("id", "uuid", "memory_id", "fact_id", "_id")


class GenericJson(JsonConnector):
    preset = "generic-json"
    kind = "json"
    description = "Any JSON/JSONL file whose records have a memory-text field"
    defaults: dict = {}

    @classmethod
    def match(cls, tables):
        best = None
        for t in tables:
            text = _pick(t.columns, TEXT_NAMES)
            if not text:
                continue
            mapping = {"records": t.name, "text": text}
            used = {text}
            created = _pick(t.columns, CREATED_NAMES)
            if created:
                mapping["created_at"] = created
                used.add(created)
            ident = _pick(t.columns, ID_NAMES, exclude=used)
            if ident:
                mapping["id"] = [ident]
                used.add(ident)
            mapping.update(optional_fields(t.columns, used))
            when = f", timestamp field {created!r}" if created else ", no timestamp field (aged from first sight)"
            reasons = [f"records {t.name!r}: text field {text!r}{when}"]
            score = (0.3 if created else 0.2) + 0.02 * len(mapping)
            if best is None or score > best.score:
                best = Match(cls.preset, score, reasons, mapping)
        return best
