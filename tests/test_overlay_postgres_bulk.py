"""Bulk paths of a Postgres overlay: pages of scores written by COPY, the re-audit's key
lookups by one array parameter, unchanged ids noted by COPY. They must store exactly what
the SQLite overlay stores for the same store, and keep a fact's next label change in place
when a rescore finds the same instant again (so that Postgres can update the row in place)."""
from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.store import scores
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.store.schema import ANALYZE_MIN, FACTS_FILLFACTOR
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import load_config

pytestmark = pytest.mark.postgres

AS_OF = parse_as_of("2026-11-20")
LATER = parse_as_of("2026-11-27")          # in the past: next_change values are real instants
ROWS = 3 * scores.PG_COPY_MIN + 17         # several pages of scores at batch=PG_COPY_MIN
SCORE_COLUMNS = ("ref", "status", "category", "freshness", "label", "age_days", "days_left",
                 "days_until_expired", "expired_by", "confidence", "scored_as_of", "next_change")


def _store(path: Path) -> Path:
    """A home-made agent table: users, keys, texts with quotes and non-ASCII, times over 3 years."""
    rnd = random.Random(7)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                 "fact_value TEXT, created_at TEXT)")
    keys = [("employer", "Works at Acme {} \u2014 'the big one'"), ("city", "Lives in Z\u00fcrich {}"),
            ("food", 'Loves "dish" {}'), ("pet", "Has a dog named {}")]
    base = dt.datetime(2026, 11, 1)
    for i in range(ROWS):
        key, text = keys[rnd.randrange(len(keys))]
        conn.execute("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                     (f"u{i % 40}", key, text.format(i),
                      (base - dt.timedelta(days=rnd.random() * 1100)).strftime("%Y-%m-%d %H:%M:%S")))
    conn.commit()
    conn.close()
    return path


def _scores(store: OverlayStore) -> dict[str, tuple]:
    cols = ", ".join(SCORE_COLUMNS)
    return {r[0]: tuple(r[1:]) for r in store.conn.execute(f"SELECT {cols} FROM facts")}


@pytest.fixture
def overlays(tmp_path, pg_database):
    """(store path, config, SQLite overlay path, Postgres overlay URL), detection off."""
    cfg_path = tmp_path / "memwatch.toml"
    cfg_path.write_text("[detector]\nenabled = false\n")
    return _store(tmp_path / "agent.db"), load_config(cfg_path), tmp_path / "overlay.db", pg_database("mw_bulk")


def _count_rows(monkeypatch, method: str) -> list[int]:
    """The sizes of the pages OverlayStore.<method> (a bulk path) is called with, from now on."""
    sizes: list[int] = []
    real = getattr(OverlayStore, method)

    def counting(self, rows):
        sizes.append(len(rows))
        return real(self, rows)
    monkeypatch.setattr(OverlayStore, method, counting)
    return sizes


def _count_statements(monkeypatch, store: OverlayStore) -> list[str]:
    """What the store sends its Postgres connection from now on (statements, COPYs)."""
    sent: list[str] = []
    for method in ("execute", "executemany", "run", "copy_rows"):
        real = getattr(store.conn, method)

        def counting(sql, *args, _real=real):
            sent.append(sql)
            return _real(sql, *args)
        monkeypatch.setattr(store.conn, method, counting)
    return sent


def _audit(store, cfg, overlay, as_of):
    result = audit(str(store), cfg, as_of=as_of, overlay_path=str(overlay))
    total = result.summary["total"]
    result.close()
    return total


def test_bulk_rescore_and_reaudit_store_what_sqlite_stores(overlays, monkeypatch):
    store, cfg, sqlite_path, pg_url = overlays
    copied = _count_rows(monkeypatch, "_write_scores_by_copy")
    for as_of in (AS_OF, LATER):
        assert _audit(store, cfg, sqlite_path, as_of) == _audit(store, cfg, pg_url, as_of) == ROWS
    assert sum(copied) >= ROWS, "the Postgres re-audit at a new as-of wrote its scores by COPY"
    with OverlayStore(str(sqlite_path)) as lite, OverlayStore(pg_url) as pg:
        want, got = _scores(lite), _scores(pg)
        assert want.keys() == got.keys() and len(got) == ROWS
        for ref, row in want.items():
            # every figure exact; a next change kept from the first audit is the same instant
            assert got[ref][:-1] == row[:-1], ref
            assert (got[ref][-1] is None) == (row[-1] is None), ref
            if row[-1] is not None:
                assert abs(got[ref][-1] - row[-1]) < 1e-3, ref
        assert pg.count_changed(1, 2) == 0, "the unchanged re-audit rewrote facts"


