"""The SQLite connector's tuple path (rows kept as tuples, TableConnector.tuple_records) gives
exactly what the general path (a dict per row, row_to_record) gives: the same Records, warnings,
cursors and mark digests on hostile values, and the same overlay after a first audit and a
re-audit of a generated store."""
from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.connectors import sqlite as sqlite_connector
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.connectors.tabular import TableConnector, _pk_text
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.rules.config import Config, SourceConfig
from scoring_reference import ref_row_to_record

# Every form core/timeparse accepts, and some it refuses.
_MOMENT = dt.datetime(2024, 11, 29, 13, 19, 39, 250000)
TIMES = [
    None, "", " ", "never", "2024-13-01 00:00:00", "2024-02-30", "20241129",
    _MOMENT.strftime("%Y-%m-%d %H:%M:%S"), _MOMENT.strftime("%Y-%m-%dT%H:%M:%S"), _MOMENT.strftime("%Y-%m-%d"),
    _MOMENT.strftime("%Y-%m-%d %H:%M:%S.%f"), _MOMENT.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00",
    _MOMENT.strftime("%Y-%m-%dT%H:%M:%S") + "+05:30", _MOMENT.strftime("%Y-%m-%dT%H:%M:%S") + "Z",
    _MOMENT.strftime("%Y-%m-%dT%H:%M:%S") + "z", _MOMENT.strftime("%Y-%m-%dT%H:%M:%S.%f") + "-08:00",
    " 2024-11-29 13:19:39", "2024-11-29 13:19:39 ", "0001-01-01 00:00:00", "9999-12-31T23:59:59",
    "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "2024-11-29T13:19",
    1732886379, 1732886379.5, 1732886379000, -1, 0, 2 ** 62, 1e300, float("inf"), float("-inf"),
    "1732886379", "1732886379.25", "1732886379000", " 1732886379 ", b"2024-11-29 13:19:39", b"\xff\xfe",
]
TEXTS = [None, "", "   ", "Works at Acme", "Zoë lives in Zürich", "日本語のメモ", "emoji 🙂", "tab\tand\nline",
         "\x00nul", 42, 3.5, b"bytes text", b"\xff bad utf-8", "12345"]
OPTIONAL = [None, "", "u1", "ü-user", 7, 7.0, b"u2", "0", True]
KEYS = [1, 2, 3, "k1", "ключ", 4.5, b"kb", None, True]
COUNTS = [None, 0, 3, "4", "x", 2.9, b"1", True, -2]


def hostile_rows(rnd: random.Random, n: int):
    """Rows whose every value is, one time in three, one of the hostile ones above (else a plain
    value), so rows of each kind reach both paths."""
    plain_time = _MOMENT.strftime("%Y-%m-%d %H:%M:%S")

    def pick(values, plain):
        return rnd.choice(values) if rnd.random() < 0.33 else plain

    for i in range(n):
        created = pick(TIMES, (_MOMENT - dt.timedelta(seconds=rnd.randrange(10 ** 8))).isoformat(" "))
        yield (pick(KEYS, i), pick(TEXTS, f"fact {i}"), pick(OPTIONAL, f"u{i % 7}"), pick(OPTIONAL, "employer"),
               pick(OPTIONAL, None), pick(COUNTS, i % 4), created, created if rnd.random() < 0.3 else
               pick(TIMES, plain_time), pick(TIMES, None), pick(TIMES, None))


