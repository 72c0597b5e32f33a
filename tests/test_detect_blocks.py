"""Detection blocks: subjects (never across them, nor across stores unless the config says
so), supersession edges instead of all pairs, work that grows about linearly with one
user's memories, key-value memories read during sync, and incremental syncs that end
where a full audit of the same rows ends."""
from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from pathlib import Path

import fixture_stores
import pytest

from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.overlay.detect import blocks
from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.engine.audit import audit, overlay_report
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.rules.config import load_config

from storegen import write_config
from test_sync_contradictions import AS_OF

COMPANIES = ["Google", "Stripe", "Meta", "Deloitte", "Grab", "Globant", "Shopify", "Spotify", "Airbus",
             "Siemens", "Nokia", "Canva", "Atlassian", "Zalando", "Klarna", "Revolut", "Monzo", "Adyen"]
CITIES = ["Oslo", "Bergen", "Leeds", "Lisbon", "Porto", "Madrid", "Krakow", "Jakarta", "Surabaya", "Lagos",
          "Nairobi", "Quito", "Lima", "Hanoi", "Osaka", "Perth", "Denver", "Austin"]
FOODS = ["sushi", "thai food", "pizza", "ramen", "tacos", "curry", "falafel", "dumplings"]
FRIENDS = ["Ben", "Chidi", "Dana", "Eva", "Farid", "Gus", "Hana", "Ivo", "Jun", "Kemal"]


def one_user_memories(n: int, seed: int = 7) -> list[tuple[str, str | None, str]]:
    """(category, key, text) of one user's n memories, oldest first: jobs and homes that
    change, restatements, tastes turning, key-value rows, and many notes that share words."""
    rnd = random.Random(seed)
    job, city = rnd.choice(COMPANIES), rnd.choice(CITIES)
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.08:
            job = rnd.choice(COMPANIES)
            out.append(("employment", None, rnd.choice([f"I just joined {job}.", f"I work at {job}.",
                                                        f"Started a new job at {job}."])))
        elif r < 0.14:
            out.append(("employment", None, f"I work at {job}."))                 # restated
        elif r < 0.20:
            city = rnd.choice(CITIES)
            out.append(("location", None, rnd.choice([f"We moved to {city}.", f"I live in {city}."])))
        elif r < 0.24:
            out.append(("employment", "employer", rnd.choice(COMPANIES)))          # key-value row
        elif r < 0.32:
            food = rnd.choice(FOODS)
            out.append(("preference", None, rnd.choice([f"I love {food}.", f"I do not like {food} anymore."])))
        elif r < 0.36:
            out.append(("general", None, f"I handed in my notice at {job}."))
        else:
            out.append(("general", None, f"Had coffee with {rnd.choice(FRIENDS)} near the office in {city}."))
    return out


def _write(path: Path, rows: list[tuple[str, str, str | None, str, str]]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, "
                 "fact_key TEXT, content TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories (user_id, kind, fact_key, content, created_at) VALUES (?, ?, ?, ?, ?)",
                     rows)
    conn.commit()
    conn.close()
    return path


def _stamp(i: int) -> str:
    """The i-th hour from 2024-01-01 (one user's memories, a few hours apart)."""
    return (dt.datetime(2024, 1, 1) + dt.timedelta(hours=i)).strftime("%Y-%m-%d %H:%M:%S")


def _user_store(path: Path, n: int, user: str = "u1") -> Path:
    return _write(path, [(user, c, k, t, _stamp(i * 5)) for i, (c, k, t) in enumerate(one_user_memories(n))])


def _edges(overlay: OverlayStore) -> set[tuple[str, str]]:
    return {tuple(r) for r in overlay.conn.execute(
        "SELECT o.text || ' @' || o.ref, n.text || ' @' || n.ref FROM contradictions c "
        "JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id "
        "WHERE o.status != 'deleted' AND n.status != 'deleted'")}


def _synced(tmp_path: Path, store: Path, name: str) -> tuple[int, int, int, set]:
    cfg = load_config(write_config(tmp_path, store))
    with OverlayStore(tmp_path / f"{name}.db") as overlay:
        stats = SyncEngine(overlay, cfg, detector=Detector()).sync(cfg.sources[0], as_of=AS_OF, full=True)
        rows = overlay.conn.execute("SELECT count(*) FROM contradictions").fetchone()[0]
        return stats.records, stats.comparisons, rows, _edges(overlay)


