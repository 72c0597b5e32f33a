"""CrewAI 0.x long-term memory (`LTMSQLiteStorage`): table `long_term_memories`.

One row per evaluated task: `metadata` is JSON text whose `suggestions` list holds
what the crew learned; the first suggestion is the memory's text (the task
description when there is none). `datetime` is `str(time.time())`: epoch seconds as
a decimal string. There is no user, key, expiry or deleted column: `task_description`
is free text written by each app, with no general pattern to take a user from, so
the subject stays None. Rows are only ever appended: rowid cursor.
"""
from __future__ import annotations

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import Match, has_columns

LTM_COLUMNS = {"id", "task_description", "metadata", "datetime", "score"}


class CrewAILongTermMemory(SqliteConnector):
    preset = "crewai"
    description = "CrewAI 0.x long-term memory (long_term_memories: metadata.suggestions)"
    defaults = dict(table="long_term_memories", id=["id"], text="metadata.suggestions[0]",
                    created_at="datetime")
    extra_columns = ("task_description",)

    @classmethod
    def match(cls, tables):
        reasons = has_columns(tables, "long_term_memories", LTM_COLUMNS)
        if reasons is None:
            return None
        return Match(cls.preset, 1.0, reasons, dict(cls.defaults))

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None and self.source.text == self.defaults["text"] and row.get("task_description"):
            # no suggestion recorded: the task itself is what was remembered
            rec = super().row_to_record(row, pks, {**mapping, "text": ("task_description", [])})
        return rec
