"""A first audit of a plain SQLite table is staged and inserted in SQL (overlay/store/bulk_load.py,
SyncEngine._stage_load / _load_staged). Every row SQL cannot reproduce takes the Record path in
the same sync, so the overlay must be the Record path's, column by column: each scenario runs
the same syncs with sync.SQL_LOAD off and on, at the same clock, and compares every column of
every fact (ids included), the source's row and the sync's stats; then a re-audit and a
re-audit a day later, which must agree too. The SQL path is seen to run in the statements
the overlay's connection traces (the staged INSERT … SELECT, and the Record-path rows
written only for the rows that need one).
"""
from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store import bulk_load
from memwatch_overlay.overlay.store import facts as facts_module
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

AS_OF = 1_796_000_000.0          # 2026-11-29
NOW = AS_OF + 3600.0             # the sync's clock (first_seen, last_seen; a fact without times is learned now)
DAY = 86400.0

# every form of time the connector accepts (and some it does not: it warns and ignores them)
TIMES = ["2026-01-01 10:00:00", "2026-01-01T10:00:00", "2026-01-02", "2025-06-30 23:59:59", "1969-07-20 20:17:40",
         "0999-01-01 00:00:00", "2026-01-01 10:00:00.250", "2026-01-01T10:00:00.5", "2026-01-01T10:00:00Z",
         "2026-01-01T10:00:00+02:00", "2026-01-01 10:00", "20260101", "2026-02-30 10:00:00", None, None,
         1767261600, 1767261600.5, "1767261600", "garbage", "", b"2026-01-01 10:00:00"]
TEXTS = ["Lives in Paris", "héllo wörld ✓", "quote ' and \" and \\ backslash", "  ", "", None, "\t\n",
         "I work at Acme as an engineer", "my email is a@b.c", "ünïcödé only", "x" * 300, 42, b"bytes text"]
SUBJECTS = ["u1", None, "", "ü2", "o'neil", 7, "u\\3"]
KEYS = ["employer", None, "", "city", "ключ", "food"]
CATEGORIES = [None, "", "employment", "preference", "sess", "Session", "no-such-category", "   ", 3]


