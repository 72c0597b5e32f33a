"""Write-back after a crash and against a bot that deletes rows (issue 16 points 11, 12).

The crash is a real SIGKILL of the real console script at the worst moment: after the
source committed our write, before the overlay recorded it as applied (a sitecustomize
module on PYTHONPATH kills the process there).
"""
from __future__ import annotations

import json
import os
import sqlite3
import textwrap
import time

from wb_support import LANGGRAPH_REFERENCE, copy_langgraph, run_cli, snapshot, write_config
from hostile import run

CONFIG = """
[[sources]]
name = "lg"
connector = "sqlite"
path = "langgraph_store.sqlite"
preset = "langgraph"

[[actions]]
when = "expired"
do = "expire"
"""

KILL_HOOK = """
import os, signal
if os.environ.get("MW_TEST_KILL_AT_APPLIED"):
    from memwatch_overlay.overlay.store import actions as _actions
    _set_state = _actions.ActionLog.set_state

    def set_state(self, ids, state, *args, **kwargs):
        if state == _actions.APPLIED and not kwargs.get("note"):
            os.kill(os.getpid(), signal.SIGKILL)     # the source has committed; the log says pending
        return _set_state(self, ids, state, *args, **kwargs)

    _actions.ActionLog.set_state = set_state
"""


def actions(tmp_path) -> list[tuple]:
    conn = sqlite3.connect(tmp_path / ".memwatch" / "overlay.db")
    try:
        return conn.execute("SELECT id, ref, kind, state FROM actions WHERE kind <> 'annotate' ORDER BY id").fetchall()
    finally:
        conn.close()


def expiries(db) -> dict:
    return {k: v["expires_at"] for k, v in snapshot(db).items()}


def test_apply_after_kill_9_settles_pending_once_and_never_moves_an_expiry(tmp_path):
    db = copy_langgraph(tmp_path)
    cfg = write_config(tmp_path, CONFIG)
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text(textwrap.dedent(KILL_HOOK))
    env = {"PYTHONPATH": str(tmp_path / "hook"), "MW_TEST_KILL_AT_APPLIED": "1"}
    killed = run("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--apply", cwd=tmp_path, env=env)
    assert killed.returncode == -9, (killed.returncode, killed.stderr)
    pending = actions(tmp_path)
    assert pending and all(state == "pending" for *_, state in pending)
    written = expiries(db)
    time.sleep(1.1)                  # a second apply's "now" is later than the first one's
    for _ in range(2):
        proc = run("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--apply", "--format", "json",
                   cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    rows = actions(tmp_path)
    per_ref: dict[str, list[str]] = {}
    for _, ref, _, state in rows:
        per_ref.setdefault(ref, []).append(state)
    assert all(states == ["applied"] for states in per_ref.values()), per_ref
    assert expiries(db) == written, "no expiry moved later"


def test_undo_does_not_recreate_a_row_the_user_deleted_before_its_expiry(tmp_path):
    db = copy_langgraph(tmp_path)
    # an expiry a month ahead of the real clock: a deletion now cannot be LangGraph's sweeper
    conf = CONFIG.replace('do = "expire"', 'do = "set"\nset = { expires_at = "{as_of}" }')
    cfg = write_config(tmp_path, conf)
    ahead = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 30 * 86400))
    proc = run_cli("plan", "--config", cfg, "--as-of", ahead, "--apply", "--format", "json",
                   cwd=tmp_path, check=True)
    applied = json.loads(proc.stdout)["applied"]["applied"]
    assert applied
    first = applied[0]
    conn = sqlite3.connect(db)                 # the user says "forget that": the bot deletes the row
    prefix, key = first["ref"].split(":", 3)[2:]
    conn.execute("DELETE FROM store WHERE prefix = ? AND key = ?", (prefix, key))
    conn.commit()
    conn.close()
    proc = run_cli("undo", str(first["action_id"]), "--config", cfg, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["restored"] == []
    assert "not by the store's sweeper" in out["skipped"][0]["reason"]
    assert (prefix, key) not in snapshot(db)


def test_undo_recreates_a_row_the_sweeper_removed_after_our_expiry(tmp_path):
    db = copy_langgraph(tmp_path)
    cfg = write_config(tmp_path, CONFIG)
    proc = run_cli("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--apply", "--format", "json",
                   cwd=tmp_path, check=True)
    first = json.loads(proc.stdout)["applied"]["applied"][0]
    prefix, key = first["ref"].split(":", 3)[2:]
    time.sleep(1.1)
    conn = sqlite3.connect(db)                 # LangGraph's sweeper rule
    conn.execute("DELETE FROM store WHERE expires_at IS NOT NULL AND expires_at < CURRENT_TIMESTAMP")
    conn.commit()
    conn.close()
    proc = run_cli("undo", str(first["action_id"]), "--config", cfg, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["restored"], proc.stdout
    assert (prefix, key) in snapshot(db)


def test_apply_waits_out_a_bot_holding_its_rollback_journal_lock(tmp_path):
    """The bot holds its write lock (RESERVED: readers go on) for longer than the writer's
    5 s busy timeout: the batch is retried with backoff and written, instead of giving up
    with nothing written."""
    import subprocess
    import sys
    db = copy_langgraph(tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    cfg = write_config(tmp_path, CONFIG)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        conn = sqlite3.connect({str(db)!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE store SET key = key WHERE rowid = 1")
        print("locked", flush=True)
        time.sleep(12)
        conn.execute("COMMIT")
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        proc = run("plan", "--config", cfg, "--as-of", LANGGRAPH_REFERENCE, "--apply", "--format", "json",
                   cwd=tmp_path)
    finally:
        holder.wait(30)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["applied"]
    assert result["applied"] and not result["skipped"], result["skipped"]
