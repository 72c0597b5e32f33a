"""The plain facts rescored in SQL (overlay/store/plain_rescore.py, SyncEngine._rescore_in_sql)
store exactly what the Python path (score_row -> score_fact -> write_scores) stores: every
figure the same double (compared by repr), the same label and schedule, on SQLite and on
Postgres; the facts it cannot take (not plain, ties fast_round leaves to round(), a SQLite
without math functions) are scored by the Python pass, and it really takes the others.
"""
from __future__ import annotations

import math
import random
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine import sync as sync_module
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.engine.scoring import DAY, decay_factor
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store import plain_rescore
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import parse_config

AS_OF = 1_790_000_000.0                      # the first audit (2026-09)
LATER = AS_OF + 37.25 * DAY                  # the re-audit: in the past, real instants
AHEAD = time.time() + 400 * DAY              # an as-of ahead of the clock: next_change 0.0
HALF_LIVES = {"employment": 180, "location": 365, "contact": 730, "preference": 365}
TEXTS = {"employment": "works at Acme {}", "location": "lives in Town {}", "contact": "email a{}@b.example",
         "preference": "loves dish {}"}
COLUMNS = ("id", "status", "category", "freshness", "label", "age_days", "days_left", "days_until_expired",
           "expired_by", "confidence", "scored_as_of", "next_change")


def learned_times(rnd: random.Random, at: float) -> list[tuple[str, float]]:
    """(category, learned epoch) for random ages, clock skew, the instants around every
    threshold crossing at `at`, and ages whose 6-decimal rounding is a binary tie."""
    out = []
    cats = list(HALF_LIVES)
    for _ in range(3000):
        out.append((rnd.choice(cats), at - rnd.uniform(-5, 6000) * DAY))
    for cat, half_life in HALF_LIVES.items():
        log_d = math.log(decay_factor(half_life))
        for t in (0.8, 0.5, 0.3):
            cross = math.log(t) / log_d
            for age in (cross, math.nextafter(cross, 0), math.nextafter(cross, math.inf), cross + 1e-7,
                        cross - 1e-7, cross + 1e-5, cross - 1e-5):
                out.append((cat, at - age * DAY))
    for j in range(400):                     # age = (2j + 1) * 5e-7 days: y = age * 1e6 near j + 0.5
        out.append((rnd.choice(cats), at - (2 * j + 1) * 0.0432))
    return out


def make_source(path: Path, at: float) -> int:
    rnd = random.Random(11)
    rows = []
    for i, (cat, learned) in enumerate(learned_times(rnd, at), start=1):
        updated = learned + rnd.uniform(0, 30) * DAY if i % 7 == 0 else None
        created = learned - rnd.uniform(0, 50) * DAY if updated is not None else learned
        hits = i % 11 == 0 and 3 or 0
        rows.append((i, f"u{i % 40}", TEXTS[cat].format(i), created, updated, hits))
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, fact TEXT, created_at REAL, "
                 "updated_at REAL, hits INTEGER)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return len(rows)


def config(path: Path, ttl: bool = True):
    categories = {"contact": {"half_life_days": 730, "ttl_days": 900}} if ttl else {}
    return parse_config({"detector": {"enabled": False}, "categories": categories,
                         "sources": [{"name": "bot", "connector": "sqlite", "path": str(path), "table": "memories",
                                      "id": "id", "text": "fact", "subject": "user_id", "created_at": "created_at",
                                      "updated_at": "updated_at", "access_count": "hits"}]})


def unplain(conn) -> None:
    """What else a stored fact can be: refreshed by a person (still plain: it counts as
    learning), re-confirmed, accessed, with an expiry of its own, contradicted, deleted, in a
    category the config does not name."""
    conn.execute("UPDATE facts SET refreshed_at = created_at + 12345.5 WHERE id % 13 = 1")
    conn.execute("UPDATE facts SET refreshed_at = created_at - 999.0 WHERE id % 13 = 2")
    conn.execute("UPDATE facts SET confirmations = 2 WHERE id % 17 = 3")
    conn.execute("UPDATE facts SET accessed_at = created_at + 86400.0 WHERE id % 19 = 4")
    conn.execute("UPDATE facts SET expires_at = created_at + 40 * 86400.0 WHERE id % 23 = 5")
    conn.execute("UPDATE facts SET status = 'contradicted' WHERE id % 29 = 6")
    conn.execute("UPDATE facts SET status = 'deleted' WHERE id % 31 = 7")
    conn.execute("UPDATE facts SET category = 'not_configured' WHERE id % 37 = 8")