def make_store(path: Path, rows) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE mem (id, body, who, k, cat, n, c_at, u_at, a_at, e_at)")   # no types: values as given
    con.executemany("INSERT INTO mem VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()


def source_of(path: Path, **extra) -> SourceConfig:
    fields = dict(name="s", connector="sqlite", path=str(path), table="mem", text="body", subject="who", key="k",
                  category="cat", access_count="n", created_at="c_at", updated_at="u_at", accessed_at="a_at",
                  expires_at="e_at")
    fields.update(extra)
    return SourceConfig(**{k: v for k, v in fields.items() if v is not None})


def read_both(source: SourceConfig, monkeypatch, cursor: dict | None = None):
    """(records, warnings, cursor without its clock, rows_read) by the tuple path, then by the general path."""
    out = []
    for general in (False, True):
        with monkeypatch.context() as m:
            if general:
                m.setattr(TableConnector, "tuple_records", lambda self, names, pks, mapping: None)
            conn = make_connector(source)
            with conn:
                records = list(conn.read(cursor))
                cursor_after = {k: v for k, v in conn.cursor.items() if k != "scanned_at"}   # the clock
                out.append((records, conn.warnings, cursor_after, conn.rows_read))
    return out


@pytest.mark.parametrize("id_", [None, ["id"]], ids=["rowid key", "id column"])
def test_tuple_path_gives_the_general_paths_records_on_hostile_rows(tmp_path, monkeypatch, id_):
    db = tmp_path / "s.db"
    make_store(db, hostile_rows(random.Random(15), 4000))
    source = source_of(db, id=id_)
    (fast, fast_warn, fast_cursor, fast_rows), (slow, slow_warn, slow_cursor, slow_rows) = \
        read_both(source, monkeypatch)
    assert len(fast) == len(slow) > 1000
    assert fast == slow and repr(fast) == repr(slow)
    assert [r.pk for r in fast] == [r.pk for r in slow]
    assert fast_warn == slow_warn and fast_warn
    assert fast_cursor == slow_cursor and fast_rows == slow_rows == 4000


def test_tuple_path_equals_the_reference_row_to_record(tmp_path):
    """Against tests/scoring_reference.py's row_to_record, row by row (the tuple path on its own)."""
    db = tmp_path / "s.db"
    rows = list(hostile_rows(random.Random(16), 3000))
    make_store(db, rows)
    fast, ref = make_connector(source_of(db, id=["id"])), make_connector(source_of(db, id=["id"]))
    with fast, ref:
        mapping, pks, wanted, *_ = fast._plan()
        names = ["id", "body", "who", "k", "cat", "n", "c_at", "u_at", "a_at", "e_at"]
        handed_on = []     # rows the tuple path hands to row_to_record
        general = fast.row_to_record
        fast.row_to_record = lambda row, pks, mapping: handed_on.append(row) or general(row, pks, mapping)
        record = fast.tuple_records(names, pks, mapping)
        assert record is not None
        taken = 0
        for row in rows:
            got = record(row)
            want = ref_row_to_record(ref, dict(zip(names, row)), pks, mapping)
            assert got == want and repr(got) == repr(want), row
            taken += got is not None
        assert fast.warnings == ref.warnings and 0 < taken < len(rows)
        assert 300 < len(handed_on) < len(rows) - 300    # both paths ran on many rows


def test_tuple_path_declines_json_paths_presets_and_repeated_names(tmp_path):
    db = tmp_path / "s.db"
    make_store(db, [(1, "a", '{"u": "x"}', None, None, None, None, None, None, None)])
    with make_connector(source_of(db, subject="who.u")) as conn:
        mapping, pks, *_ = conn._plan()
        assert conn.tuple_records(["body", "who", "__mw_rowid__"], pks, mapping) is None
    with make_connector(source_of(db)) as conn:
        mapping, pks, *_ = conn._plan()
        assert conn.tuple_records(["body", "body", "who"], pks, mapping) is None
        assert conn.tuple_records(["body", "who", "k", "cat", "n", "c_at", "u_at", "a_at", "e_at", "__mw_rowid__"],
                                  pks, mapping) is not None
    # the JSON-path source still reads (through the general path)
    with make_connector(source_of(db, subject="who.u")) as conn:
        assert [r.subject for r in conn.read(None)] == ["x"]


def test_row_digest_from_the_tuple_equals_the_dicts(tmp_path):
    rnd = random.Random(17)
    names = ["id", "body", "who", "k", "cat", "n", "c_at", "u_at", "a_at", "e_at"]
    for row in hostile_rows(rnd, 2000):
        assert sqlite_connector._tuple_digest(names, row) == sqlite_connector._row_digest(dict(zip(names, row)))
    # repeated names: the dict keeps the last value, and so does the digest
    assert sqlite_connector._tuple_digest(["a", "a"], (1, 2)) == sqlite_connector._row_digest({"a": 2})


def test_marks_and_incremental_reads_are_the_same_by_both_paths(tmp_path, monkeypatch):
    """A store whose updated_at is a plain column: the cursor (mark, rows at it, their digests)
    after a full read, and the records and cursor of an incremental read after changes."""
    db = tmp_path / "s.db"
    base = dt.datetime(2026, 1, 1)
    rows = [(i, f"fact {i} ü", f"u{i % 9}", f"k{i % 4}", None, i % 3, (base + dt.timedelta(hours=i)).isoformat(" "),
             (base + dt.timedelta(hours=min(i, 40))).isoformat(" "), None, None) for i in range(60)]
    make_store(db, rows)
    source = source_of(db, id=["id"])
    (fast, _, fast_cursor, _), (slow, _, slow_cursor, _) = read_both(source, monkeypatch)
    assert fast == slow and fast_cursor == slow_cursor
    fast_cursor["scanned_at"] = 0.0
    assert len(fast_cursor["at_mark"]) == 20 and len(fast_cursor["mark_hashes"]) == 20
    con = sqlite3.connect(db)
    con.execute("UPDATE mem SET body = 'rewritten' WHERE id = 50")          # same updated_at: only the digest tells
    con.execute("UPDATE mem SET u_at = '2026-03-01 00:00:00', body = 'moved' WHERE id = 3")
    con.execute("INSERT INTO mem VALUES (100, 'new one', 'u1', 'k1', NULL, 0, '2026-03-02 00:00:00', NULL, NULL, NULL)")
    con.commit()
    con.close()
    (fast, fast_warn, fast_cursor, fast_rows), (slow, slow_warn, slow_cursor, slow_rows) = \
        read_both(source, monkeypatch, cursor=fast_cursor)
    assert fast == slow and fast_cursor == slow_cursor and fast_rows == slow_rows
    assert {r.pk["id"] for r in fast} == {"3", "50", "100"}


def dump_overlay(path: Path) -> list[tuple]:
    """Every fact, with the columns a sync stamps from the clock left out."""
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("PRAGMA table_info(facts)") if r[1] not in ("first_seen", "last_seen")]
    rows = con.execute(f"SELECT {', '.join(cols)} FROM facts ORDER BY id").fetchall()
    con.close()
    return rows


