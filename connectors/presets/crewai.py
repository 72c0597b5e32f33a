"""CrewAI 0.x long-term memory (`LTMSQLiteStorage`): table `long_term_memories`.

One row per evaluated task: `metadata` is JSON text whose `suggestions` list holds
what the crew learned; the first suggestion is the memory's text (the task
description when there is none). `datetime` is `str(time.time())`: epoch seconds as
a decimal string. There is no user, key, expiry or deleted column: `task_description`
is free text written by each app, with no general pattern to take a user from, so
the subject stays None, and a full read says so: when the app's task descriptions name the
user, `subject = "task_description"` with a `subject_pattern` picks it out
(connectors/subjects.py). Rows are only ever appended: rowid cursor.
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
    rows_are_records = True     # read() only counts subjects: the key-only deletion pass serves

    @classmethod
    def match(cls, tables):
        reasons = has_columns(tables, "long_term_memories", LTM_COLUMNS)
        if reasons is None:
            return None
        return Match(cls.preset, 1.0, reasons, dict(cls.defaults))

    def read(self, cursor=None):
        subjects = 0
        for rec in super().read(cursor):
            subjects += rec.subject is not None
            yield rec
        if cursor is None and not subjects and self.rows_read:
            self.warn("CrewAI's long-term memory keeps no user: every memory is one subject, so all users' "
                      "memories are compared with each other. If the task descriptions name the user, map it: "
                      "subject = \"task_description\" and subject_pattern = '<regex with one group>' (docs/stores.md)")

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None and self.source.text == self.defaults["text"] and row.get("task_description"):
            # no suggestion recorded: the task itself is what was remembered
            rec = super().row_to_record(row, pks, {**mapping, "text": ("task_description", [])})
        return rec