def test_work_and_storage_grow_about_linearly_with_one_users_memories(tmp_path):
    sizes = (600, 1200, 2400)
    runs = {}
    for n in sizes:
        (tmp_path / str(n)).mkdir()
        runs[n] = _synced(tmp_path / str(n), _user_store(tmp_path / str(n) / "bot.db", n), "o")
    for n in sizes:
        records, comparisons, rows, _ = runs[n]
        assert records == n
        assert 0 < rows <= 2 * n                   # supersession edges, not all pairs
        assert comparisons <= 8 * n
    for small, big in zip(sizes, sizes[1:]):
        assert runs[big][1] <= 2.5 * runs[small][1]     # comparisons: twice the memories, ~twice the work
        assert runs[big][2] <= 2.5 * runs[small][2]     # stored contradictions likewise


def test_a_daemon_walks_on_from_where_it_stopped(tmp_path):
    """One new memory of a user with many: with the walk kept, a handful of comparisons;
    walked again from the start, the whole block's. The same edges either way."""
    found = {}
    for mode, keep_min in (("kept", 2), ("again", 10**9)):
        (tmp_path / mode).mkdir()
        store = _user_store(tmp_path / mode / "bot.db", 1500)
        cfg = load_config(write_config(tmp_path / mode, store))
        blocks.KEEP_WALK_MIN, saved = keep_min, blocks.KEEP_WALK_MIN
        try:
            with OverlayStore(tmp_path / f"{mode}.db") as overlay:
                engine = SyncEngine(overlay, cfg, detector=Detector())
                first = engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
                _write(store, [("u1", "employment", None, "I just joined Nokia.", "2026-11-20 10:00:00")])
                tick = engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
                found[mode] = (first.comparisons, tick.comparisons, tick.contradictions,
                               _edges(overlay))
        finally:
            blocks.KEEP_WALK_MIN = saved
    kept, again = found["kept"], found["again"]
    assert kept[3] == again[3] and kept[2] == again[2] >= 1
    assert kept[1] <= 20 < 500 < again[1]         # one step, against the walk of 1,500 facts
    assert kept[0] == again[0]


def test_an_older_fact_is_outdated_by_the_nearest_newer_one_only(tmp_path):
    store = _write(tmp_path / "bot.db", [
        ("u1", "employment", None, "Works at Google", "2024-01-01 10:00:00"),
        ("u1", "employment", None, "I work at Google.", "2024-03-01 10:00:00"),      # restated
        ("u1", "employment", None, "I just joined Stripe.", "2025-01-01 10:00:00"),
        ("u1", "employment", None, "Started a new job at Meta.", "2026-01-01 10:00:00"),
        ("u2", "employment", None, "Works at Canva", "2026-02-01 10:00:00")])
    cfg = load_config(write_config(tmp_path, store))
    result = audit(config=cfg, as_of=AS_OF, detector=Detector(), overlay_path=str(tmp_path / "o.db"))
    try:
        facts = {f["ref"]: f for f in result.iter_facts()}
        pairs = sorted((facts[c["older"]]["text"], facts[c["newer"]]["text"]) for c in result.contradictions())
        assert pairs == [("I just joined Stripe.", "Started a new job at Meta."),
                         ("I work at Google.", "I just joined Stripe."),
                         ("Works at Google", "I just joined Stripe.")]
        by_text = {f["text"]: f for f in facts.values()}
        assert by_text["Works at Google"]["contradicted_by"] == [by_text["I just joined Stripe."]["ref"]]
        assert by_text["Started a new job at Meta."]["status"] == "active"
        assert by_text["Works at Canva"]["status"] == "active"
    finally:
        result.close()


