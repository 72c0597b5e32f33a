"""The memwatch README's SQLite adapter: an app's own key/value table, checked with run_check()."""
from __future__ import annotations

import hashlib
import sqlite3

import pytest

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.integrations.sqlite_table import SQLiteTableAdapter

T0 = 1_790_000_000.0
DAY = 86400.0


@pytest.fixture
def app_db(tmp_path):
    db = tmp_path / "my_app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE user_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                     "fact_value TEXT, created_at TEXT)")
        conn.executemany("INSERT INTO user_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)", [
            ("u_priya", "employer", "Google", "2026-09-01T00:00:00Z"),
            ("u_priya", "city", "Jakarta", "2026-09-01T00:00:00Z"),
            ("u_tomasz", "employer", "Deloitte", "2026-09-01T00:00:00Z")])
    return db


def test_run_check_compares_text_with_the_tables_memories_and_never_writes_it(app_db, tmp_path):
    before = hashlib.sha256(app_db.read_bytes()).hexdigest()
    adapter = SQLiteTableAdapter(app_db, tmp_path / "memwatch.db", table="user_facts",
                                 key_column="fact_key", value_column="fact_value", clock=lambda: T0)
    result = adapter.run_check("I just moved to Surabaya for my new job at Anthropic", subject="u_priya")
    assert result.summary == "2 contradiction(s) detected. 0 stale memories."
    updates = {u["memory_key"]: u for u in result.suggested_updates}
    assert (updates["employer"]["old_value"], updates["employer"]["new_value"]) == ("Google", "Anthropic")
    assert (updates["city"]["old_value"], updates["city"]["new_value"]) == ("Jakarta", "Surabaya")
    assert updates["employer"]["ref"].startswith("bot:user_facts:")
    assert hashlib.sha256(app_db.read_bytes()).hexdigest() == before          # read-only
    # a change in the table is seen by the next check (incremental sync)
    with sqlite3.connect(app_db) as conn:
        conn.execute("UPDATE user_facts SET fact_value = 'Surabaya' WHERE fact_key = 'city' AND user_id = 'u_priya'")
    again = adapter.run_check("I just moved to Surabaya for my new job at Anthropic", subject="u_priya")
    assert {u["memory_key"] for u in again.suggested_updates} == {"employer"}
    # the subject column was found by its name: Tomasz's employer is not Priya's
    assert all(u["ref"] != "bot:user_facts:3" for u in result.suggested_updates)


def test_a_missing_column_or_table_is_a_one_line_error(app_db, tmp_path):
    with pytest.raises(ConfigError, match="no column 'value'"):
        SQLiteTableAdapter(app_db, tmp_path / "m.db", table="user_facts", key_column="fact_key",
                           value_column="value")
    with pytest.raises(ConfigError, match="no table 'nope'"):
        SQLiteTableAdapter(app_db, tmp_path / "m.db", table="nope", key_column="k", value_column="v")