def test_a_rescore_keeps_next_change_when_it_is_the_same_instant(overlays):
    store, cfg, _, pg_url = overlays
    _audit(store, cfg, pg_url, AS_OF)
    pg = OverlayStore(pg_url)
    try:
        rows = pg.conn.execute("SELECT id, freshness, label, age_days, days_left, days_until_expired, "
                               "expired_by, confidence, next_change FROM facts "
                               "WHERE next_change IS NOT NULL ORDER BY id").fetchall()
        assert len(rows) >= scores.PG_COPY_MIN
        updates = [scores.ScoreUpdate(r[1], r[2], r[3], r[4], r[5], r[6], r[7], LATER,
                                      # half of them the same instant up to rounding, half a day later
                                      r[8] + (0.0004 if i % 2 == 0 else 86400.0), r[0])
                   for i, r in enumerate(rows)]
        with pg.transaction():
            assert pg.write_scores(updates) == len(updates)
        stored = dict(pg.conn.execute("SELECT id, next_change FROM facts WHERE next_change IS NOT NULL"))
        for i, r in enumerate(rows):
            assert stored[r[0]] == (r[8] if i % 2 == 0 else r[8] + 86400.0)
        assert pg.conn.execute("SELECT count(*) FROM facts WHERE scored_as_of = ?", (LATER,)).fetchone()[0] \
            == len(rows)
    finally:
        pg.close()


def test_a_first_audit_upserts_pages_by_copy_as_sqlite_stores_them(overlays, monkeypatch):
    """The first audit's pages go to Postgres by COPY straight into `facts` (none of their
    keys is stored yet), in the sync's writer thread: every column of every fact as the
    SQLite overlay has it (but the sync's wall-clock stamps), ids in the same order; a page
    of stored keys is COPYed into a temp table and upserted (the stored facts updated, none
    added); a page that holds one key twice takes the statement path (the later row wins)."""
    import threading
    from memwatch_overlay.overlay.store.facts import FACT_COLUMNS
    store, cfg, sqlite_path, pg_url = overlays
    _audit(store, cfg, sqlite_path, AS_OF)
    pages = _count_rows(monkeypatch, "_insert_by_copy")
    upserted = _count_rows(monkeypatch, "_upsert_by_copy")
    in_main: list[bool] = []
    upsert = OverlayStore.upsert_facts

    def noting_the_thread(self, rows):
        in_main.append(threading.current_thread() is threading.main_thread())
        return upsert(self, rows)
    monkeypatch.setattr(OverlayStore, "upsert_facts", noting_the_thread)
    _audit(store, cfg, pg_url, AS_OF)
    assert sum(pages) == ROWS and not upserted
    assert in_main and not any(in_main)             # the pages went to Postgres from the writer thread
    cols = [c for c in FACT_COLUMNS if c not in ("first_seen", "last_seen")]
    with OverlayStore(str(sqlite_path)) as lite, OverlayStore(pg_url) as pg:
        query = f"SELECT {', '.join(cols)} FROM facts ORDER BY id"
        assert [tuple(r) for r in pg.conn.execute(query)] == [tuple(r) for r in lite.conn.execute(query)]
        rows = [tuple(r) for r in pg.conn.execute(f"SELECT {', '.join(FACT_COLUMNS)} FROM facts ORDER BY id")]
        text = FACT_COLUMNS.index("text")
        twice = [rows[0][:text] + ("first copy",) + rows[0][text + 1:]] + rows[:scores.PG_COPY_MIN]
        with pg.transaction():
            pg.upsert_facts(twice)
        assert sum(pages) == ROWS and not upserted, "a page with a key twice went by COPY"
        assert pg.conn.execute("SELECT text FROM facts WHERE pk = ?", (rows[0][2],)).fetchone()[0] == rows[0][text]
        assert pg.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == ROWS
        # one key of a page already stored: the page is upserted, not inserted beside it
        edited = [r[:text] + (r[text] + " (edited)",) + r[text + 1:] for r in rows[-scores.PG_COPY_MIN:]]
        with pg.transaction():
            pg.upsert_facts(edited)
        assert sum(pages) == ROWS and upserted == [scores.PG_COPY_MIN]
        assert pg.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == ROWS
        assert pg.conn.execute("SELECT text FROM facts WHERE pk = ?", (rows[-1][2],)).fetchone()[0] \
            == rows[-1][text] + " (edited)"


