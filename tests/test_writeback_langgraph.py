"""End to end on the LangGraph fixture, through the console script and LangGraph's own code.

`plan` shows the expiry write-back without touching the store; `plan --apply` writes
`expires_at` in LangGraph's own text format; LangGraph's SqliteStore.sweep_ttl() then
deletes exactly those items (plus the ones whose own TTL has run out by now); `undo`
puts every row back exactly, types included. Annotations land in the overlay and in the
audit JSON.
"""
from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest
from langgraph.store.sqlite import SqliteStore

from memwatch_overlay.core.timeparse import parse_timestamp
from wb_support import LANGGRAPH_REFERENCE, copy_langgraph, file_digest, run_cli, snapshot, write_config

LANGGRAPH_FORMAT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}\+00:00")
CONFIG = """
[[sources]]
name = "lg"
connector = "sqlite"
path = "langgraph_store.sqlite"
preset = "langgraph"

[[actions]]
when = "expired"
do = "expire"            # the preset's natural write-back: expires_at = now

[[actions]]
when = "expired"
do = "annotate"
set = { note = "expired at {as_of}" }

[[actions]]
when = "stale"
do = "annotate"
set = { note = "stale: {freshness:.2f}" }

[[actions]]
when = "aging"
do = "annotate"
"""


def _key(ref: str) -> tuple[str, str]:
    _, _, prefix, key = ref.split(":", 3)
    return prefix, key


def _wait_for_next_second() -> None:
    """LangGraph compares expires_at with CURRENT_TIMESTAMP, which has whole seconds."""
    time.sleep(1.05 - (time.time() % 1.0))


@pytest.fixture
def lg(tmp_path):
    db = copy_langgraph(tmp_path)
    cfg = write_config(tmp_path, CONFIG)
    return tmp_path, db, cfg


def _apply(tmp_path, cfg) -> dict:
    proc = run_cli("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--apply", "--format", "json",
                   cwd=tmp_path, check=True)
    return json.loads(proc.stdout)


def test_plan_apply_sweep_undo(lg):
    tmp_path, db, cfg = lg
    original = snapshot(db)
    digest = file_digest(db)

    # 1. plan: nothing written, the expiry candidates match what audit calls expired
    proc = run_cli("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--format", "json", cwd=tmp_path,
                   check=True)
    planned = json.loads(proc.stdout)
    assert file_digest(db) == digest and planned["applied"] is None
    audit = json.loads(run_cli("audit", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--format", "json",
                               "--overlay", tmp_path / "audit-overlay.db", cwd=tmp_path).stdout)
    now = time.time()
    expired = {f["ref"] for f in audit["facts"] if f["label"] == "expired" and f["status"] != "deleted"}
    already = {f["ref"] for f in audit["facts"] if f["expires_at"] and f["label"] == "expired"
               and parse_timestamp(f["expires_at"]) < now}     # LangGraph's own TTL already ran out
    assert expired and already                    # the fixture has both kinds
    # every item whose own TTL has run out by now, wall-clock: the sweeper removes these too,
    # including the ones that were still live at the reference time (the fixture ages)
    ran_out = {f["ref"] for f in audit["facts"] if f["expires_at"] and f["status"] != "deleted"
               and parse_timestamp(f["expires_at"]) < now}
    assert already <= ran_out and not ran_out & (expired - already)
    assert {c["ref"] for c in planned["changes"]} == expired - already
    assert all(set(c["set"]) == {"expires_at"} and c["set"]["expires_at"]["old"] is None
               for c in planned["changes"])

    # 2. apply through the console script
    result = _apply(tmp_path, cfg)
    applied = {a["ref"]: a for a in result["applied"]["applied"]}
    assert set(applied) == expired - already
    assert not result["applied"]["skipped"]
    now_rows = snapshot(db)
    for ref in applied:
        row = now_rows[_key(ref)]
        assert row["expires_at"][0] == "text" and LANGGRAPH_FORMAT.fullmatch(row["expires_at"][1])
        assert {c: v for c, v in row.items() if c != "expires_at"} == \
            {c: v for c, v in original[_key(ref)].items() if c != "expires_at"}
    annotated = {a["ref"] for a in result["applied"]["annotated"]}
    non_fresh = {f["ref"] for f in audit["facts"] if f["label"] in ("aging", "stale", "expired")
                 and f["status"] != "deleted"}
    assert annotated == non_fresh

    # 3. LangGraph's own sweeper now removes exactly those items (and the one whose TTL ran out)
    _wait_for_next_second()
    with SqliteStore.from_conn_string(str(db)) as store:
        for ref in applied:
            prefix, key = _key(ref)
            assert store.get(tuple(prefix.split(".")), key) is not None
        swept = store.sweep_ttl()
        assert swept == len(applied) + len(ran_out)
        for ref in applied:
            prefix, key = _key(ref)
            assert store.get(tuple(prefix.split(".")), key) is None
    assert set(snapshot(db)) == set(original) - {_key(r) for r in applied} - {_key(r) for r in ran_out}

    # 4. undo puts the rows back exactly (re-inserted: the sweeper had deleted them)
    undo = run_cli("undo", "--since", result["applied"]["run_at"], "--config", cfg, "--format", "json",
                   cwd=tmp_path, check=True)
    undone = json.loads(undo.stdout)
    assert {r["ref"] for r in undone["restored"] if r["kind"] == "set"} == set(applied)
    assert not undone["skipped"]
    restored = snapshot(db)
    assert restored == {k: v for k, v in original.items() if k not in {_key(r) for r in ran_out}}
    with SqliteStore.from_conn_string(str(db)) as store:
        prefix, key = _key(next(iter(applied)))
        item = store.get(tuple(prefix.split(".")), key)
        assert item is not None and "memory" in item.value