def make_store(path: Path, n: int, pk: str = "integer") -> None:
    conn = sqlite3.connect(path)
    pk_decl = {"integer": "id INTEGER PRIMARY KEY", "text": "id TEXT PRIMARY KEY", "untyped": "id PRIMARY KEY",
               "none": "id INTEGER"}[pk]
    conn.execute(f"CREATE TABLE memories ({pk_decl}, user_id TEXT, fact TEXT, fkey TEXT, cat, created_at, "
                 "updated_at, hits, seen_at, expires)")
    rows = []
    for i in range(1, n + 1):
        if pk == "text":
            ident = ["k%d" % i, "ключ%d" % i, "q\"%d" % i, "b\\%d" % i, "sp ace %d" % i, str(i)][i % 6]
        elif pk == "untyped":
            ident = [i, str(i + 2), "é%d" % i][i % 3]     # '6' and 6: one key (the later row wins)
        else:
            ident = i
        rows.append((ident, SUBJECTS[i % len(SUBJECTS)], TEXTS[i % len(TEXTS)], KEYS[i % len(KEYS)],
                     CATEGORIES[(i // 3) % len(CATEGORIES)] if i % 4 == 0 else None,
                     TIMES[i % len(TIMES)], TIMES[(i * 7 + 3) % len(TIMES)] if i % 2 else None,
                     [0, None, 0, 3, "2", 0.0][i % 6] if i % 5 == 0 else 0,
                     TIMES[i % len(TIMES)] if i % 17 == 0 else None,
                     "2027-01-01 00:00:00" if i % 19 == 0 else None))
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def config_for(path: Path, **mapping):
    base = {"id": "id", "text": "fact", "subject": "user_id", "key": "fkey", "created_at": "created_at",
            "updated_at": "updated_at"}
    base.update(mapping)
    return parse_config({
        "detector": {"enabled": False},
        "categories": {"employment": {"half_life_days": 180, "ttl_days": 90},
                       "session": {"half_life_days": 2, "aliases": ["sess"]}},
        "sources": [{"name": "bot", "connector": "sqlite", "path": str(path), "table": "memories",
                     **{k: v for k, v in base.items() if v is not None}}]})


class Traced:
    """The statements an overlay connection ran (sqlite3's trace callback: one per execution)."""

    def __init__(self):
        self.statements: list[str] = []

    def __call__(self, sql: str) -> None:
        self.statements.append(sql)

    def count(self, start: str) -> int:
        return sum(1 for s in self.statements if s.lstrip().startswith(start))


def sync_once(store_path: Path, overlay: Path, cfg, as_of: float = AS_OF, now: float = NOW,
              traced: Traced | None = None, between=None, rescore: bool = True):
    """One full sync and (`rescore`) the audit's rescore at `as_of`, at clock `now`.
    `between(store)`: runs after the staging (the moment another connection could write)."""
    with OverlayStore(overlay) as store:
        if traced is not None:
            store.conn.set_trace_callback(traced)
        engine = SyncEngine(store, cfg)
        if between is not None:
            real = engine._stage_load

            def stage(*args):
                load = real(*args)
                between(store)
                return load
            engine._stage_load = stage
        stats = engine.sync(cfg.sources[0], as_of=as_of, now=now)
        if rescore:
            engine.rescore(as_of)
        return stats


def overlay_state(overlay: Path) -> tuple:
    conn = sqlite3.connect(overlay)
    try:
        facts = conn.execute("SELECT * FROM facts ORDER BY id").fetchall()
        source = conn.execute("SELECT id, name, sync_count, cursor_json, rows_read_last_sync, rows_seen, "
                              "config_hash FROM sources ORDER BY id").fetchall()
    finally:
        conn.close()
    cursors = []
    for row in source:
        cursor = json.loads(row[3])
        cursor.pop("scanned_at", None)     # the real clock at the read
        cursors.append((*row[:3], cursor, *row[4:]))
    return facts, cursors


def stats_of(stats) -> tuple:
    return (stats.rows_read, stats.records, stats.changed, stats.deleted, stats.contradictions, sorted(stats.warnings))


@pytest.fixture(autouse=True)
def small_tables_too(monkeypatch):
    """The SQL load runs from SQL_LOAD_MIN rows: these stores are smaller."""
    monkeypatch.setattr(sync_module, "SQL_LOAD_MIN", 0)


def both(tmp_path: Path, store: Path, cfg, monkeypatch, steps=((AS_OF, NOW),), rescore: bool = True) -> dict:
    """Run the same syncs with the SQL load off and on; assert equal overlays and stats after each."""
    out = {}
    for on in (False, True):
        monkeypatch.setattr(sync_module, "SQL_LOAD", on)
        overlay = tmp_path / f"overlay-{on}.db"
        runs = []
        for as_of, now in steps:
            traced = Traced()
            stats = sync_once(store, overlay, cfg, as_of, now, traced, rescore=rescore)
            runs.append((stats_of(stats), overlay_state(overlay), traced))
        out[on] = runs
    for (s_off, state_off, _), (s_on, state_on, _) in zip(out[False], out[True]):
        assert s_on == s_off
        assert len(state_on[0]) == len(state_off[0])
        for a, b in zip(state_on[0], state_off[0]):
            assert a == b
        assert state_on[1] == state_off[1]
    return out


def staged_inserts(traced: Traced) -> int:
    return traced.count("INSERT INTO main.facts")


def record_path_rows(traced: Traced) -> int:
    """Facts written through the Record path's statements (a FactRow per execution)."""
    return traced.count("INSERT INTO temp.mw_rows") + traced.count("INSERT INTO facts (")


@pytest.mark.parametrize("pk", ["integer", "text", "untyped"])
def test_hostile_rows_load_as_the_record_path_loads_them(tmp_path, monkeypatch, pk):
    store = tmp_path / "bot.db"
    make_store(store, 1500, pk)
    cfg = config_for(store, category="cat", access_count="hits", accessed_at="seen_at", expires_at="expires")
    runs = both(tmp_path, store, cfg, monkeypatch,
                steps=((AS_OF, NOW), (AS_OF, NOW + 60), (AS_OF + DAY, NOW + DAY)))
    first = runs[True][0][2]
    assert staged_inserts(first) > 0                       # the SQL path ran
    records = runs[True][0][0][1]
    assert 0 < record_path_rows(first) <= records - 50     # and the Record path took the rest only
    assert staged_inserts(runs[False][0][2]) == 0          # (the switch turns it off)


def test_a_clean_table_makes_no_record(tmp_path, monkeypatch):
    store = tmp_path / "bot.db"
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, fkey TEXT, "
                 "created_at TEXT, updated_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)",
                     [(i, f"u{i % 9}", f"I live in city {i} ü", ["city", "food", None][i % 3],
                       f"2026-0{1 + i % 9}-1{i % 10} 0{i % 10}:1{i % 10}:2{i % 10}",
                       None if i % 2 else "2026-10-01T12:00:00") for i in range(1, 25_001)])
    conn.commit()
    conn.close()
    runs = both(tmp_path, store, config_for(store), monkeypatch)
    traced = runs[True][0][2]
    assert staged_inserts(traced) == 3                     # one INSERT … SELECT per page of 10,000
    assert record_path_rows(traced) == 0                   # no FactRow at all
    assert len(runs[True][0][1][0]) == 25_000
    # a row without updated_at is staged without it: sqlite3 binds a None at several times a
    # float's cost, and half of these rows have none
    staged = [s for s in traced.statements if s.startswith("INSERT INTO temp.mw_calc")]
    assert traced.count("INSERT INTO temp.mw_calc (rid, category, content_hash, created_at) VALUES") == 12_500
    assert len(staged) == 25_000 and not any("NULL" in s for s in staged)
    # and so is the Record path's upsert of a row whose category_given, updated_at, accessed_at,
    # expires_at and expired_by are all None (the same overlay: both() compared them)
    upserts = runs[False][0][2]
    lean, full = facts_module._UPSERT_LEAN_SQL, facts_module._UPSERT_SQL
    assert upserts.count(lean[:lean.index(" VALUES")]) == 12_500
    assert upserts.count(full[:full.index(" VALUES")]) == 12_500
    # every fact the source has was written by this load: no deletion pass looks for unseen ones
    # (the Record path's first read runs it, and finds none)
    mark = "UPDATE facts SET status = 'deleted'"
    assert traced.count(mark) == 0 < runs[False][0][2].count(mark)


def test_one_column_mappings_and_rowid_keys(tmp_path, monkeypatch):
    """Text only (no subject, key or times: every fact learned `now`), keyed by the rowid."""
    store = tmp_path / "bot.db"
    make_store(store, 600, "none")
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(store), "table": "memories",
                                     "text": "fact"}]})
    runs = both(tmp_path, store, cfg, monkeypatch, steps=((AS_OF, NOW), (AS_OF + DAY, NOW + DAY)))
    assert staged_inserts(runs[True][0][2]) > 0
    assert runs[True][0][1][0][0][3] == '{"__mw_rowid__": "1"}'