def test_compare_lookups_and_unchanged_notes_match_sqlite(overlays, monkeypatch):
    store, cfg, sqlite_path, pg_url = overlays
    _audit(store, cfg, sqlite_path, AS_OF)
    _audit(store, cfg, pg_url, AS_OF)
    with OverlayStore(str(sqlite_path)) as lite, OverlayStore(pg_url) as pg:
        pks = [r[0] for r in lite.conn.execute("SELECT pk FROM facts ORDER BY id")]
        asked = pks[::3] + ['{"id": "no such row"}', '{"id": "it\'s \\u00e9"}']
        want, got = lite.stored_for_compare(1, asked), pg.stored_for_compare(1, asked)
        assert len(got) == len(pks[::3]) and got.keys() == want.keys()
        assert all(got[pk][1:] == want[pk][1:] for pk in want)       # ids may differ; the rest may not
        with pg.transaction():
            pg.begin_unchanged()
            ids = [got[pk][0] for pk in pks[::3]]
            calls = _count_statements(monkeypatch, pg)
            pg.note_unchanged(ids)
            pg.note_unchanged(ids[:10])          # a key read twice is noted once
            assert len(calls) == 2, calls        # one statement per page of ids
            noted = pg.conn.execute("SELECT count(*) FROM temp.mw_seen").fetchone()[0]
            pg.end_unchanged()
        assert noted == len(ids)


def test_facts_pages_leave_room_for_updates_in_place(overlays):
    _, _, _, pg_url = overlays
    pg = OverlayStore(pg_url)
    try:
        options = pg.conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'facts'::regclass").fetchone()[0]
        assert f"fillfactor={FACTS_FILLFACTOR}" in options
    finally:
        pg.close()
    OverlayStore(pg_url).close()              # opening it again changes nothing and does not fail


def test_overlay_connections_do_not_compile_statements(overlays):
    """JIT is off on the overlay's connection (the server's default may be on): compiling the
    page-sized statements cost more than running them."""
    _, _, _, pg_url = overlays
    pg = OverlayStore(pg_url)
    try:
        assert pg.conn.execute("SHOW jit").fetchone()[0] == "off"
    finally:
        pg.close()


# -- deletion detection: anti-joins on Postgres ------------------------------------------------
# The facts a full read did not see (not noted in TEMP mw_seen) and the facts whose key the
# source no longer has (not in TEMP mw_keys). `NOT IN (subquery)` is planned as a subplan that
# scans the temp table again for every fact once the planner thinks the subquery outgrows
# work_mem (a 1M-fact overlay at the default 4 MB); the answers must be the SQLite overlay's.

def _pks(store: OverlayStore, ids) -> set[str]:
    ids = list(ids)
    return {store.conn.execute("SELECT pk FROM facts WHERE id = ?", (i,)).fetchone()[0] for i in ids}


def _ids_by_pk(store: OverlayStore) -> dict[str, int]:
    return {r[0]: r[1] for r in store.conn.execute("SELECT pk, id FROM facts")}


def _deletion_pass(store: OverlayStore, noted_pks: list[str], kept_pks: list[str]):
    """(unseen pks, marked deleted count, deleted pks, missing-key pks) of one overlay."""
    by_pk = _ids_by_pk(store)
    source_id, sync_no = store.conn.execute("SELECT id, sync_count FROM sources").fetchone()
    with store.transaction():
        store.begin_unchanged()
        store.note_unchanged([by_pk[pk] for pk in noted_pks])
        unseen = _pks(store, store.unseen_live_ids(source_id, sync_no + 1, noted=True))
        marked = store.mark_unseen_deleted(source_id, sync_no + 1, noted=True)
        deleted = {r[0] for r in store.conn.execute("SELECT pk FROM facts WHERE status = 'deleted'")}
        store.end_unchanged()
    with store.transaction():
        store.conn.execute("UPDATE facts SET status = 'active'")
        store.load_source_keys(iter(kept_pks))
        missing = _pks(store, store.mark_missing_keys_deleted(source_id))
        store.drop_source_keys()
    return unseen, marked, deleted, missing


