"""The daemon's hook: annotations every tick, source writes only with `apply = true`."""
from __future__ import annotations

from memwatch_overlay.overlay.store import OverlayStore
from memwatch_overlay.overlay.sync import SyncEngine
from memwatch_overlay.overlay.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback import after_sync
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, TYPED_SOURCE, file_digest, make_typed_store, snapshot, write_config

ACTIONS = """
[[actions]]
when = "expired"
do = "set"
set = { expires_at = "now" }

[[actions]]
when = "fresh"
do = "annotate"
"""


def _tick(cfg, as_of):
    with OverlayStore(cfg.resolved_overlay_path()) as store:
        source = cfg.sources[0]
        SyncEngine(store, cfg).sync(source, as_of=as_of, full=False)
        return after_sync(store, cfg, source, as_of)


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
    cfg = load_config(write_config(tmp_path, TYPED_SOURCE.replace('name = "bot"', 'name = "bot"\napply = true')
                                   + ACTIONS))
    as_of = parse_as_of(AS_OF)
    first = _tick(cfg, as_of)
    assert len(first.applied) == 3 and not first.held
    after_first = snapshot(db, "facts")
    second = _tick(cfg, as_of)                 # next tick: sees our own write, plans nothing new
    assert not second.applied and not second.annotated and not second.skipped
    assert snapshot(db, "facts") == after_first


def test_hook_is_a_no_op_without_actions(tmp_path):
    make_typed_store(tmp_path / "facts.db")
    cfg = load_config(write_config(tmp_path, TYPED_SOURCE))
    assert _tick(cfg, parse_as_of(AS_OF)) is None