@pytest.mark.parametrize("keep_min", [2, 10**9])
def test_incremental_syncs_end_where_a_full_audit_ends(tmp_path, monkeypatch, keep_min):
    """Rows arriving one sync at a time, one of them dated between two older ones, one
    edited and one deleted: the stored edges are those of one full audit of the result,
    whether the detector kept its walks (walked on) or walks every changed block again."""
    monkeypatch.setattr(blocks, "KEEP_WALK_MIN", keep_min)
    rows = [("u1", c, k, t, _stamp(i * 5)) for i, (c, k, t) in enumerate(one_user_memories(120, seed=3))]
    store = _write(tmp_path / "bot.db", rows[:60])
    cfg = load_config(write_config(tmp_path, store))
    with OverlayStore(tmp_path / "inc.db") as overlay:
        engine = SyncEngine(overlay, cfg, detector=Detector())
        engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        for chunk in (rows[60:61], rows[61:90], rows[90:]):
            _write(store, chunk)
            engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
        _write(store, [("u1", "location", None, "We moved to Reykjavik.", _stamp(30 * 5 + 2))])   # back-dated
        engine.sync(cfg.sources[0], as_of=AS_OF, full=False)
        conn = sqlite3.connect(store)
        conn.execute("UPDATE memories SET content = 'I just joined Airbus.' WHERE id = 40")
        conn.execute("DELETE FROM memories WHERE id = (SELECT min(id) FROM memories WHERE content LIKE "
                     "'I just joined%' AND id > 70)")
        conn.commit()
        conn.close()
        engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        incremental = _edges(overlay)
        statuses = dict(overlay.conn.execute("SELECT ref, status FROM facts WHERE status != 'deleted'").fetchall())
    with OverlayStore(tmp_path / "full.db") as overlay:
        SyncEngine(overlay, cfg, detector=Detector()).sync(cfg.sources[0], as_of=AS_OF, full=True)
        assert incremental == _edges(overlay) and len(incremental) > 10
        assert statuses == dict(overlay.conn.execute(
            "SELECT ref, status FROM facts WHERE status != 'deleted'").fetchall())


def test_two_stores_sharing_an_overlay_are_never_compared(tmp_path):
    a = _write(tmp_path / "a.db", [("u1", "employment", None, "Works at Google", "2025-01-01 10:00:00")])
    b = _write(tmp_path / "b.db", [("u1", "employment", None, "I just joined Stripe.", "2026-01-01 10:00:00")])
    overlay = str(tmp_path / "shared.db")
    for store in (a, b):
        result = audit(str(store), as_of=AS_OF, overlay_path=overlay)
        try:
            assert list(result.contradictions()) == []
        finally:
            result.close()


def test_sources_sharing_a_subject_space_are_compared_and_the_report_names_both(tmp_path):
    a = _write(tmp_path / "a.db", [("u1", "employment", None, "Works at Google", "2025-01-01 10:00:00"),
                                   ("u2", "employment", None, "Works at Canva", "2025-01-01 10:00:00")])
    b = _write(tmp_path / "b.db", [("u1", "employment", None, "I just joined Stripe.", "2026-01-01 10:00:00")])
    mapping = ('table = "memories"\nid = "id"\ntext = "content"\nsubject = "user_id"\ncategory = "kind"\n'
               'key = "fact_key"\ncreated_at = "created_at"\n')
    cfg_path = tmp_path / "memwatch.toml"
    for space, expected in (("", 0), ('subject_space = "users"\n', 1)):
        cfg_path.write_text("".join(f'[[sources]]\nname = "{n}"\nconnector = "sqlite"\npath = "{n}.db"\n'
                                    f"{mapping}{space}" for n in ("a", "b")))
        result = audit(config=load_config(cfg_path), as_of=AS_OF, detector=Detector(),
                       overlay_path=str(tmp_path / f"o{expected}.db"))
        try:
            found = list(result.contradictions())
            assert len(found) == expected
            if expected:
                assert found[0]["sources"] == ["a", "b"]
                assert found[0]["older"].startswith("a:") and found[0]["newer"].startswith("b:")
        finally:
            result.close()