def test_deleted_facts_are_the_sqlite_overlays(overlays):
    store, cfg, sqlite_path, pg_url = overlays
    assert _audit(store, cfg, sqlite_path, AS_OF) == _audit(store, cfg, pg_url, AS_OF) == ROWS
    with OverlayStore(str(sqlite_path)) as lite, OverlayStore(pg_url) as pg:
        pks = sorted(_ids_by_pk(lite))
        noted, kept = pks[::3] + pks[:5], pks[1::2]       # some noted twice; every other key kept
        want, got = _deletion_pass(lite, noted, kept), _deletion_pass(pg, noted, kept)
        unseen, marked, deleted, missing = got
        assert unseen == set(pks) - set(noted) and marked == len(unseen) and deleted == unseen
        assert missing == set(pks) - set(kept)
        assert got == want


def test_deletion_statements_never_rescan_the_temp_table_per_fact(overlays, monkeypatch):
    """With work_mem at its floor, the mw_seen / mw_keys statements are still anti-joins."""
    store, cfg, _, pg_url = overlays
    _audit(store, cfg, pg_url, AS_OF)
    pg = OverlayStore(pg_url)
    try:
        pg.conn.execute("SET work_mem = '64kB'")
        statements: list[tuple] = []
        real = pg.conn.execute

        def recording(sql, params=None):
            if "mw_seen" in sql or "mw_keys" in sql:
                statements.append((sql, params))
            return real(sql, params)
        monkeypatch.setattr(pg.conn, "execute", recording)
        pks = sorted(_ids_by_pk(pg))
        with pg.transaction():
            pg.begin_unchanged()
            pg.note_unchanged(list(_ids_by_pk(pg).values())[::2])
            pg.load_source_keys(iter(pks[::2]))
            # the plans of the deletion statements, with the temp tables filled
            source_id, sync_no = real("SELECT id, sync_count FROM sources").fetchone()
            statements.clear()
            pg.unseen_live_ids(source_id, sync_no + 1, noted=True)
            pg.mark_unseen_deleted(source_id, sync_no + 1, noted=True)
            pg.mark_missing_keys_deleted(source_id)
            plans = ["\n".join(r[0] for r in real("EXPLAIN " + sql, params)) for sql, params in statements]
            pg.end_unchanged()
            pg.drop_source_keys()
        assert len(plans) == 3
        for (sql, _), plan in zip(statements, plans):
            assert "SubPlan" not in plan and "Anti" in plan, (sql, plan)
    finally:
        pg.close()


def test_an_overlay_made_with_another_fillfactor_gets_this_one_when_opened(overlays):
    """An overlay made before the setting changed (fillfactor 80) is brought to FACTS_FILLFACTOR."""
    _, _, _, pg_url = overlays
    pg = OverlayStore(pg_url)
    try:
        pg.conn.execute("ALTER TABLE facts SET (fillfactor = 80)")
    finally:
        pg.close()
    pg = OverlayStore(pg_url)
    try:
        options = pg.conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'facts'::regclass").fetchone()[0]
        assert options == [f"fillfactor={FACTS_FILLFACTOR}"] and FACTS_FILLFACTOR == 50
    finally:
        pg.close()


def test_a_first_audit_leaves_the_planner_counts_of_what_it_wrote(overlays):
    """After a sync that wrote most of `facts`, the planner's statistics are refreshed (ANALYZE):
    with an empty table's counts (reltuples -1), a 100k re-audit read each page of keys by
    scanning every fact of the source instead of probing the (source_id, pk) index. Few
    writes, relative to the count, do not analyze again."""
    store, cfg, _, pg_url = overlays
    assert _audit(store, cfg, pg_url, AS_OF) == ROWS >= ANALYZE_MIN
    pg = OverlayStore(pg_url)
    try:
        assert pg.conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'facts'::regclass").fetchone()[0] == ROWS
        assert not pg.refresh_statistics(ANALYZE_MIN - 1)               # too few to matter
        assert pg.refresh_statistics(ANALYZE_MIN)                           # > a tenth of 617
    finally:
        pg.close()
