"""Presets' natural write-backs (`do = "expire"`) on copies of the mem0 and memlife fixtures."""
from __future__ import annotations

import shutil

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config
from wb_support import HERE, snapshot, write_config

STORES = HERE / "fixtures" / "agent-stores"
REFERENCE = parse_as_of("2026-11-29T15:57:41")


def _facts(cfg) -> dict:
    result = audit(config=cfg, as_of=REFERENCE)
    try:
        return {f["ref"]: f for f in result.iter_facts()}
    finally:
        result.close()


def test_mem0_expire_marks_history_rows_deleted_and_undo_restores(tmp_path):
    shutil.copytree(STORES / "mem0", tmp_path / "mem0")
    db = tmp_path / "mem0" / "history.db"
    cfg = load_config(write_config(tmp_path, """
[[sources]]
name = "m"
connector = "sqlite"
path = "mem0/history.db"
preset = "mem0"

[[actions]]
when = "expired"
do = "expire"
"""))
    original = snapshot(db, "history")
    plan = plan_actions(cfg, REFERENCE)
    assert plan.writes and all(c.values == {"is_deleted": 1} and c.old == {"is_deleted": 0} for c in plan.writes)
    expired = {c.ref for c in plan.writes}
    result = apply_plan(plan)
    assert {c.ref for _, c in result.applied} == expired
    rows = snapshot(db, "history")
    for _, change in result.applied:
        assert rows[(change.pk["id"],)]["is_deleted"] == ("integer", 1)
    facts = _facts(cfg)                      # the preset now reads those versions as deleted
    assert all(facts[ref]["status"] == "deleted" for ref in expired)
    assert plan_actions(cfg, REFERENCE).writes == []
    undo_actions(cfg, since=result.run_at)
    assert snapshot(db, "history") == original
    assert all(_facts(cfg)[ref]["status"] != "deleted" for ref in expired)


def test_memlife_expire_retires_facts_the_way_expire_fact_does(tmp_path):
    shutil.copytree(STORES / "memlife" / "u_priya", tmp_path / "u_priya")
    db = tmp_path / "u_priya" / "memlife.db"
    cfg = load_config(write_config(tmp_path, """
[[sources]]
name = "ml"
connector = "sqlite"
path = "u_priya/memlife.db"
preset = "memlife"

[[actions]]
when = "expired"
do = "expire"
"""))
    original = snapshot(db, "facts")
    result = apply_plan(plan_actions(cfg, REFERENCE))
    assert result.applied
    rows = snapshot(db, "facts")
    for _, change in result.applied:
        assert rows[(change.pk["id"],)]["superseded_by"] == ("text", "__retired__:memwatch expired")
    facts = _facts(cfg)
    assert all(facts[c.ref]["expired_by"] == "source" for _, c in result.applied)
    assert plan_actions(cfg, REFERENCE).writes == []
    undo_actions(cfg, since=result.run_at)
    assert snapshot(db, "facts") == original