def test_as_of_ahead_of_the_clock(tmp_path, monkeypatch):
    store = tmp_path / "bot.db"
    make_store(store, 300)
    both(tmp_path, store, config_for(store), monkeypatch, steps=((NOW + 30 * DAY, NOW),))


def test_rows_deleted_and_added_after_staging_are_not_the_sqls_business(tmp_path, monkeypatch):
    """The load reads its staged snapshot: a row deleted from the source after the staging is
    loaded (the next full read marks it deleted), as a Record read before the delete would be;
    another connection's commit to the overlay in between voids the staging (Record path)."""
    store = tmp_path / "bot.db"
    make_store(store, 400)
    cfg = config_for(store)

    def delete_rows(_overlay_store):
        conn = sqlite3.connect(store)
        conn.execute("DELETE FROM memories WHERE id % 10 = 0")
        conn.commit()
        conn.close()

    monkeypatch.setattr(sync_module, "SQL_LOAD", True)
    overlay = tmp_path / "staged.db"
    traced = Traced()
    stats = sync_once(store, overlay, cfg, traced=traced, between=delete_rows)
    assert staged_inserts(traced) == 1 and stats.rows_read == 400
    facts = sqlite3.connect(overlay).execute("SELECT count(*) FROM facts WHERE pk LIKE '%0\"}'").fetchone()[0]
    assert facts > 0                                       # the deleted rows came from the snapshot
    again = sync_once(store, overlay, cfg)
    assert again.deleted == facts

    def overlay_commit(overlay_store):
        other = sqlite3.connect(overlay_store.path)
        other.execute("INSERT INTO sources (name, connector, target) VALUES ('other', 'sqlite', 'x')")
        other.commit()
        other.close()

    make_store(tmp_path / "fresh.db", 200)
    cfg2 = config_for(tmp_path / "fresh.db")
    traced = Traced()
    stats = sync_once(tmp_path / "fresh.db", tmp_path / "voided.db", cfg2, traced=traced, between=overlay_commit)
    assert staged_inserts(traced) == 0 and stats.rows_read == 200 and stats.records > 0
    assert traced.count("DROP TABLE IF EXISTS temp.mw_load") >= 1


