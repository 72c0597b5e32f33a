"""The overlay on Postgres gives what the SQLite overlay gives, for the same stores.

Every scenario runs twice, once per backend, on copies of the same store; the results
(summaries, facts with their labels and scores, contradictions, runs, status) must match.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fixture_stores import of_kind

from memwatch_overlay.overlay.engine import maintenance
from memwatch_overlay.overlay.store.backup import export_overlay, import_overlay
from memwatch_overlay.overlay.engine.audit import audit, open_overlay, overlay_report
from memwatch_overlay.core.errors import OverlayError
from memwatch_overlay.overlay.store.database import SCHEMA_VERSION, OverlayStore
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import load_config

ROOT = Path(__file__).resolve().parents[1]
AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"
AS_OF = parse_as_of("2026-11-29")
SCRIPT = shutil.which("memwatch-overlay", path=str(Path(sys.executable).parent)) or shutil.which("memwatch-overlay")
# (framework, store file): every SQLite fixture store (see fixture_stores.py)
FIXTURES = [(name, store) for name, f in of_kind("sqlite").items() for store in f.stores]

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_overlay(pg_database):
    """A fresh database per call, for one overlay (dropped after the test)."""
    return lambda: pg_database("memwatch_ov")


def _config(folder: Path, overlay_line: str):
    """examples/my_agent.db + the example memwatch.toml, with the overlay line replaced."""
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "my_agent.db", folder / "my_agent.db")
    text = (ROOT / "memwatch.toml").read_text().replace("examples/my_agent.db", "my_agent.db")
    lines = [overlay_line if ln.strip().startswith("path = \".memwatch") else ln for ln in text.splitlines()]
    assert overlay_line in lines, "the example memwatch.toml has no [overlay] path line to replace"
    (folder / "memwatch.toml").write_text("\n".join(lines) + "\n")
    return load_config(folder / "memwatch.toml")


@pytest.fixture
def both(tmp_path, pg_overlay):
    """(sqlite config, postgres config): the same store and rules, one overlay each."""
    sqlite_cfg = _config(tmp_path / "sqlite", 'path = ".memwatch/overlay.db"')
    pg_cfg = _config(tmp_path / "pg", f'dsn = "{pg_overlay()}"')
    assert pg_cfg.overlay_dsn and not sqlite_cfg.overlay_dsn
    return sqlite_cfg, pg_cfg


def _facts(result) -> list[dict]:
    out = []
    for f in result.iter_facts(order="f.ref"):
        f = dict(f)
        f.pop("first_seen")          # wall-clock time of the sync
        f["contradicted_by"] = sorted(f["contradicted_by"])
        out.append(f)
    return out


def _state(result) -> dict:
    header = result.header()
    for source in header["sources"]:
        source["target"] = Path(source["target"]).name     # the two copies live in two folders
    return {"header": header, "facts": _facts(result),
            "contradictions": list(result.contradictions()),
            "by_category": result.by("category")}


def test_postgres_overlay_is_migrated_to_the_same_schema(pg_overlay, tmp_path):
    dsn = pg_overlay()
    with OverlayStore(dsn) as pg, OverlayStore(tmp_path / "o.db") as lite:
        assert pg.dialect == "postgres" and lite.dialect == "sqlite"
        assert pg.schema_version() == lite.schema_version() == SCHEMA_VERSION
        for table in ("sources", "facts", "contradictions", "runs", "fact_vectors", "actions"):
            assert pg.table_columns(table) == lite.table_columns(table)
    with OverlayStore(dsn) as again:       # reopening migrates nothing more
        assert again.schema_version() == SCHEMA_VERSION
        again.conn.execute("UPDATE memwatch_meta SET value = ? WHERE key = 'schema_version'",
                           (str(SCHEMA_VERSION + 1),))
    with pytest.raises(OverlayError, match="newer"):
        OverlayStore(dsn)


def test_audit_report_refresh_forget_and_runs_match_sqlite(both):
    states = []
    for cfg in both:
        first = audit(config=cfg, as_of=AS_OF)
        assert first.stats[0].changed == 12
        s1 = _state(first)
        first.close()
        ref = "bot:agent_facts:2"      # "Lives in Jakarta", 700 days old: expired
        assert next(f for f in s1["facts"] if f["ref"] == ref)["label"] == "expired"
        assert maintenance.refresh(cfg, None, [ref], now=AS_OF) == 1
        report = overlay_report(cfg, as_of=AS_OF)
        s2 = _state(report)
        report.close()
        assert next(f for f in s2["facts"] if f["ref"] == ref)["label"] == "fresh"
        assert maintenance.forget(cfg, None, ["bot:agent_facts:3"], None) == 1
        again = audit(config=cfg, as_of=AS_OF)
        assert again.stats[0].changed == 0
        s3 = _state(again)
        again.close()
        assert s3["header"]["summary"]["total"] == 11
        with open_overlay(cfg, None) as store:
            runs = [{k: v for k, v in r.items() if k != "started_at"} for r in store.runs()]
        status = maintenance.source_status(cfg, None, now=AS_OF)["sources"]
        for s in status:
            for wall_clock in ("last_sync", "lag_seconds", "last_checked", "last_full_sync", "last_deletion_scan"):
                s.pop(wall_clock, None)
            if isinstance(s.get("cursor"), dict):
                s["cursor"].pop("scanned_at", None)
            s["target"] = Path(s["target"]).name
        stats = maintenance.overlay_stats(cfg, None)
        stats.pop("overlay")
        out = io.StringIO()
        with open_overlay(cfg, None) as store:         # export, then import into a fresh SQLite file
            exported = export_overlay(store, out)
        with OverlayStore(cfg.base_dir / "imported.db") as copy:
            imported = import_overlay(copy, out.getvalue().splitlines(keepends=True))
            copied = copy.summary()
        states.append({"audit": s1, "report": s2, "again": s3, "runs": runs, "status": status, "stats": stats,
                       "export": (exported, imported, copied)})
    sqlite_state, pg_state = states
    assert len(pg_state["runs"]) == 2
    exported, imported, copied = sqlite_state["export"]
    assert exported == imported and exported["fact"] == 12 and copied == sqlite_state["again"]["header"]["summary"]
    for key in sqlite_state:
        if pg_state[key] != sqlite_state[key] and isinstance(pg_state[key], dict):
            for sub in pg_state[key]:
                assert pg_state[key][sub] == sqlite_state[key][sub], (key, sub)
        assert pg_state[key] == sqlite_state[key], key


def test_deleted_rows_are_marked_and_pruned_alike(both):
    import sqlite3
    summaries = []
    for cfg in both:
        audit(config=cfg, as_of=AS_OF).close()
        with sqlite3.connect(cfg.sources[0].resolved_path) as conn:
            conn.execute("DELETE FROM agent_facts WHERE id = 3")
        result = audit(config=cfg, as_of=AS_OF)
        assert {f["ref"]: f["status"] for f in result.iter_facts()}["bot:agent_facts:3"] == "deleted"
        summary = result.summary
        result.close()
        pruned = maintenance.gc(cfg, None, retention_days=0, now=AS_OF + 10 ** 9)
        pruned.pop("overlay")
        with open_overlay(cfg, None) as store:
            after = store.summary()
        summaries.append((summary, pruned, after))
    assert summaries[0] == summaries[1]
    assert summaries[0][0]["deleted"] == 1 and summaries[0][1]["facts_pruned"] == 1
    assert summaries[0][2]["deleted"] == 0 and summaries[0][2]["total"] == 11


@pytest.mark.slow
@pytest.mark.parametrize("framework,file", FIXTURES, ids=[f"{n}/{s}" for n, s in FIXTURES])
def test_console_script_audits_fixture_stores_alike(framework, file, agent_store, pg_overlay, tmp_path):
    """`audit <store> --overlay <file|dsn> --format json`: same JSON from both overlays."""
    assert SCRIPT, "the memwatch-overlay console script is not installed in this environment"
    folder = agent_store(framework)
    as_of = json.loads((folder / "manifest.json").read_text())["reference_time"]
    outputs = []
    for overlay in (str(tmp_path / "overlay.db"), pg_overlay()):
        proc = subprocess.run([SCRIPT, "audit", str(folder / file), "--format", "json",
                               "--as-of", as_of, "--overlay", overlay], capture_output=True, text=True, timeout=180)
        assert proc.returncode in (0, 1), proc.stderr
        doc = json.loads(proc.stdout)
        for fact in doc["facts"]:
            fact.pop("first_seen", None)
            fact["contradicted_by"] = sorted(fact["contradicted_by"])
        doc["facts"].sort(key=lambda f: f["ref"])
        outputs.append(doc)
    assert outputs[0]["summary"]["total"] > 0
    assert outputs[1] == outputs[0]


def test_errors_never_show_the_password(pg_server_dsn):
    from psycopg import conninfo

    from conftest import pg_url
    params = {**conninfo.conninfo_to_dict(pg_server_dsn), "password": "s3cret-pw"}
    dsn = pg_url(params, "memwatch_no_such_db_" + uuid.uuid4().hex[:6])
    with pytest.raises(OverlayError) as info:
        OverlayStore(dsn)
    assert "s3cret-pw" not in str(info.value) and "***" in str(info.value)


def test_cli_error_on_unreachable_overlay_is_one_line(tmp_path):
    assert SCRIPT
    shutil.copy(ROOT / "examples" / "my_agent.db", tmp_path / "my_agent.db")
    proc = subprocess.run([SCRIPT, "audit", str(tmp_path / "my_agent.db"), "--overlay",
                           "postgresql://memwatch:hunter2@127.0.0.1:1/nowhere"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: ") and proc.stderr.count("\n") <= 2
    assert "hunter2" not in proc.stderr and "Traceback" not in proc.stderr


WRITEBACK = """
[[actions]]
when = "expired"
do = "set"
set = { expires_at = "now", note = "memwatch: {label}" }

