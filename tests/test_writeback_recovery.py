"""A write-back process killed mid-apply leaves nothing unaccounted for.

Each write is logged `pending` in the overlay before the source commits. A real subprocess
is killed (os._exit) either just before the source commit or just after it; the next
apply/undo settles the pending entries by looking at the rows, and undo still works.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from memwatch_overlay.overlay.store.actions import ActionLog
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, TYPED_SOURCE, make_typed_store, snapshot, write_config

CRASH = textwrap.dedent("""
    import os, sys
    from memwatch_overlay.overlay.store import actions as actionlog
    from memwatch_overlay.overlay.writeback.apply import apply_plan
    from memwatch_overlay.overlay.writeback.plan import plan_actions
    from memwatch_overlay.core.timeparse import parse_as_of
    from memwatch_overlay.rules.config import load_config

    config, mode, as_of = sys.argv[1:4]
    add, set_state = actionlog.ActionLog.add, actionlog.ActionLog.set_state

    def crash_after_pending(self, entries, state):
        ids = add(self, entries, state)
        if state == "pending":
            os._exit(3)          # inside the source transaction, before COMMIT
        return ids

    def crash_before_marking(self, ids, state, note=None):
        if state == "applied":
            os._exit(3)          # the source has committed; the overlay still says pending
        return set_state(self, ids, state, note)

    if mode == "before-commit":
        actionlog.ActionLog.add = crash_after_pending
    else:
        actionlog.ActionLog.set_state = crash_before_marking
    cfg = load_config(config)
    apply_plan(plan_actions(cfg, parse_as_of(as_of)))
""")
ACTION = '\n[[actions]]\nwhen = "expired"\ndo = "set"\nset = { note = "expired", flag = 7 }\n'


@pytest.mark.parametrize("mode", ["before-commit", "after-commit"])
def test_killed_apply_is_settled_and_undoable(tmp_path, mode):
    db = tmp_path / "facts.db"
    make_typed_store(db)
    cfg_path = write_config(tmp_path, TYPED_SOURCE + ACTION)
    original = snapshot(db, "facts")
    proc = subprocess.run([sys.executable, "-c", CRASH, str(cfg_path), mode, AS_OF],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    cfg = load_config(cfg_path)
    with OverlayStore(cfg.resolved_overlay_path()) as store:
        assert len(ActionLog(store).pending()) == 3

    result = undo_actions(cfg, since=0.0)        # settles pending entries first
    with OverlayStore(cfg.resolved_overlay_path()) as store:
        log = ActionLog(store)
        states = {a.state for a in log.history(100)}
        assert not log.pending()
    if mode == "before-commit":
        assert states == {"failed"}               # the source rolled back: nothing to undo
        assert result.restored == []
    else:
        assert states == {"applied"}
        assert len(result.restored) == 3
    assert snapshot(db, "facts") == original
