"""LlamaIndex `SQLiteChatStore` (llama-index-storage-chat-store-sqlite): table `data_<name>`.

`SQLiteChatStore.from_uri("sqlite:///chat.db", table_name="chatstore")` creates
`data_chatstore(id INTEGER PRIMARY KEY, key VARCHAR, value JSON)`: one row per message of
the chat keyed `key` (an app's user or session id), `value` the message's
`model_dump(mode="json")`: `{"role": "user", "additional_kwargs": {}, "blocks": [{"block_type":
"text", "text": …}]}` (older llama-index wrote `"content": …`). Like the OpenAI Agents
sessions this is a conversation log: facts are the **user's** messages, subject = key.
There are no timestamps: the overlay ages each message from when it first saw it, and
message order (the autoincrement id) tells older from newer. Rows are appended: rowid cursor.
"""
from __future__ import annotations

from memwatch_overlay.connectors.base import Record
from memwatch_overlay.connectors.paths import maybe_json
from memwatch_overlay.connectors.sqlite import SqliteConnector
from memwatch_overlay.connectors.presets import best_of, Match

CHAT_COLUMNS = ["id", "key", "value"]


def chat_text(value) -> tuple[str | None, str | None]:
    """(role, text) of one stored ChatMessage; text None when it holds no text block."""
    msg = maybe_json(value)
    if not isinstance(msg, dict):
        return None, None
    role = msg.get("role")
    content = msg.get("content")
    if isinstance(content, str) and content.strip():
        return role, content
    blocks = msg.get("blocks")
    if isinstance(blocks, list):
        parts = [b.get("text") for b in blocks
                 if isinstance(b, dict) and b.get("block_type", "text") == "text" and isinstance(b.get("text"), str)]
        text = "\n".join(p for p in parts if p.strip())
        return role, text or None
    return role, None


class LlamaIndexChatStore(SqliteConnector):
    preset = "llamaindex"
    description = "LlamaIndex SQLiteChatStore (data_<name>: user messages per chat key)"
    # `where` keeps the assistant's turns out of the rows read, so the key-only deletion pass
    # sees exactly the rows that are facts
    defaults = dict(table="data_chatstore", id=["id"], text="value", subject="key",
                    where="json_extract(value, '$.role') = 'user'")
    extra_columns = ("value",)
    row_local = True

    @classmethod
    def match(cls, tables):
        return best_of(
            Match(cls.preset, 1.0 if t.name == "data_chatstore" else 0.9,
                  [f"table {t.name!r} with exactly the columns id, key, value (SQLiteChatStore)"],
                  {**cls.defaults, "table": t.name})
            for t in tables if sorted(t.columns) == sorted(CHAT_COLUMNS) and t.name.startswith("data_"))

    def row_to_record(self, row, pks, mapping) -> Record | None:
        role, text = chat_text(row.get("value"))
        if role != "user" or not text:
            return None
        rec = super().row_to_record(row, pks, mapping)
        if rec is not None and self.source.text == "value":
            rec.text = text
        return rec