[[actions]]
when = "expired"
do = "annotate"
"""


def test_writeback_annotations_and_undo_alike(tmp_path, pg_overlay):
    """Plan/apply/undo keep their log in the overlay; annotations come back through the fact SELECT."""
    from wb_support import TYPED_SOURCE, make_typed_store, snapshot

    from memwatch_overlay.overlay.store.actions import ActionLog
    from memwatch_overlay.overlay.writeback.apply import apply_plan
    from memwatch_overlay.overlay.writeback.plan import plan_actions
    from memwatch_overlay.overlay.writeback.undo import undo_actions

    outcomes = []
    for name, overlay in (("sqlite", 'path = ".memwatch/overlay.db"'), ("pg", f'dsn = "{pg_overlay()}"')):
        folder = tmp_path / name
        folder.mkdir()
        make_typed_store(folder / "facts.db")
        original = snapshot(folder / "facts.db", "facts")
        (folder / "memwatch.toml").write_text(f"[overlay]\n{overlay}\n" + TYPED_SOURCE + WRITEBACK)
        cfg = load_config(folder / "memwatch.toml")
        plan = plan_actions(cfg, AS_OF, now=AS_OF)
        result = apply_plan(plan)
        assert result.applied and not result.skipped
        report = overlay_report(cfg, as_of=AS_OF)
        annotated = {f["ref"]: [a["label"] for a in f["annotations"]] for f in report.iter_facts() if f["annotations"]}
        report.close()
        with open_overlay(cfg, None) as store:
            logged = [(a.kind, a.ref, a.state) for a in ActionLog(store).history(limit=50)]
        undone = undo_actions(cfg, ids=[i for i, _ in result.applied])
        assert snapshot(folder / "facts.db", "facts") == original
        outcomes.append({"written": sorted(c.ref for c in plan.writes), "annotated": annotated,
                         "logged": sorted(logged), "restored": len(undone.restored)})
    assert outcomes[0]["annotated"] and outcomes[0]["written"]
    assert outcomes[1] == outcomes[0]


def test_api_search_check_and_export_import_alike(tmp_path, pg_overlay):
    from memwatch_overlay.overlay.api import MemWatch
    from memwatch_overlay.overlay.store.backup import export_overlay, import_overlay
    from memwatch_overlay.overlay.engine.check import check_text
    from memwatch_overlay.overlay.engine.search import run_search
    import io

    results = []
    for db, copy_db in ((str(tmp_path / "api.db"), str(tmp_path / "copy.db")), (pg_overlay(), pg_overlay())):
        clock = iter(AS_OF + 3600 * i for i in range(100))
        with MemWatch(db=db, subject="u1", clock=lambda: next(clock)) as mw:
            mw.add("employer", "works at Google")
            mw.add("city", "lives in Jakarta")
            mw.add("employer", "works at Anthropic")
            mw.refresh("city")
            got = {k: (m.value, m.label) for k in ("employer", "city") for m in [mw.get(k)]}
            assert mw.forget("city") is True and mw.get("city") is None
        hits = [(h.fact["ref"], round(h.relevance, 6)) for h in run_search(None, db, "Anthropic", as_of=AS_OF)]
        checked = check_text("I work at Microsoft now", None, overlay_path=db, subject="u1", as_of=AS_OF)
        out = io.StringIO()
        with OverlayStore(db) as store:
            counts = export_overlay(store, out)
        with OverlayStore(copy_db) as copy:
            imported = import_overlay(copy, io.StringIO(out.getvalue()).readlines())
            copy_summary = copy.summary()
        results.append({"got": got, "hits": hits, "check": (checked.compared, checked.contradictions, checked.stale),
                        "counts": counts, "imported": imported, "copy_summary": copy_summary})
    assert results[0]["hits"] and results[0]["counts"]
    assert results[1] == results[0]


def test_fact_rows_stream_through_a_server_side_cursor(both):
    """The audit's facts come from the server a batch at a time, not all at once."""
    _, cfg = both
    result = audit(config=cfg, as_of=AS_OF)
    try:
        rows = result.store.iter_fact_rows(result.source_ids)
        first = next(rows)
        open_cursors = result.store.conn.execute("SELECT name FROM pg_cursors").fetchall()
        assert [c[0] for c in open_cursors if c[0].startswith("memwatch_stream_")]
        assert 1 + sum(1 for _ in rows) == 12 and first["ref"].startswith("bot:")
        assert not result.store.conn.execute("SELECT name FROM pg_cursors").fetchall()   # closed at the end
    finally:
        result.close()