def snapshot(store: OverlayStore) -> list[tuple]:
    return [tuple(repr(v) for v in r)
            for r in store.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM facts ORDER BY id")]


def live(rows: list[tuple]) -> list[tuple]:
    return [r for r in rows if r[1] in ("'active'", "'contradicted'")]


class Counted:
    """Counts the facts the Python path scores (score_row) and the SQL path's updates."""

    def __init__(self, monkeypatch):
        self.python = self.sql = 0
        score_row, rescore_plain = SyncEngine.score_row, OverlayStore.rescore_plain

        def counted_score_row(engine, row, as_of):
            self.python += 1
            return score_row(engine, row, as_of)

        def counted_rescore_plain(store, *args, **kwargs):
            n = rescore_plain(store, *args, **kwargs)
            self.sql += n or 0
            return n

        monkeypatch.setattr(SyncEngine, "score_row", counted_score_row)
        monkeypatch.setattr(OverlayStore, "rescore_plain", counted_rescore_plain)


@pytest.fixture
def overlays(tmp_path):
    """Two copies of one audited SQLite overlay with every kind of fact: (sql, python, config,
    how many are live)."""
    make_source(tmp_path / "agent.db", LATER)
    cfg = config(tmp_path / "agent.db")
    audit(None, cfg, as_of=AS_OF, overlay_path=str(tmp_path / "sql.db")).close()
    conn = sqlite3.connect(tmp_path / "sql.db")
    unplain(conn)
    conn.commit()
    n = conn.execute("SELECT count(*) FROM facts WHERE status IN ('active', 'contradicted')").fetchone()[0]
    conn.close()
    shutil.copy(tmp_path / "sql.db", tmp_path / "python.db")
    return tmp_path / "sql.db", tmp_path / "python.db", cfg, n


def python_only(monkeypatch):
    monkeypatch.setattr(SyncEngine, "_rescore_in_sql", lambda self, *a, **k: 0)


@pytest.mark.parametrize("as_of", [LATER, AHEAD], ids=["past as-of", "as-of ahead of the clock"])
def test_sql_rescore_stores_what_the_python_path_stores(overlays, monkeypatch, as_of):
    sql_path, python_path, cfg, n = overlays
    counted = Counted(monkeypatch)
    with OverlayStore(sql_path) as store:
        assert SyncEngine(store, cfg).rescore(as_of) == n
        got = snapshot(store)
    sql, python = counted.sql, counted.python
    python_only(monkeypatch)
    with OverlayStore(python_path) as store:
        assert SyncEngine(store, cfg).rescore(as_of) == n
        want = snapshot(store)
    assert len(got) == len(want) > n
    for g, w in zip(got, want):
        assert g == w
    # the SQL path took the plain facts; Python only the others and the ties
    assert sql + python == len(live(got))          # every live fact scored once
    assert sql > 0.5 * n and 0 < python < 0.5 * n
    if as_of == AHEAD:
        assert {r[-1] for r in got if r[1] == "'active'" and r[4] != "'expired'"} == {"0.0"}


def test_ties_and_unplain_facts_go_to_python(overlays, monkeypatch):
    sql_path, _, cfg, n = overlays
    with OverlayStore(sql_path) as store:
        engine = SyncEngine(store, cfg)
        with store.transaction():
            taken = engine._rescore_in_sql(LATER, None)
            left = store.conn.execute(
                "SELECT id, category, access_count, accessed_at, expires_at, confirmations, status, "
                "freshness, age_days FROM facts WHERE scored_as_of IS NOT ? AND status IN ('active', 'contradicted')",
                (LATER,)).fetchall()
    plain_left = [r for r in left if r[1] in ("employment", "location", "preference") and not r[2]
                  and r[3] is None and r[4] is None and not r[5]]
    # the plain facts left over are ties of fast_round (a handful, from the planted ages)
    assert taken > 0.5 * n and 0 < len(plain_left) < 0.02 * n
    assert any(r[1] == "contact" for r in left)            # the ttl category stays in Python
    assert any(r[1] == "not_configured" for r in left)
    assert any(r[5] == 2 for r in left) and any(r[2] for r in left)


def test_without_math_functions_everything_is_scored_in_python(overlays, monkeypatch):
    sql_path, python_path, cfg, n = overlays
    monkeypatch.setattr(plain_rescore, "MATH_PROBE", "SELECT no_such_math_function(2.0)")
    counted = Counted(monkeypatch)
    with OverlayStore(sql_path) as store:
        assert not store.has_sql_math()
        with store.transaction():
            assert store.rescore_plain(LATER, {"x": None}) is None
        assert SyncEngine(store, cfg).rescore(LATER) == n
        got = snapshot(store)
    assert counted.sql == 0 and counted.python == n
    python_only(monkeypatch)
    with OverlayStore(python_path) as store:
        SyncEngine(store, cfg).rescore(LATER)
        assert got == snapshot(store)


def test_the_due_rescore_in_sql_matches_the_python_schedule(overlays, monkeypatch):
    sql_path, python_path, cfg, n = overlays
    now = AS_OF + 900 * DAY                 # many labels have moved since the audit
    counted = Counted(monkeypatch)
    with OverlayStore(sql_path) as store:
        done = SyncEngine(store, cfg).rescore_due(now)
        got = snapshot(store)
        assert store.conn.execute("SELECT count(*) FROM facts WHERE next_change <= ?", (now,)).fetchone()[0] == 0
    assert counted.sql > 0.3 * done
    python_only(monkeypatch)
    with OverlayStore(python_path) as store:
        assert SyncEngine(store, cfg).rescore_due(now) == done
        assert got == snapshot(store)


def test_a_large_rescore_in_sql_still_rebuilds_the_index(overlays, monkeypatch):
    sql_path, _, cfg, n = overlays
    monkeypatch.setattr(sync_module, "BULK_MIN", 1000)
    statements: list[str] = []
    with OverlayStore(sql_path) as store:
        store.conn.set_trace_callback(statements.append)
        SyncEngine(store, cfg).rescore(LATER)
        indexes = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert any(s.startswith("UPDATE facts SET freshness = s.freshness") for s in statements)
    assert 'DROP INDEX "facts_next_change"' in statements and "facts_next_change" in indexes


# -- Postgres ----------------------------------------------------------------------------
@pytest.mark.postgres
def test_postgres_math_gives_pythons_doubles(pg_database):
    """power(), ln() and float8 arithmetic on the server, read back through psycopg: the
    doubles Python computes."""
    rnd = random.Random(5)
    cases = []
    for _ in range(3000):
        d = decay_factor(rnd.choice([7, 90, 180, 365.25, 3650]))
        # ages where the powers stay far from underflow, as plain_rescore's max_age keeps them
        cases.append((d, rnd.uniform(0, min(20000.0, plain_rescore.MIN_LOG_POWER / -math.log(d)))))
    with OverlayStore(pg_database("mw_math")) as store:
        conn = store.conn
        conn.execute("CREATE TEMP TABLE mw_cases (d DOUBLE PRECISION, age DOUBLE PRECISION)")
        conn.copy_rows("temp.mw_cases", ("d", "age"), cases)
        got = conn.execute("SELECT d, age, pow(d, age), ln(0.8 / pow(d, age)) / ln(d), pow(0.5, age / 365.0), "
                           "(age * 1000000.0 + 6755399441055744.0) - 6755399441055744.0 FROM temp.mw_cases").fetchall()
    assert len(got) == len(cases)
    for d, age, p, until, c, k in got:
        assert repr(p) == repr(d ** age)
        assert repr(until) == repr(math.log(0.8 / d ** age) / math.log(d))
        assert repr(c) == repr(0.5 ** (age / 365.0))
        assert k == round(age * 1e6)


@pytest.mark.postgres
def test_postgres_sql_rescore_stores_what_the_python_path_stores(tmp_path, pg_database, monkeypatch):
    make_source(tmp_path / "agent.db", LATER)
    cfg = config(tmp_path / "agent.db")
    urls = pg_database("mw_sqlr_a"), pg_database("mw_sqlr_b")
    for url in urls:
        audit(None, cfg, as_of=AS_OF, overlay_path=url).close()
        with OverlayStore(url) as store:
            with store.transaction():
                unplain(store.conn)
            n = store.conn.execute(
                "SELECT count(*) FROM facts WHERE status IN ('active', 'contradicted')").fetchone()[0]
    counted = Counted(monkeypatch)
    with OverlayStore(urls[0]) as store:
        assert SyncEngine(store, cfg).rescore(LATER) == n
        got = snapshot(store)
    assert counted.sql > 0.5 * n
    python_only(monkeypatch)
    with OverlayStore(urls[1]) as store:
        assert SyncEngine(store, cfg).rescore(LATER) == n
        want = snapshot(store)
    for g, w in zip(got, want):
        # next_change: the ties the SQL path leaves are written by statements, not by the COPY
        # path with its 1 ms rule (tests/test_overlay_postgres_bulk.py); everything else exact
        assert g[:-1] == w[:-1]
        assert (g[-1] == w[-1]) or abs(float(g[-1]) - float(w[-1])) < 1e-3
    assert sum(g[-1] == w[-1] for g, w in zip(got, want)) > 0.97 * n


def test_a_rescore_of_one_source_leaves_the_others_facts(tmp_path):
    make_source(tmp_path / "agent.db", LATER)
    src = {"name": "bot", "connector": "sqlite", "path": str(tmp_path / "agent.db"), "table": "memories", "id": "id",
           "text": "fact", "subject": "user_id", "created_at": "created_at", "updated_at": "updated_at"}
    two = parse_config({"detector": {"enabled": False}, "sources": [src, dict(src, name="bot2")]})
    audit(None, two, as_of=AS_OF, overlay_path=str(tmp_path / "two.db")).close()
    with OverlayStore(tmp_path / "two.db") as store:
        bot = store.source_row("bot")["id"]
        n = SyncEngine(store, two).rescore(LATER, [bot])
        by_source = dict(store.conn.execute(
            "SELECT source_id, sum(scored_as_of = ?) FROM facts GROUP BY source_id", (LATER,)).fetchall())
        live = store.conn.execute("SELECT count(*) FROM facts WHERE source_id = ?", (bot,)).fetchone()[0]
    assert n == by_source[bot] == live and len(by_source) == 2
    assert sum(by_source.values()) == by_source[bot]


@pytest.mark.parametrize("times", [("a",), ("a", "b"), ("a", "b", "c")])
def test_age_sql_takes_the_latest_time_that_is_set(times):
    """age_sql per row, one time or several (one time must not become SQLite's aggregate
    max(), which would fold the rows into one)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a REAL, b REAL, c REAL, o REAL)")
    rows = [(1, 0.0, 86400.0, None, 0.0), (2, None, None, None, 3 * 86400.0), (3, 2 * 86400.0, None, 86400.0, 0.0)]
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
    as_of = 10 * 86400.0
    got = conn.execute(f"SELECT id, {plain_rescore.age_sql(times, 'o')} FROM t ORDER BY id", (as_of,)).fetchall()

    def expected(row):
        stamps = [row[1 + "abc".index(name)] for name in times]
        set_ = [s for s in stamps if s is not None]
        return max(0.0, (as_of - (max(set_) if set_ else row[4])) / 86400.0)
    assert got == [(row[0], expected(row)) for row in rows]
