"""Labels decay with time even when nothing changes, and only due facts are rescored.

`next_change` is checked against brute force: the label just before it is the label
scored now, the label just after it is different; and stepping the clock through two
years, the indexed rescore of due facts gives exactly the labels a full rescore gives.
"""
from __future__ import annotations

import random
import sqlite3

import pytest

from memwatch_overlay.overlay.engine.scoring import DAY, CategoryPolicy, Thresholds, score_fact
from memwatch_overlay.overlay.store.database import DUE_WHERE, MIGRATIONS, OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import parse_as_of, to_iso
from memwatch_overlay.rules.config import parse_config

AS_OF = parse_as_of("2026-01-01")


def random_case(rnd: random.Random):
    policy = CategoryPolicy(rnd.choice([30, 180, 365, 3650]), rnd.choice([None, None, 90, 540]))
    learned = AS_OF - rnd.uniform(0, 800) * DAY
    count = rnd.choice([0, 0, 1, 3, 20, 200])
    accessed = None if rnd.random() < 0.5 else AS_OF - rnd.uniform(0, 400) * DAY
    expires = None if rnd.random() < 0.8 else AS_OF + rnd.uniform(-10, 400) * DAY
    return policy, learned, count, accessed, expires


def test_next_change_is_exactly_when_the_label_changes():
    rnd = random.Random(7)
    checked = never = 0
    for _ in range(3000):
        policy, learned, count, accessed, expires = random_case(rnd)
        s = score_fact(AS_OF, learned, policy, Thresholds(), count, accessed, expires)
        if s.next_change_days is None:
            later = score_fact(AS_OF + 50 * 365 * DAY, learned, policy, Thresholds(), count, accessed, expires)
            assert later.label == s.label, "next_change None promised the label never changes"
            never += 1
            continue
        t = AS_OF + s.next_change_days * DAY
        before = score_fact(t - 1.0, learned, policy, Thresholds(), count, accessed, expires)
        after = score_fact(t + 1.0, learned, policy, Thresholds(), count, accessed, expires)
        assert before.label == s.label, (s, before)
        assert after.label != s.label, (s, after)
        checked += 1
    assert checked > 1000 and never > 50   # both branches exercised


def test_expired_labels_never_come_due():
    s = score_fact(AS_OF, AS_OF - 5000 * DAY, CategoryPolicy(180), Thresholds())
    assert s.label == "expired" and s.next_change_days is None


@pytest.fixture
def seeded(tmp_path):
    """An overlay with 600 facts of assorted ages, categories and access patterns."""
    rnd = random.Random(3)
    path = tmp_path / "bot.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, fact TEXT, kind TEXT, created_at TEXT, "
                     "hits INTEGER, last_used TEXT)")
        rows = []
        for i in range(600):
            created = AS_OF - rnd.uniform(0, 700) * DAY
            used = None if rnd.random() < 0.5 else to_iso(created + rnd.uniform(0, 1) * (AS_OF - created))
            rows.append((i, f"fact {i}", rnd.choice(["employment", "location", "fact", "contact"]),
                         to_iso(created), rnd.choice([0, 0, 2, 9]), used))
        conn.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?)", rows)
    cfg = parse_config({
        "categories": {"employment": {"half_life_days": 90, "ttl_days": 400}},
        "sources": [{"name": "bot", "connector": "sqlite", "path": str(path), "table": "facts", "id": "id",
                     "text": "fact", "category": "kind", "created_at": "created_at",
                     "access_count": "hits", "accessed_at": "last_used"}]})
    store = OverlayStore(tmp_path / "overlay.db")
    engine = SyncEngine(store, cfg)
    engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
    yield store, engine
    store.close()


def labels(store) -> dict[int, str]:
    return dict(store.conn.execute("SELECT id, label FROM facts").fetchall())


def brute_force_labels(store, engine, t: float) -> dict[int, str]:
    rows = store.conn.execute("SELECT * FROM facts").fetchall()
    return {r["id"]: engine.score_row(r, t).label for r in rows}


def test_scheduled_rescore_matches_a_full_rescore_at_every_step(seeded):
    store, engine = seeded
    assert labels(store) == brute_force_labels(store, engine, AS_OF)
    total = rescored = 0
    t = AS_OF
    for _ in range(48):                      # two years in 15-day steps
        t += 15 * DAY
        due = store.conn.execute("SELECT count(*) FROM facts WHERE next_change <= ?", (t,)).fetchone()[0]
        n = engine.rescore_due(now=t)
        assert n == due
        assert labels(store) == brute_force_labels(store, engine, t)
        total += 600
        rescored += n
    assert 0 < rescored < total / 4, "only facts whose label could change were rescored"


@pytest.mark.parametrize("scope", ["", " AND +source_id IN (1)"])
def test_rescore_reads_through_the_index(seeded, scope):
    """The statements rescore_due runs seek the next_change index (not a status or source index)."""
    store, _ = seeded
    for sql in (f"SELECT id FROM facts WHERE {DUE_WHERE}{scope}",
                f"UPDATE facts SET next_change = NULL WHERE next_change <= ? "
                f"AND NOT +status IN ('active', 'contradicted'){scope}"):
        plan = " ".join(r[3] for r in store.conn.execute("EXPLAIN QUERY PLAN " + sql, (AS_OF,)))
        assert "facts_next_change" in plan and not plan.startswith("SCAN"), (sql, plan)


def test_a_refreshed_fact_is_due_at_once(seeded):
    store, engine = seeded
    ref = store.conn.execute("SELECT ref FROM facts WHERE label = 'expired' LIMIT 1").fetchone()[0]
    store.mark_refreshed([ref], AS_OF + DAY)
    assert engine.rescore_due(now=AS_OF + DAY) >= 1
    assert store.conn.execute("SELECT label FROM facts WHERE ref = ?", (ref,)).fetchone()[0] == "fresh"


def test_labels_scored_for_a_future_moment_are_due_now(tmp_path, seeded):
    """audit --as-of in the future writes tomorrow's labels: the schedule redoes them at the real time."""
    store, engine = seeded
    import time
    future = time.time() + 900 * DAY
    engine.rescore(future)
    assert store.conn.execute("SELECT count(*) FROM facts WHERE next_change > ?", (time.time(),)).fetchone()[0] == 0


def test_v1_overlay_migrates_with_every_live_fact_due(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[1] + "; PRAGMA user_version = 1;")
    conn.execute("INSERT INTO sources (id, name, connector, target) VALUES (1, 'bot', 'sqlite', 'x.db')")
    for i, status in enumerate(["active", "deleted", "contradicted"]):
        conn.execute("INSERT INTO facts (source_id, tbl, pk, ref, text, category, content_hash, first_seen, "
                     "last_seen, seen_sync, changed_sync, status, created_at) "
                     "VALUES (1, 't', ?, ?, 'x', 'general', 'h', 0, 0, 1, 1, ?, ?)",
                     (f'{{"id": "{i}"}}', f"bot:t:{i}", status, AS_OF - 400 * DAY))
    conn.commit()
    conn.close()
    store = OverlayStore(path)
    try:
        due = dict(store.conn.execute("SELECT status, next_change FROM facts").fetchall())
        assert due == {"active": 0, "deleted": None, "contradicted": 0}
        engine = SyncEngine(store, parse_config({}))
        assert engine.rescore_due(now=AS_OF) == 2
        assert {r[0] for r in store.conn.execute("SELECT label FROM facts WHERE status != 'deleted'")} == {"stale"}
    finally:
        store.close()