def test_rescore_streams_score_inputs_through_a_server_side_cursor(both):
    """A rescore of a Postgres overlay reads its facts a batch at a time (a server-side
    cursor), not the whole table into this process, and still scores every live fact."""
    _, cfg = both
    result = audit(config=cfg, as_of=AS_OF)
    try:
        store, engine = result.store, result.engine
        later = AS_OF + 30 * 86400.0
        seen_cursors, calls = [], []

        real_score_row = engine.score_row

        def score_row(row, as_of):
            if not calls:
                seen_cursors.extend(c[0] for c in store.conn.execute("SELECT name FROM pg_cursors").fetchall())
            calls.append(row["id"])
            return real_score_row(row, as_of)
        engine.score_row = score_row       # the engine scores the pages the store streams
        live = store.count_live(result.source_ids[0])
        assert engine.rescore(later, batch=5) == live == len(set(calls)) > 5
        assert [c for c in seen_cursors if c.startswith("memwatch_stream_")]
        assert not store.conn.execute("SELECT name FROM pg_cursors").fetchall()
        assert store.conn.execute("SELECT count(*) FROM facts WHERE status IN ('active', 'contradicted') "
                                  "AND scored_as_of = ?", (later,)).fetchone()[0] == live
    finally:
        result.close()


def test_mcp_health_reports_the_postgres_schema(both):
    from memwatch_overlay.overlay.mcp_server import OverlayTools
    _, cfg = both
    audit(config=cfg, as_of=AS_OF).close()
    health = OverlayTools(cfg).health()
    assert health["ok"] is True and health["schema_version"] == SCHEMA_VERSION
    assert health["overlay"] == cfg.overlay_dsn and health["integrity"] == "ok"