def test_undo_by_id_before_any_sweep_restores_the_store_byte_for_byte_in_content(lg):
    tmp_path, db, cfg = lg
    original = snapshot(db)
    result = _apply(tmp_path, cfg)
    ids = [str(a["action_id"]) for a in result["applied"]["applied"]]
    assert ids
    assert snapshot(db) != original
    run_cli("undo", *ids, "--config", cfg, cwd=tmp_path, check=True)
    assert snapshot(db) == original
    with sqlite3.connect(db) as conn:        # LangGraph's value blobs stay blobs
        assert {r[0] for r in conn.execute("SELECT DISTINCT typeof(value) FROM store")} == {"blob"}


def test_annotations_appear_in_audit_json_and_history(lg):
    tmp_path, db, cfg = lg
    _apply(tmp_path, cfg)
    audit = json.loads(run_cli("audit", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--format", "json",
                               cwd=tmp_path).stdout)
    by_label = {}
    for fact in audit["facts"]:
        by_label.setdefault(fact["label"], []).append(fact)
    for fact in by_label["stale"]:
        notes = [a["values"].get("note", "") for a in fact["annotations"]]
        assert any(n.startswith("stale: 0.") for n in notes)
    for fact in by_label["fresh"]:
        assert fact["annotations"] == []
    history = json.loads(run_cli("history", "--config", cfg, "--format", "json", "--limit", "500",
                                 cwd=tmp_path, check=True).stdout)
    kinds = {a["kind"] for a in history["actions"]}
    assert kinds == {"set", "annotate"}


def test_plan_errors_are_one_line_with_exit_2(lg):
    tmp_path, db, cfg = lg
    bad = write_config(tmp_path, CONFIG + '\n[[actions]]\nwhen = "stale"\ndo = "set"\nset = { "x\\"; DROP TABLE store; --" = 1 }\n',
                       "bad.toml")
    digest = file_digest(db)
    proc = run_cli("plan", "--config", bad, "--apply", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: ") and len(proc.stderr.strip().splitlines()) == 1
    assert 'actions[4].set.x"; DROP TABLE store; --' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert file_digest(db) == digest
    proc = run_cli("undo", "--config", cfg, cwd=tmp_path)
    assert proc.returncode == 2 and "ACTION_ID" in proc.stderr


def test_table_output_of_plan_apply_and_undo(lg):
    tmp_path, db, cfg = lg
    digest = file_digest(db)
    shown = run_cli("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, cwd=tmp_path, check=True).stdout
    assert "would change" in shown and "expires_at" in shown and "run with --apply" in shown
    assert file_digest(db) == digest
    applied = run_cli("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--apply", cwd=tmp_path,
                      check=True).stdout
    assert re.search(r"applied \d+ write\(s\)", applied)
    assert file_digest(db) != digest
    since = re.search(r"undo --since (\S+)`", applied.replace("\n", "")).group(1)
    undone = run_cli("undo", "--since", since, "--config", cfg, cwd=tmp_path, check=True).stdout
    assert "0 skipped" in undone and "re-inserted" not in undone


def test_contradicted_facts_are_planned_as_audit_finds_them(lg):
    tmp_path, db, cfg = lg
    contra = write_config(tmp_path, CONFIG.split("[[actions]]")[0]
                          + '[[actions]]\nwhen = "contradicted"\ndo = "annotate"\nset = { by = "{label}" }\n',
                          "contra.toml")
    planned = json.loads(run_cli("plan", "--config", contra, "--as-of", LANGGRAPH_REFERENCE, "--format", "json",
                                 cwd=tmp_path, check=True).stdout)
    audit = json.loads(run_cli("audit", "--config", contra, "--as-of", LANGGRAPH_REFERENCE, "--format", "json",
                               "--overlay", tmp_path / "other.db", cwd=tmp_path).stdout)
    contradicted = {f["ref"] for f in audit["facts"] if f["status"] == "contradicted"}
    assert contradicted                       # the fixture plants newer facts that outdate older ones
    assert {a["ref"] for a in planned["annotations"]} == contradicted
