"""agno's user memories (`SqliteDb(db_file=…)`, table `agno_memories` by default).

`SqliteDb.upsert_user_memory()` writes `memory_id` (pk), `memory` (a SQLAlchemy JSON
column: the text stored JSON-encoded, `"User likes pizza"` with its quotes), `input`,
`user_id`, `agent_id`, `team_id`, `topics` (JSON list), `created_at` / `updated_at`
(BIGINT epoch seconds; an upsert keeps created_at and sets updated_at). The preset decodes
the JSON text, takes the subject from `user_id` (else the agent's or team's id). The
table name is whatever `memory_table=` said; any table with these columns matches.
"""
from __future__ import annotations

import json

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.paths import maybe_json
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import best_of, Match
from memwatch_overlay.connectors.presets.langgraph import text_from_value

MEMORY_COLUMNS = {"memory_id", "memory", "user_id", "topics", "created_at", "updated_at"}
DEFAULT_TABLE = "agno_memories"


def json_value(value):
    """A JSON column's value: SQLAlchemy's JSON type stores a string as `"…"` with its quotes."""
    value = maybe_json(value)
    if isinstance(value, str) and value.startswith('"'):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class AgnoMemories(SqliteConnector):
    preset = "agno"
    description = "agno user memories (agno_memories: memory JSON text, user_id, epoch created_at/updated_at)"
    defaults = dict(table=DEFAULT_TABLE, id=["memory_id"], text="memory", subject="user_id",
                    created_at="created_at", updated_at="updated_at")
    extra_columns = ("agent_id", "team_id")

    @classmethod
    def match(cls, tables):
        return best_of(
            Match(cls.preset, 1.0 if t.name == DEFAULT_TABLE else 0.9,
                  [f"table {t.name!r} with columns {', '.join(sorted(MEMORY_COLUMNS))} (agno's memory table)"],
                  {**cls.defaults, "table": t.name})
            for t in tables if MEMORY_COLUMNS <= set(t.columns))

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        if self.source.text == "memory":
            text = text_from_value(json_value(row.get("memory")))
            if not text or not text.strip():
                return None
            rec.text = text
        if rec.subject is None and self.source.subject == "user_id":
            rec.subject = next((str(row[c]) for c in ("agent_id", "team_id") if row.get(c)), None)
        return rec
