"""Hostile names and values in memwatch.toml cannot run SQL of their own.

Names reach SQL only as quoted identifiers (after being checked against the live schema)
and values only as bound parameters; these tests try the usual tricks on both paths.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from memwatch_overlay.core.errors import ConfigError, ConnectorError
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, OLD, file_digest, snapshot, write_config

AS_OF_TS = parse_as_of(AS_OF)
DROP = '"; DROP TABLE store; --'
HOSTILE_VALUES = [
    "'; DROP TABLE store; --",
    DROP,
    "x'); DELETE FROM store; --",
    "/* comment */ 1; ATTACH DATABASE 'evil.db' AS evil; --",
    "{label}; DROP TABLE store; --",
    "Robert'); DROP TABLE Students;--",
]


def _store(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE store (id INTEGER PRIMARY KEY, fact TEXT, at TEXT, note TEXT)")
        conn.executemany("INSERT INTO store VALUES (?, ?, ?, NULL)",
                         [(i, f"fact {i}", OLD) for i in range(1, len(HOSTILE_VALUES) + 1)])


def _toml_str(value: str) -> str:
    """A TOML basic string (JSON's escaping is valid TOML for these ASCII values)."""
    return json.dumps(value)


SOURCE = """
[[sources]]
name = "bot"
connector = "sqlite"
path = "store.db"
table = "store"
id = "id"
text = "fact"
created_at = "at"
"""


@pytest.mark.parametrize("column", [DROP, "note; DROP TABLE store", "note -- comment", "note\"", "[note]", "`note`"])
def test_hostile_column_names_are_refused_before_anything_runs(tmp_path, column):
    _store(tmp_path / "store.db")
    cfg = load_config(write_config(tmp_path, SOURCE + f"""
[[actions]]
when = "expired"
do = "set"
set = {{ {_toml_str(column)} = 1 }}
"""))
    before = file_digest(tmp_path / "store.db")
    with pytest.raises(ConfigError) as err:
        plan_actions(cfg, AS_OF_TS)
    assert f"actions[0].set.{column}" in str(err.value)
    assert file_digest(tmp_path / "store.db") == before


@pytest.mark.parametrize("key", ["table", "id"])
def test_hostile_table_and_key_names_are_refused(tmp_path, key):
    _store(tmp_path / "store.db")
    src = SOURCE.replace(f'{key} = "{"store" if key == "table" else "id"}"', f"{key} = {_toml_str(DROP)}")
    cfg = load_config(write_config(tmp_path, src + '\n[[actions]]\nwhen = "expired"\ndo = "delete"\n'))
    with pytest.raises((ConfigError, ConnectorError)):
        plan_actions(cfg, AS_OF_TS)
    with sqlite3.connect(tmp_path / "store.db") as conn:
        assert conn.execute("SELECT count(*) FROM store").fetchone()[0] == len(HOSTILE_VALUES)


def test_hostile_values_are_written_literally_and_undone(tmp_path):
    db = tmp_path / "store.db"
    _store(db)
    original = snapshot(db)
    # one action per row (category = exact text would need rules; use one config per value)
    for i, value in enumerate(HOSTILE_VALUES, start=1):
        cfg = load_config(write_config(tmp_path, SOURCE.replace('table = "store"', 'table = "store"\nwhere = "id = ' + str(i) + '"')
                                       + f'\n[[actions]]\nwhen = "expired"\ndo = "set"\nset = {{ note = {_toml_str(value)} }}\n',
                                       f"c{i}.toml"))
        result = apply_plan(plan_actions(cfg, AS_OF_TS, overlay_path=str(tmp_path / "ov.db")))
        assert len(result.applied) == 1
    with sqlite3.connect(db) as conn:
        notes = dict(conn.execute("SELECT id, note FROM store"))
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        dbs = [r[1] for r in conn.execute("PRAGMA database_list")]
    assert tables == ["store"] and dbs == ["main"]
    assert not (tmp_path / "evil.db").exists()
    for i, value in enumerate(HOSTILE_VALUES, start=1):
        expected = value.replace("{label}", "expired")
        assert notes[i] == expected
    undo_actions(None, since=0.0, overlay_path=str(tmp_path / "ov.db"))
    assert snapshot(db) == original


def test_columns_with_hostile_names_that_really_exist_are_quoted(tmp_path):
    """A store may itself have odd names; they are quoted, never interpreted."""
    db = tmp_path / "odd.db"
    table = 'my "store"; --'
    col = 'note"; DROP TABLE x; --'
    with sqlite3.connect(db) as conn:
        conn.execute('CREATE TABLE x (keep INTEGER)')
        conn.execute('CREATE TABLE "my ""store""; --" ("id; --" INTEGER PRIMARY KEY, fact TEXT, at TEXT, '
                     '"note""; DROP TABLE x; --" TEXT)')
        conn.execute('INSERT INTO "my ""store""; --" VALUES (1, \'old fact\', ?, NULL)', (OLD,))
    cfg = load_config(write_config(tmp_path, f"""
[[sources]]
name = "odd"
connector = "sqlite"
path = "odd.db"
table = {_toml_str(table)}
id = "id; --"
text = "fact"
created_at = "at"

[[actions]]
when = "expired"
do = "set"
set = {{ {_toml_str(col)} = "'); DROP TABLE x; --" }}
"""))
    original = snapshot(db, table)
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert len(result.applied) == 1
    row = snapshot(db, table)[(1,)]
    assert row[col] == ("text", "'); DROP TABLE x; --")
    with sqlite3.connect(db) as conn:
        assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"x", table}
    undo_actions(cfg, since=result.run_at)
    assert snapshot(db, table) == original


def test_templates_cannot_reach_python_attributes(tmp_path):
    _store(tmp_path / "store.db")
    path = write_config(tmp_path, SOURCE + """
[[actions]]
when = "expired"
do = "set"
set = { note = "{label.__class__.__mro__}" }
""")
    with pytest.raises(ConfigError, match=r"actions\[0\]\.set\.note: unknown field"):
        load_config(path)
