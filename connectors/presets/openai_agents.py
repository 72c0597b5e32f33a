"""OpenAI Agents SDK `SQLiteSession`: a conversation log, read as the user's statements.

Table `agent_messages(id, session_id, message_data, created_at)` holds one input item
per row (JSON text). Facts are the **user's** messages only: what the user said about
themselves is what a memory holds; assistant replies, tool calls and other items are
read (and counted) but yield nothing. `content` may be a string or a list of parts
(`{"type": "input_text", "text": …}`); text parts are joined.

Subject: the session id. SDK apps often name sessions `<agent>-<user>`
(`assistant-u_priya`); when every session id in the store starts with the same
alphabetic word and a `-` or `:` (checked on the lowest and highest id, which bound
all others in sort order), that shared word carries no information and is stripped,
so the subject is `u_priya`. Otherwise (uuids, mixed prefixes) the whole id is kept.
Times are SQLite CURRENT_TIMESTAMP text (UTC). The log is append-only: rowid cursor.
"""
from __future__ import annotations

import re

from sqlglot import exp

from memwatch_overlay.connectors import sqlguard
from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.paths import maybe_json
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import Match, columns_of
from memwatch_overlay.rules.config import SourceConfig

MESSAGE_COLUMNS = {"id", "session_id", "message_data", "created_at"}
SESSION_COLUMNS = {"session_id", "created_at", "updated_at"}
_PREFIX = re.compile(r"^([A-Za-z][A-Za-z_]*[-:])(.+)$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def shared_prefix(lowest: str | None, highest: str | None) -> str | None:
    """The `<word>-` prefix both ends of the sorted session ids share, if any."""
    if not lowest or not highest or _UUID.match(lowest) or _UUID.match(highest):
        return None
    a, b = _PREFIX.match(lowest), _PREFIX.match(highest)
    if a and b and a.group(1) == b.group(1):
        return a.group(1)
    return None


def message_text(data) -> tuple[str | None, str | None]:
    """(role, text) of one SDK input item; text None when it carries no text."""
    item = maybe_json(data)
    if not isinstance(item, dict):
        return None, None
    role = item.get("role")
    content = item.get("content")
    if isinstance(content, str):
        return role, content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        parts += [p for p in content if isinstance(p, str)]
        return role, "\n".join(parts) if parts else None
    return role, None


def _messages_table(tables) -> str | None:
    names = [t.name for t in tables if MESSAGE_COLUMNS <= set(t.columns)]
    if "agent_messages" in names:
        return "agent_messages"
    return names[0] if names else None


class SessionMessages:
    """What both session presets (SQLite here, Postgres in openai_agents_postgres.py) do with a
    row: only the user's messages, their text from message_data, the shared `<agent>-` prefix
    (``self._prefix``, set by the connector's read) taken off the session id."""

    source: SourceConfig
    _prefix: str | None

    def _strips_prefix(self) -> bool:
        """The shared prefix goes unless the config maps session ids itself (its pattern
        and map see the session id as stored)."""
        return self.source.subject == "session_id" and not (self.source.subject_pattern or self.source.subject_map)

    def row_to_record(self, row, pks, mapping) -> Record | None:
        role, text = message_text(row.get("message_data"))
        if role != "user" or not text or not text.strip():
            return None
        rec = super().row_to_record(row, pks, mapping)
        if rec is None:
            return None
        if self.source.text == "message_data":
            rec.text = text
        if self._prefix and rec.subject and rec.subject.startswith(self._prefix):
            rec.subject = rec.subject[len(self._prefix):]
        return rec


class OpenAIAgentsSession(SessionMessages, SqliteConnector):
    preset = "openai-agents"
    description = "OpenAI Agents SDK SQLiteSession (user messages of agent_messages)"
    defaults = dict(table="agent_messages", id=["id"], text="message_data", subject="session_id",
                    created_at="created_at")
    extra_columns = ("message_data",)
    row_local = False       # the subject's session prefix is computed over the table in read()
    conversation_log = True  # subjects are sessions: a full read says when each has one conversation

    def __init__(self, source, **kwargs):
        super().__init__(source, **kwargs)
        self._prefix: str | None = None

    @classmethod
    def match(cls, tables):
        table = _messages_table(tables)
        if table is None:
            return None
        reasons = [f"table {table!r} with columns {', '.join(sorted(MESSAGE_COLUMNS))}"]
        score = 0.9
        sessions = columns_of(tables, "agent_sessions")
        if sessions is not None and SESSION_COLUMNS <= sessions:
            reasons.append("sessions table 'agent_sessions'")
            score = 1.0
        return Match(cls.preset, score, reasons, {**cls.defaults, "table": table})

    def read(self, cursor=None):
        self._prefix = self._session_prefix() if self._strips_prefix() else None
        yield from super().read(cursor)

    def _session_prefix(self) -> str | None:
        """Shared `<agent>-` prefix of all session ids (two index lookups)."""
        col = sqlguard.column("session_id")
        stmt = exp.select(exp.Min(this=col), exp.Max(this=col)).from_(sqlguard.table(self.source.table))
        row = self._execute(stmt.sql(dialect=self.dialect), ()).fetchone()
        return shared_prefix(*(row or (None, None)))
