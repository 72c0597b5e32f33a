"""CrewAI 1.x memory: the unified `Memory`'s LanceDB table `memories` (`memories.lance`).

`crewai.memory.storage.lancedb_storage.LanceDBStorage` keeps one row per memory in
`<storage>/memory/memories.lance`, where `<storage>` is `$CREWAI_STORAGE_DIR` or the platform
data folder of the project (`~/.local/share/<project folder>/` on Linux): `id` (uuid text),
`content` (the memory), `scope` (a path such as `/user/u_erin` or `/crew/research/…`),
`categories_str` / `metadata_str` (JSON text), `importance`, `created_at` and
`last_accessed` (naive UTC ISO text from `datetime.utcnow().isoformat()`), `source` (who
it came from: "user ID, session ID" in CrewAI's words), `private`, `vector`.
`Memory.update()` is a delete + add that keeps `created_at`; recall touches `last_accessed`.

Subject: `source`, else the `scope` (records of different scopes are never compared).
`last_accessed` is the access time. The CrewAI 0.x SQLite long-term memory is the `crewai`
preset for SQLite files (presets/crewai.py); this is the same preset name for LanceDB.
"""
from __future__ import annotations

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.lancedb import LanceConnector
from memwatch_overlay.connectors.presets import Match, has_columns

MEMORY_COLUMNS = {"id", "content", "scope", "categories_str", "metadata_str", "created_at", "last_accessed"}


class CrewAIMemories(LanceConnector):
    preset = "crewai"
    kind = "lancedb"
    description = "CrewAI 1.x unified memory (LanceDB memories.lance: content, scope, source)"
    defaults = dict(table="memories", id=["id"], text="content", subject="source", created_at="created_at",
                    accessed_at="last_accessed")
    extra_columns = ("scope",)

    @classmethod
    def match(cls, tables):
        reasons = has_columns(tables, "memories", MEMORY_COLUMNS)
        if reasons is None:
            return None
        defaults = dict(cls.defaults)
        if not has_columns(tables, "memories", {"source"}):
            defaults["subject"] = "scope"
        return Match(cls.preset, 1.0, reasons + ["CrewAI's LanceDB memory layout"], defaults)

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is not None and rec.subject is None and self.source.subject == "source":
            scope = row.get("scope")
            rec.subject = scope if isinstance(scope, str) and scope.strip("/") else None
        return rec
