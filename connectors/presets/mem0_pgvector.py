"""mem0 with the pgvector vector store: one table per collection (default `mem0`).

mem0's PGVector store creates `<collection>(id UUID PRIMARY KEY, vector vector(n),
payload JSONB)`; Memory writes the payload as {"data": <memory text>, "hash",
"created_at", "updated_at" (after an update), "user_id" / "agent_id" / "run_id",
"actor_id", "role", plus the caller's metadata}. Timestamps are ISO-8601 with a zone
(mem0 uses US/Pacific), so the watermark casts them in SQL. The subject is the first
of user_id, agent_id, run_id present.
"""
from __future__ import annotations

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.postgres import PostgresConnector
from memwatch_overlay.connectors.presets import best_of, Match

REQUIRED = {"id", "vector", "payload"}
SUBJECT_KEYS = ("user_id", "agent_id", "run_id")


class Mem0PgVector(PostgresConnector):
    preset = "mem0-pgvector"
    kind = "postgres"
    description = "mem0 on Postgres/pgvector (table id, vector, payload JSONB with data, user_id, created_at)"
    defaults = dict(table="mem0", id=["id"], text="payload.data", subject="payload.user_id",
                    created_at="payload.created_at", updated_at="payload.updated_at")

    @classmethod
    def match(cls, tables):
        return best_of(
            Match(cls.preset, 1.0 if t.name.rsplit(".", 1)[-1] == "mem0" else 0.9,
                  [f"table {t.name!r} with columns id, vector, payload (mem0's pgvector layout)"],
                  {**cls.defaults, "table": t.name})
            for t in tables if REQUIRED <= set(t.columns))

    def row_to_record(self, row, pks, mapping) -> Record | None:
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        payload = row.get("payload")
        if self.source.subject == "payload.user_id" and rec.subject is None and isinstance(payload, dict):
            rec.subject = next((str(payload[k]) for k in SUBJECT_KEYS if payload.get(k)), None)
        return rec