def test_not_below_sql_load_min(tmp_path, monkeypatch):
    store = tmp_path / "bot.db"
    make_store(store, 300)
    monkeypatch.setattr(sync_module, "SQL_LOAD_MIN", 301)
    traced = Traced()
    sync_once(store, tmp_path / "o.db", config_for(store), traced=traced)
    assert staged_inserts(traced) == 0 and traced.count("INSERT INTO temp.mw_load") == 0
    monkeypatch.setattr(sync_module, "SQL_LOAD_MIN", 300)
    traced = Traced()
    sync_once(store, tmp_path / "o2.db", config_for(store), traced=traced)
    assert staged_inserts(traced) == 1


def test_not_on_a_second_load_of_the_source(tmp_path, monkeypatch):
    """An overlay holding facts of the source already (a changed configuration: full rewrite)
    takes the Record path."""
    store = tmp_path / "bot.db"
    make_store(store, 300)
    monkeypatch.setattr(sync_module, "SQL_LOAD", True)
    overlay = tmp_path / "o.db"
    sync_once(store, overlay, config_for(store))
    traced = Traced()
    sync_once(store, overlay, config_for(store, subject=None), traced=traced)
    assert staged_inserts(traced) == 0 and traced.count("INSERT INTO temp.mw_load") == 0


def test_a_text_that_is_not_utf8_fails_as_the_record_path_fails(tmp_path, monkeypatch):
    store = tmp_path / "bot.db"
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, fact TEXT)")
    conn.execute("INSERT INTO memories VALUES (1, 'fine'), (2, CAST(X'66ff6f' AS TEXT))")
    conn.commit()
    conn.close()
    cfg = parse_config({"detector": {"enabled": False},
                        "sources": [{"name": "bot", "connector": "sqlite", "path": str(store), "table": "memories",
                                     "text": "fact"}]})
    errors = []
    for on in (False, True):
        monkeypatch.setattr(sync_module, "SQL_LOAD", on)
        with pytest.raises(ConnectorError) as err:
            sync_once(store, tmp_path / f"o{on}.db", cfg)
        errors.append(str(err.value))
        assert sqlite3.connect(tmp_path / f"o{on}.db").execute("SELECT count(*) FROM facts").fetchone()[0] == 0
    assert errors[0] == errors[1]


@pytest.mark.parametrize("fail_at", [1, 3], ids=["the first page's write", "a later page's write"])
def test_a_write_failing_in_the_writer_thread_leaves_the_overlay_as_it_was(tmp_path, monkeypatch, fail_at):
    """Each page's SQL runs in the writer thread: a write that fails there is raised in the
    sync, no later page is written, and the sync's transaction leaves no fact behind."""
    import threading

    store = tmp_path / "bot.db"
    make_store(store, 3500)
    monkeypatch.setattr(sync_module, "SQL_LOAD", True)
    stage = OverlayStore.stage_source
    monkeypatch.setattr(OverlayStore, "stage_source", lambda self, *a, **k: stage(self, *a, **k, page_rows=1000))
    real = OverlayStore.insert_staged
    calls: list[bool] = []

    def insert(self, after, upto):
        calls.append(threading.current_thread() is threading.main_thread())
        if len(calls) == fail_at:
            raise sqlite3.OperationalError("disk I/O error")
        return real(self, after, upto)

    monkeypatch.setattr(OverlayStore, "insert_staged", insert)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        sync_once(store, tmp_path / "overlay.db", config_for(store))
    assert len(calls) == fail_at and not any(calls)          # in the writer; nothing written after it
    assert sqlite3.connect(tmp_path / "overlay.db").execute("SELECT count(*) FROM facts").fetchone()[0] == 0