class _CountingEmbedder:
    """A deterministic stand-in for the sentence-transformers embedder: the storage of
    vectors (bytea on Postgres, BLOB on SQLite) is what is under test, not the model."""

    def __init__(self, model_name: str):
        import numpy as np
        self.np, self.model_name, self.encoded, self.memory = np, model_name, 0, {}

    def embed(self, texts):
        self.encoded += len(texts)
        return self.np.array([[len(t), sum(map(ord, t)) % 97, 1.5] for t in texts], dtype="float32")

    def remember(self, text, vector):
        self.memory[text] = vector


@pytest.mark.embeddings
def test_fact_vectors_round_trip_alike(both):
    pytest.importorskip("numpy", reason="numpy comes with the [embeddings] extra")
    from memwatch_overlay.overlay.detect.embeddings import VectorCache
    outcomes = []
    for cfg in both:
        audit(config=cfg, as_of=AS_OF).close()
        with open_overlay(cfg, None) as store:
            facts = [(r["id"], r["text"]) for r in store.find_facts()]
            cache = VectorCache(store)
            first = _CountingEmbedder("m1")
            assert cache.ensure(first, facts) == len(facts)
            again = _CountingEmbedder("m1")
            assert cache.ensure(again, facts) == 0               # read back from the overlay
            remembered = {t: v.tolist() for t, v in again.memory.items()}
            assert cache.reembed_stale(_CountingEmbedder("m2")) == len(facts)
            outcomes.append((remembered, cache.models(), cache.stale("m1")))
    assert outcomes[0][0] and outcomes[0][1] == {"m2": 12} and len(outcomes[0][2]) == 12   # stale("m1"): every vector is m2 now
    assert outcomes[1] == outcomes[0]


