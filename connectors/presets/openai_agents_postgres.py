"""OpenAI Agents SDK `SQLAlchemySession` on Postgres: the SDK's documented path to Postgres.

`SQLAlchemySession.from_url(session_id, url="postgresql+asyncpg://…", create_tables=True)`
creates the same two tables as `SQLiteSession`, in the database's default schema:
`agent_sessions(session_id varchar PK, created_at, updated_at)` and
`agent_messages(id serial PK, session_id, message_data text, created_at timestamp)`.
`created_at` is `timestamp without time zone` filled by the server's CURRENT_TIMESTAMP, so
it is the server's local time; on a server whose TimeZone is UTC (the usual), UTC.
Read as in presets/openai_agents.py: the user's messages only, subject = the session id
without a prefix that every session id shares (`assistant-u_erin` -> `u_erin`).
"""
from __future__ import annotations

import psycopg
from sqlglot import exp

from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.postgres import PostgresConnector
from memwatch_overlay.connectors.presets import Match
from memwatch_overlay.connectors.presets.openai_agents import (MESSAGE_COLUMNS, SESSION_COLUMNS,
                                                               SessionMessages, shared_prefix)


class OpenAIAgentsPostgresSession(SessionMessages, PostgresConnector):
    preset = "openai-agents-postgres"
    kind = "postgres"
    description = "OpenAI Agents SDK SQLAlchemySession on Postgres (user messages of agent_messages)"
    defaults = dict(table="agent_messages", id=["id"], text="message_data", subject="session_id",
                    created_at="created_at")
    row_local = False       # the subject's session prefix is computed over the table in read()
    conversation_log = True  # subjects are sessions: a full read says when each has one conversation

    def __init__(self, source, **kwargs):
        super().__init__(source, **kwargs)
        self._prefix: str | None = None

    @classmethod
    def match(cls, tables):
        best = None
        for t in tables:
            schema, _, name = t.name.rpartition(".")
            if not MESSAGE_COLUMNS <= set(t.columns):
                continue
            reasons = [f"table {t.name!r} with columns {', '.join(sorted(MESSAGE_COLUMNS))}"]
            score = 0.9 if name == "agent_messages" else 0.8
            sessions = next((o for o in tables if o.name == (f"{schema}." if schema else "") + "agent_sessions"), None)
            if sessions is not None and SESSION_COLUMNS <= set(sessions.columns):
                reasons.append(f"sessions table {sessions.name!r}")
                score += 0.1
            if best is None or score > best.score:
                best = Match(cls.preset, score, reasons, {**cls.defaults, "table": t.name})
        return best

    def read(self, cursor=None):
        self._ensure_connected()
        self._prefix = self._session_prefix() if self._strips_prefix() else None
        yield from super().read(cursor)

    def fetch(self, pks):
        self._ensure_connected()
        if self._prefix is None and self._strips_prefix():
            self._prefix = self._session_prefix()
        yield from super().fetch(pks)

    def _session_prefix(self) -> str | None:
        """Shared `<agent>-` prefix of all session ids (min and max: two index lookups)."""
        rel, schema = self._from()
        col = sqlguard.column("session_id")
        stmt = exp.select(exp.Min(this=col), exp.Max(this=col)).from_(sqlguard.table(rel, schema))
        try:
            rows = list(self.iter_rows(stmt.sql(dialect=self.dialect)))
        except psycopg.Error as exc:
            raise self._fail(exc, "read failed") from None
        self.rows_read -= len(rows)
        if not rows:
            return None
        low, high = list(rows[0].values())
        return shared_prefix(low, high)