def test_key_value_memories_meet_free_text_during_a_sync(tmp_path):
    store = _write(tmp_path / "bot.db", [
        ("u1", "employment", "employer", "Google", "2025-01-01 10:00:00"),
        ("u1", "general", None, "I just joined Stripe.", "2026-01-01 10:00:00"),
        ("u2", "general", None, "Works at Grab", "2025-01-01 10:00:00"),
        ("u2", "employment", "employer", "Globant", "2026-01-01 10:00:00")])
    result = audit(config=load_config(write_config(tmp_path, store)), as_of=AS_OF, detector=Detector(),
                   overlay_path=str(tmp_path / "o.db"))
    try:
        facts = {f["ref"]: f for f in result.iter_facts()}
        pairs = sorted((facts[c["older"]]["text"], facts[c["newer"]]["text"]) for c in result.contradictions())
        assert pairs == [("Google", "I just joined Stripe."), ("Works at Grab", "Globant")]
    finally:
        result.close()


def test_category_buckets_do_not_hide_a_contradiction(tmp_path):
    store = _write(tmp_path / "bot.db", [
        ("u1", "employment", None, "I work at Deloitte", "2025-01-01 10:00:00"),
        ("u1", "general", None, "I handed in my notice at Deloitte", "2026-01-01 10:00:00"),
        ("u1", "general", None, "I'm single", "2025-01-01 10:00:00"),
        ("u1", "relationship", None, "I got married", "2026-02-01 10:00:00")])
    result = audit(config=load_config(write_config(tmp_path, store)), as_of=AS_OF, detector=Detector(),
                   overlay_path=str(tmp_path / "o.db"))
    try:
        facts = {f["ref"]: f for f in result.iter_facts()}
        pairs = sorted((facts[c["older"]]["text"], facts[c["newer"]]["text"]) for c in result.contradictions())
        assert pairs == [("I work at Deloitte", "I handed in my notice at Deloitte"), ("I'm single", "I got married")]
    finally:
        result.close()


def test_the_subjects_own_name_never_links_a_cue_to_a_fact():
    d = Detector()
    old = FactView("o", "u_alice", None, "Coffee for Alice is always black", "preference", 0.0)
    new = FactView("n", "u_alice", None, "Alice is no longer vegetarian", "preference", 1.0)
    assert d.compare(new, [old]) == []
    wants = {t[1:] for t in d.index_terms(new) if t[0] == "want"}
    offers = {t[1:] for t in d.index_terms(old) if t[0] == "offer"}
    assert not wants & offers                      # not even a candidate


def test_a_store_without_subjects_compares_only_facts_naming_the_same_person(tmp_path):
    conn = sqlite3.connect(tmp_path / "bot.db")
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, content TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO notes (content, created_at) VALUES (?, ?)", [
        ("Priya lives in Jakarta.", "2025-01-01 10:00:00"),
        ("Tomasz moved to Oslo.", "2025-06-01 10:00:00"),
        ("I moved to Lisbon.", "2025-07-01 10:00:00"),
        ("Priya moved to Surabaya last month.", "2026-01-01 10:00:00")])
    conn.commit()
    conn.close()
    result = audit(str(tmp_path / "bot.db"), as_of=AS_OF, overlay_path=str(tmp_path / "o.db"))
    try:
        facts = {f["ref"]: f for f in result.iter_facts()}
        assert {f["subject"] for f in facts.values()} == {None}
        pairs = sorted((facts[c["older"]]["text"], facts[c["newer"]]["text"]) for c in result.contradictions())
        assert pairs == [("Priya lives in Jakarta.", "Priya moved to Surabaya last month.")]
    finally:
        result.close()


def test_report_json_keeps_its_shape(tmp_path):
    """contradicted_by lists the edges' newer refs; contradictions the stored edges."""
    store = _user_store(tmp_path / "bot.db", 200)
    result = audit(config=load_config(write_config(tmp_path, store)), as_of=AS_OF, detector=Detector(),
                   overlay_path=str(tmp_path / "o.db"))
    try:
        facts = list(result.iter_facts())
        edges = list(result.contradictions())
        by_older: dict[str, set] = {}
        for c in edges:
            assert set(c) >= {"older", "newer", "kind", "confidence", "evidence"} and "sources" not in c
            by_older.setdefault(c["older"], set()).add(c["newer"])
        for f in facts:
            assert set(f["contradicted_by"]) == by_older.get(f["ref"], set())
            assert (f["status"] == "contradicted") == bool(f["contradicted_by"])
        json.dumps(edges)
    finally:
        result.close()