def test_daemons_opening_a_new_overlay_together_migrate_it_once(pg_overlay):
    from concurrent.futures import ThreadPoolExecutor
    dsn = pg_overlay()

    def open_close(_):
        with OverlayStore(dsn) as store:
            return store.schema_version()
    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(open_close, range(6))) == [SCHEMA_VERSION] * 6
    with OverlayStore(dsn) as store:
        assert store.conn.execute("SELECT count(*) FROM memwatch_meta").fetchone()[0] == 1


def test_the_api_never_stores_the_overlay_password(pg_server_dsn):
    """Facts added through the API on a password-protected Postgres overlay: the native
    source's target (shown by `status`) is the redacted DSN."""
    import psycopg
    from psycopg import conninfo, sql

    from conftest import pg_url
    from memwatch_overlay.overlay.api import MemWatch
    role, name = f"mw_{uuid.uuid4().hex[:8]}", f"memwatch_pw_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'pw-hidden-1'").format(sql.Identifier(role)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(role)))
    try:
        dsn = pg_url({**conninfo.conninfo_to_dict(pg_server_dsn), "user": role, "password": "pw-hidden-1"}, name)
        with MemWatch(db=dsn) as mw:
            mw.add("employer", "works at Google")
        status = maintenance.source_status(None, dsn)
        assert status["sources"] and "pw-hidden-1" not in json.dumps(status)
        stats = maintenance.overlay_stats(None, dsn)
        assert "pw-hidden-1" not in json.dumps(stats) and stats["summary"]["total"] == 1
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_an_edge_stored_again_is_not_new_and_takes_the_new_evidence(tmp_path, pg_overlay):
    """add_contradiction says whether the pair was new (a sync counts only new edges), and a
    pair stored again keeps one row with the later kind, confidence, evidence and update, on
    both backends."""
    for target in (str(tmp_path / "o.db"), pg_overlay()):
        audit(str(ROOT / "examples" / "my_agent.db"), None, as_of=AS_OF, overlay_path=target).close()
        with OverlayStore(target) as store:
            older, newer = [r[0] for r in store.conn.execute("SELECT id FROM facts ORDER BY id LIMIT 2")]
            with store.transaction():
                store.conn.execute("DELETE FROM contradictions WHERE older_id = ? AND newer_id = ?", (older, newer))
                assert store.add_contradiction(older, newer, "value", 0.5, "first", None, 1.0) is True
                assert store.add_contradiction(older, newer, "cue", 0.9, "second", {"action": "EXPIRE"}, 2.0) is False
            assert [tuple(r) for r in store.conn.execute(
                "SELECT kind, confidence, evidence, update_json, detected_at FROM contradictions "
                "WHERE older_id = ? AND newer_id = ?", (older, newer))] == [
                ("cue", 0.9, "second", '{"action": "EXPIRE"}', 1.0)], target
