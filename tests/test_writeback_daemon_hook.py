"""The daemon's hook: annotations every tick, source writes only with `apply = true`,
and an incremental tick plans only what that sync changed."""
from __future__ import annotations

import sqlite3
from types import SimpleNamespace

from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.daemon_hook import after_sync, writeback_hook
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, OLD, TYPED_SOURCE, file_digest, make_typed_store, snapshot, write_config

ACTIONS = """
[[actions]]
when = "expired"
do = "set"
set = { expires_at = "now" }

[[actions]]
when = "fresh"
do = "annotate"
"""
WITH_APPLY = TYPED_SOURCE.replace('name = "bot"', 'name = "bot"\napply = true')


def _tick(cfg, as_of, full=True):
    with OverlayStore(cfg.resolved_overlay_path()) as store:
        source = cfg.sources[0]
        SyncEngine(store, cfg).sync(source, as_of=as_of, full=full)
        return after_sync(store, cfg, source, as_of, changed_only=not full)


def test_without_apply_the_source_is_not_touched(tmp_path):
    make_typed_store(tmp_path / "facts.db")
    cfg = load_config(write_config(tmp_path, TYPED_SOURCE + ACTIONS))
    digest = file_digest(tmp_path / "facts.db")
    result = _tick(cfg, parse_as_of(AS_OF))
    assert len(result.held) == 3 and not result.applied
    assert len(result.annotated) == 3
    assert file_digest(tmp_path / "facts.db") == digest


def test_with_apply_the_daemon_writes_once(tmp_path):
    db = tmp_path / "facts.db"
    make_typed_store(db)
    cfg = load_config(write_config(tmp_path, WITH_APPLY + ACTIONS))
    as_of = parse_as_of(AS_OF)
    first = _tick(cfg, as_of)
    assert len(first.applied) == 3 and not first.held
    after_first = snapshot(db, "facts")
    second = _tick(cfg, as_of)                 # next full tick: sees our own write, plans nothing new
    assert not second.applied and not second.annotated and not second.skipped
    assert snapshot(db, "facts") == after_first


def test_an_incremental_tick_plans_only_what_changed(tmp_path):
    db = tmp_path / "facts.db"
    make_typed_store(db)
    cfg = load_config(write_config(tmp_path, WITH_APPLY + ACTIONS))
    as_of = parse_as_of(AS_OF)
    with OverlayStore(cfg.resolved_overlay_path()) as store:   # first full sync, no hook yet
        SyncEngine(store, cfg).sync(cfg.sources[0], as_of=as_of, full=True)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO facts (id, fact, created_at) VALUES (100, 'a new old fact', ?)", (OLD,))
    result = _tick(cfg, as_of, full=False)
    assert [c.pk["id"] for _, c in result.applied] == ["100"]   # rows 1, 3, 5 wait for a full pass
    assert result.annotated == []
    full = _tick(cfg, as_of, full=True)
    assert sorted(c.pk["id"] for _, c in full.applied) == ["1", "3", "5"]


def test_hook_runs_every_source_after_a_rescore_and_skips_deletion_passes(tmp_path):
    make_typed_store(tmp_path / "facts.db")
    cfg = load_config(write_config(tmp_path, WITH_APPLY + ACTIONS))
    hook = writeback_hook(cfg)
    with OverlayStore(cfg.resolved_overlay_path()) as store:
        SyncEngine(store, cfg).sync(cfg.sources[0], as_of=parse_as_of(AS_OF), full=True)
        before = file_digest(tmp_path / "facts.db")
        original = snapshot(tmp_path / "facts.db", "facts")
        hook(SimpleNamespace(kind="deletions", source=cfg.sources[0], store=store))
        assert file_digest(tmp_path / "facts.db") == before
        hook(SimpleNamespace(kind="rescore", source=None, store=store))
        rows = snapshot(tmp_path / "facts.db", "facts")
    assert {k for k in rows if rows[k] != original[k]} == {(1,), (3,), (5,)}
    assert all(rows[(i,)]["expires_at"][1] != original[(i,)]["expires_at"][1] for i in (1, 3, 5))


def test_hook_is_a_no_op_without_actions(tmp_path):
    make_typed_store(tmp_path / "facts.db")
    cfg = load_config(write_config(tmp_path, TYPED_SOURCE))
    assert _tick(cfg, parse_as_of(AS_OF)) is None