def test_every_fixture_store_in_one_overlay_gives_no_cross_store_or_cross_user_contradiction(tmp_path, agent_store):
    """The framework-written fixture stores audited zero-config into ONE shared overlay: each
    store's planted contradictions are found as when audited alone, and nothing links two
    stores or two users."""
    overlay = str(tmp_path / "shared.db")
    alone: set[tuple] = set()           # (subject, older text, newer text) of each store audited alone
    for name, fx in fixture_stores.FIXTURES.items():
        if fx.kind not in ("sqlite", "json"):
            continue
        folder = agent_store(name)
        for file in fx.stores:
            as_of = fx.manifest["reference_time"]
            own = audit(str(folder / file), as_of=parse_timestamp(as_of),
                        overlay_path=str(tmp_path / f"{name}-{file.replace('/', '_')}.db"))
            try:
                texts = {f["ref"]: (f["subject"], f["text"]) for f in own.iter_facts()}
                alone |= {(*texts[c["older"]], texts[c["newer"]][1]) for c in own.contradictions()}
            finally:
                own.close()
            shared = audit(str(folder / file), as_of=parse_timestamp(as_of), overlay_path=overlay)
            shared.close()
    report = overlay_report(None, overlay_path=overlay, as_of=AS_OF)
    try:
        facts = {f["ref"]: f for f in report.iter_facts()}
        found = list(report.contradictions())
        assert len({f["source"] for f in facts.values()}) >= 5 and found
        for c in found:
            older, newer = facts[c["older"]], facts[c["newer"]]
            assert older["source"] == newer["source"], c
            assert older["subject"] == newer["subject"], c
            assert "sources" not in c
        assert {(facts[c["older"]]["subject"], facts[c["older"]]["text"], facts[c["newer"]]["text"])
                for c in found} == alone
    finally:
        report.close()


def test_a_deleted_replacement_hands_the_older_fact_to_the_next_one(tmp_path):
    store = _write(tmp_path / "bot.db", [
        ("u1", "employment", None, "Works at Google", "2024-01-01 10:00:00"),
        ("u1", "employment", None, "I just joined Stripe.", "2025-01-01 10:00:00"),
        ("u1", "employment", None, "Started a new job at Meta.", "2026-01-01 10:00:00")])
    cfg = load_config(write_config(tmp_path, store))
    with OverlayStore(tmp_path / "o.db") as overlay:
        engine = SyncEngine(overlay, cfg, detector=Detector())
        engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        assert {(o.split(" @")[0], n.split(" @")[0]) for o, n in _edges(overlay)} == {
            ("Works at Google", "I just joined Stripe."), ("I just joined Stripe.", "Started a new job at Meta.")}
        conn = sqlite3.connect(store)
        conn.execute("DELETE FROM memories WHERE content = 'I just joined Stripe.'")
        conn.commit()
        conn.close()
        engine.sync(cfg.sources[0], as_of=AS_OF, full=True)
        assert {(o.split(" @")[0], n.split(" @")[0]) for o, n in _edges(overlay)} == {
            ("Works at Google", "Started a new job at Meta.")}
        assert dict(overlay.conn.execute("SELECT text, status FROM facts").fetchall()) == {
            "Works at Google": "contradicted", "I just joined Stripe.": "deleted",
            "Started a new job at Meta.": "active"}


def test_notes_of_one_off_events_are_never_outdated(tmp_path):
    """"Had coffee with Ben near the office in Leeds" stays a true record of the past when the
    user later moves or changes jobs: among a user's 600 memories (374 such notes, 43 moves or homes,
    100 job statements), no note is the older side of a stored contradiction. A pair model refitted
    with a corpus of state changes once flagged hundreds of them (docs/history.md, "Stop 32: twice the pair corpus")."""
    store = _user_store(tmp_path / "bot.db", 600)
    _, _, rows, edges = _synced(tmp_path, store, "o")
    assert rows > 0                                          # the jobs and homes that change are found
    notes = [e for e in edges if e[0].startswith("Had coffee with")]
    assert notes == []
