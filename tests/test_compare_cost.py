"""The set comparison's own SQL (overlay/store/compare.py) made cheaper, with the same answers:
a rowid-alias key skips the text checks a key that may hold text needs, the key text is built
with one concatenation per value, and a subject/key equal to its fact is decided in one test.

Cost is counted in SQLite VM steps (a progress handler), never in seconds; exactness is
checked value by value against what the Record path writes (pk_json) and end to end against
the Record-by-Record comparison.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.sqlite import CompareKey
from memwatch_overlay.overlay.engine.sync import pk_json
from memwatch_overlay.overlay.store.compare import CompareRepo, _key_sql
from memwatch_overlay.rules.config import parse_config

from test_sync_set_compare import compare_every_time, counts, run  # noqa: F401  (fixtures; the first autouse)
from test_sync_unchanged import count_writes, writes

T0 = "2026-01-01 00:00:00"


def spec_of(path: Path, ddl: str, mapping: dict):
    conn = sqlite3.connect(path)
    conn.execute(ddl)
    conn.commit()
    conn.close()
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(path), "table": "memories",
                                     **mapping}]})
    connector = make_connector(cfg.sources[0])
    with connector:
        return connector.compare_spec()


# table definition -> whether its key column always holds an integer (the rowid's alias)
KEYS = {
    "id INTEGER PRIMARY KEY, fact TEXT": True,
    "id integer primary key asc, fact TEXT": True,
    "id INTEGER, fact TEXT, PRIMARY KEY (id)": True,
    "id INTEGER PRIMARY KEY DESC, fact TEXT": False,       # no alias: an index of its own, text allowed
    "id INT PRIMARY KEY, fact TEXT": False,
    "id TEXT PRIMARY KEY, fact TEXT": False,
    "id BIGINT PRIMARY KEY, fact TEXT": False,
}


@pytest.mark.parametrize("ddl", list(KEYS))
def test_only_a_rowid_alias_key_is_taken_for_integers(tmp_path, ddl):
    spec = spec_of(tmp_path / "bot.db", f"CREATE TABLE memories ({ddl})", {"id": "id", "text": "fact"})
    assert [k.integer for k in spec.pk] == [KEYS[ddl]]
    assert spec.pk[0].indexed
    conn = sqlite3.connect(tmp_path / "bot.db")
    try:
        conn.execute("INSERT INTO memories VALUES ('a text key', 'x')")
        holds_text = True
    except sqlite3.IntegrityError:          # datatype mismatch: the alias holds integers only
        holds_text = False
    assert holds_text is not KEYS[ddl]


def test_a_table_without_a_declared_key_compares_on_its_rowid(tmp_path):
    spec = spec_of(tmp_path / "bot.db", "CREATE TABLE memories (fact TEXT)", {"text": "fact"})
    assert [(k.sql, k.integer) for k in spec.pk] == [("rowid", True)]


KEY_VALUES = [7, 0, -12, 2 ** 62, "7", "007", " 7", "1e2", "plain-key", "", "q\"uote", "back\\slash", "it's",
              "ünï", "tab\there", "del\x7f", b"blob", 7.5, 7.0]


@pytest.mark.parametrize("names", [["id"], ["a", "b"], ["we\"ird", "it's"]])
def test_the_key_sql_is_the_records_pk_json_or_null(names):
    """Whatever a row holds, the SQL gives its pk_json() text (as the connector reads it: str of
    an integer or a text) or NULL; it is not NULL for integers and printable ASCII without a
    quote or a backslash. Checked for one key, two keys and column names needing escapes."""
    conn = sqlite3.connect(":memory:")
    cols = [f'"{n.replace(chr(34), chr(34) * 2)}"' for n in names]
    conn.execute(f"CREATE TABLE s ({', '.join(cols)})")
    rows = [tuple(KEY_VALUES[(i + j * 5) % len(KEY_VALUES)] for j in range(len(names))) for i in range(len(KEY_VALUES))]
    conn.executemany(f"INSERT INTO s VALUES ({', '.join('?' for _ in names)})", rows)
    keys = [CompareKey(pk_json({n: ""})[1:-5], c, False, False) for n, c in zip(names, cols)]
    got = conn.execute(f"SELECT {', '.join(cols)}, {_key_sql(keys)} FROM s s ORDER BY rowid").fetchall()
    built = 0
    for *values, text in got:
        plain = all(isinstance(v, int) or (isinstance(v, str) and v.isascii() and v.isprintable()
                                           and '"' not in v and "\\" not in v) for v in values)
        assert (text is not None) == plain, values
        if plain:
            built += 1
            assert text == pk_json({n: str(v) for n, v in zip(names, values)}), values
    assert built >= 5


def test_an_integer_key_sql_needs_no_type_check():
    text = _key_sql([CompareKey('"id"', '"id"', True, True)])
    assert text == """('{"id": "' || s."id" || '"}')"""
    assert "typeof" not in text and "GLOB" not in text


def whole_walk_steps(folder: Path, ddl: str, n: int) -> tuple[int, object]:
    """VM steps of a re-audit's set comparison over an unchanged table of n rows."""
    folder.mkdir()
    store, overlay = folder / "bot.db", folder / "overlay.db"
    conn = sqlite3.connect(store)
    conn.execute(f"CREATE TABLE memories ({ddl}, user_id TEXT, kind TEXT, fact TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?)",
                     ((i, f"u{i % 9}", "k" if i % 2 else None, f"fact {i}", T0) for i in range(1, n + 1)))
    conn.commit()
    conn.close()
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(store), "table": "memories",
                                     "id": "id", "subject": "user_id", "key": "kind", "text": "fact",
                                     "created_at": "created_at"}]})
    run(store, overlay, cfg)
    steps, found = [0], []
    real = CompareRepo.compare_source

    def counted(self, *a, **k):
        def step():
            steps[0] += 1
            return 0
        self.conn.set_progress_handler(step, 1)
        try:
            found.append(real(self, *a, **k))
        finally:
            self.conn.set_progress_handler(None, 0)
        return found[-1]

    CompareRepo.compare_source = counted
    try:
        run(store, overlay, cfg)
    finally:
        CompareRepo.compare_source = real
    return steps[0], found[-1]