def test_overlay_after_a_first_audit_and_a_re_audit_is_the_general_paths(tmp_path, monkeypatch):
    db = tmp_path / "agent.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, fact_value TEXT, "
                "created_at TEXT)")
    rnd = random.Random(18)
    base = dt.datetime(2026, 11, 29)
    con.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                    [(f"u{i % 50}", rnd.choice(["employer", "city", "pet"]), rnd.choice(["Acme", "Zürich", f"v{i}"]),
                      (base - dt.timedelta(days=rnd.random() * 900)).strftime("%Y-%m-%d %H:%M:%S"))
                     for i in range(1500)])
    con.commit()
    con.close()
    dumps = []
    for general in (False, True):
        overlay = tmp_path / f"overlay-{general}.db"
        with monkeypatch.context() as m:
            if general:
                m.setattr(TableConnector, "tuple_records", lambda self, names, pks, mapping: None)
            for as_of in (1795910400.0, 1795910400.0, 1795996800.0):   # first audit, re-audit, a day later
                result = audit(str(db), Config(), as_of=as_of, overlay_path=str(overlay))
                assert result.summary["total"] == 1500
                result.close()
                dumps.append(dump_overlay(overlay))
    assert dumps[:3] == dumps[3:] and len(dumps[0]) == 1500


@pytest.mark.parametrize("id_", [None, ["id"], ["k", "id"]], ids=["rowid key", "id column", "two columns"])
def test_keys_are_the_pk_dicts_of_every_row(tmp_path, id_):
    """keys() (the deletion pass, rows as tuples) gives every row's key as read() gives it."""
    db = tmp_path / "s.db"
    rows = list(hostile_rows(random.Random(19), 3000))
    make_store(db, rows)
    with make_connector(source_of(db, id=id_)) as conn:
        keys = list(conn.keys())
        assert conn.keys_read == 3000 and conn.rows_read == 0
        records = list(conn.read(None))
        mapping, pks, *_ = conn._plan()
        want = [{p: _pk_text(row[p]) for p in pks}
                for row in conn.iter_rows(conn._select(["id", "k"], True).order_by("rowid").sql(dialect="sqlite"))]
    assert keys == want and len(set(map(repr, keys))) > 2000
    by_key = {repr(k) for k in keys}
    assert records and all(repr(r.pk) in by_key for r in records)