@pytest.mark.parametrize("ahead", [False, True], ids=["as-of in the past", "as-of ahead of the clock"])
def test_sql_scores_the_plain_facts_to_the_bit(tmp_path, monkeypatch, ahead):
    """The staged load's plain facts are scored by SQL (plain_rescore.plain_scores_select), the
    rest by plain_scorer in Python: random ages, every threshold crossing and fast_round's
    ties (test_rescore_sql's source), stored as the Record path stores them by the sync
    alone (no rescore after it), and SQL really scored most of them."""
    from test_rescore_sql import config as rescore_config
    from test_rescore_sql import learned_times

    store = tmp_path / "bot.db"
    at = AS_OF + (400 * DAY if ahead else 0.0)
    monkeypatch.setattr(bulk_load, "SCORES_CHUNK", 7)       # Python's scores set in several statements
    rnd = random.Random(5)
    texts = {"employment": "works at Acme {}", "location": "lives in Town {}", "contact": "email a{}@b.example",
             "preference": "loves dish {}"}
    # ISO text as agents write it (the connector's tuple path parses it), and ages past
    # plain_rescore's max_age (centuries old, and a date in the year 999)
    times = [(cat, iso(learned)) for cat, learned in learned_times(rnd, at)]
    times += [("location", "1200-05-01 00:00:00"), ("employment", "0999-01-01 00:00:00")] * 20
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at TEXT, "
                 "updated_at TEXT, hits INTEGER)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)",
                     [(i, f"u{i % 40}", texts[cat].format(i), created, created if i % 7 == 0 else None,
                       3 if i % 11 == 0 else 0) for i, (cat, created) in enumerate(times, start=1)])
    conn.commit()
    conn.close()
    n = len(times)
    left: list[int] = []
    real = OverlayStore.set_staged_scores

    def counted(self, scores):
        left.append(len(scores))
        return real(self, scores)

    monkeypatch.setattr(OverlayStore, "set_staged_scores", counted)
    runs = both(tmp_path, store, rescore_config(store), monkeypatch, steps=((at, NOW),), rescore=False)
    conn = sqlite3.connect(tmp_path / "overlay-True.db")
    scored = conn.execute("SELECT count(*) FROM facts WHERE scored_as_of = ? AND freshness IS NOT NULL "
                          "AND label IS NOT NULL", (at,)).fetchone()[0]
    conn.close()
    assert scored == len(runs[True][0][1][0]) == n           # every fact scored by the sync itself
    python = record_path_rows(runs[True][0][2])
    # the Record path takes the rows with hits and the ttl category (score_fact's), no other
    assert python == sum(1 for i, (cat, _) in enumerate(times, start=1) if i % 11 == 0 or cat == "contact")
    assert 20 <= sum(left) < n / 20                         # the great ages (and any fast_round tie)


def iso(epoch: float) -> str:
    """An epoch as naive ISO text to the microsecond (UTC)."""
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).replace(tzinfo=None).isoformat(sep=" ")


def test_the_rows_sql_left_are_found_in_the_page_the_sync_computed():
    # facts_of's three lists (no time, created_at, both), each in rowid order: the rows SQL did
    # not score (score_staged's rowids) get their category and times back from them
    unscored = ([(2, "general", "h2"), (9, "general", "h9")],
                [(1, "employment", "h1", 100.0), (5, "location", "h5", 50.5)],
                [(3, "general", "h3", None, 7.0), (8, "employment", "h8", 10.0, 20.0)])
    assert sync_module._unscored_rows(unscored, [1, 2, 3, 8, 9]) == [
        (1, "employment", 100.0, None), (2, "general", None, None), (3, "general", None, 7.0),
        (8, "employment", 10.0, 20.0), (9, "general", None, None)]
    assert sync_module._unscored_rows(unscored, []) == []