def test_a_rowid_alias_key_costs_fewer_steps_per_row(tmp_path):
    """The same unchanged table keyed by a rowid alias and by an `INT PRIMARY KEY`: both are
    decided by the walk over the facts alone; the alias skips the key's type checks."""
    alias, found_alias = whole_walk_steps(tmp_path / "alias", "id INTEGER PRIMARY KEY", 3000)
    other, found_other = whole_walk_steps(tmp_path / "int", "id INT PRIMARY KEY", 3000)
    assert found_alias.whole and found_other.whole and found_alias.rows == found_other.rows == 3000
    assert (other - alias) / 3000 >= 1          # at least one VM step saved per row


# subject values of a row: (value, whether the comparison itself decides it unchanged)
SUBJECTS = [("u1", True), (None, True), ("", True), ("  ", True), ("ünï", True), (b"u1", False), ("U1", True)]


@pytest.mark.parametrize("affinity", ["TEXT", ""])
def test_subjects_are_matched_exactly_as_the_record_path_judges_them(tmp_path, counts, affinity):  # noqa: F811
    """NULL or empty subjects (a NULL fact subject) and equal text (blanks too) are matched in SQL; a blob
    blanks, or (in a column without TEXT affinity) an integer go to the Record path, which
    finds them unchanged too: no write either way."""
    store, overlay = tmp_path / "bot.db", tmp_path / "overlay.db"
    conn = sqlite3.connect(store)
    conn.execute(f"CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id {affinity}, fact TEXT)")
    values = SUBJECTS + ([(7, affinity == "TEXT")])     # TEXT affinity stores 7 as the text '7'
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?)", [(i + 1, v, f"fact {i}") for i, (v, _) in enumerate(values)])
    conn.commit()
    conn.close()
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(store), "table": "memories",
                                     "id": "id", "subject": "user_id", "text": "fact"}]})
    run(store, overlay, cfg)
    count_writes(overlay)
    _, stats = run(store, overlay, cfg)
    assert writes(overlay) == [] and stats.changed == 0 and stats.records == len(values)
    assert counts.records == sum(1 for _, matched in values if not matched)
