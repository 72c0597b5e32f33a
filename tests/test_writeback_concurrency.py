"""A bot writing from another process while write-back applies: no write of either side is lost.

The bot is a real subprocess hammering the same SQLite file (counter updates, inserts, and
content rewrites of rows the plan targets) until told to stop. Afterwards every bot write
is present, every applied action's write is present, and no action was applied to a row
whose content the bot had already changed (its before-image still holds the original text).
"""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from memwatch_overlay.overlay.store.actions import ActionLog
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, OLD, write_config

ROWS = 400
REWRITTEN = range(301, 401)     # rows whose memory text the bot rewrites while we apply

BOT = textwrap.dedent("""
    import os, sqlite3, sys, time
    path, stop = sys.argv[1], sys.argv[2]
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    ops = increments = inserts = 0
    rewritten = set()
    while True:
        i = ops
        if i % 2:
            # an explicit transaction of two statements
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE items SET hits = hits + 1 WHERE id = ?", (1 + i % 400,))
            conn.execute("INSERT INTO botlog (n) VALUES (?)", (i,))
            conn.execute("COMMIT")
            increments += 1
            inserts += 1
        elif i % 3 == 0 and len(rewritten) < 100:
            row = 301 + len(rewritten)
            conn.execute("UPDATE items SET fact = ? WHERE id = ?", (f"bot rewrote {row}", row))
            rewritten.add(row)
        else:
            conn.execute("INSERT INTO botlog (n) VALUES (?)", (i,))   # autocommit statement
            inserts += 1
        ops += 1
        time.sleep(0.001)        # a busy bot, not a lock-hogging loop (SQLite's busy wait is not fair)
        if ops == 20:
            print("ready", flush=True)
        if ops >= 300 and os.path.exists(stop):
            break
    print(ops, increments, inserts, len(rewritten), flush=True)
""")


def _store(path, journal):
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, fact TEXT, at TEXT, expires_at TEXT, hits INTEGER)")
    conn.execute("CREATE TABLE botlog (id INTEGER PRIMARY KEY, n INTEGER)")
    conn.executemany("INSERT INTO items VALUES (?, ?, ?, NULL, 0)", [(i, f"fact {i}", OLD) for i in range(1, ROWS + 1)])
    conn.commit()
    conn.close()


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_concurrent_bot_loses_no_write(tmp_path, journal):
    db = tmp_path / "bot.db"
    _store(db, journal)
    cfg = load_config(write_config(tmp_path, """
[[sources]]
name = "bot"
connector = "sqlite"
path = "bot.db"
table = "items"
id = "id"
text = "fact"
created_at = "at"
expires_at = "expires_at"

[[actions]]
when = "expired"
do = "set"
set = { expires_at = "now" }
"""))
    plan = plan_actions(cfg, parse_as_of(AS_OF))
    assert len(plan.writes) == ROWS

    stop = tmp_path / "stop"
    script = tmp_path / "bot.py"
    script.write_text(BOT)
    bot = subprocess.Popen([sys.executable, str(script), str(db), str(stop)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert bot.stdout.readline().strip() == "ready"
        result = apply_plan(plan, batch_size=10)
    finally:
        stop.touch()
        out, err = bot.communicate(timeout=120)
    assert bot.returncode == 0, err
    ops, increments, inserts, rewrites = map(int, out.split())
    assert ops >= 300 and rewrites > 0

    with sqlite3.connect(db) as conn:
        # every bot write is there
        assert conn.execute("SELECT count(*) FROM botlog").fetchone()[0] == inserts
        assert conn.execute("SELECT count(*) FROM items WHERE fact LIKE 'bot rewrote %'").fetchone()[0] == rewrites
        assert conn.execute("SELECT sum(hits) FROM items").fetchone()[0] == increments
        rows = {r[0]: r[1:] for r in conn.execute("SELECT id, fact, expires_at FROM items")}

    applied = {int(c.pk["id"]): action_id for action_id, c in result.applied}
    skipped = {int(s.change.pk["id"]): s.reason for s in result.skipped}
    assert len(applied) + len(skipped) == ROWS and applied
    with OverlayStore(plan.overlay_path) as store:
        log = ActionLog(store)
        for row_id, action_id in applied.items():
            action = log.get(action_id)
            assert action.state == "applied"
            assert action.before["fact"] == ["text", f"fact {row_id}"]   # written only over unchanged content
            assert rows[row_id][1] == action.after["expires_at"][1]        # our write is there
    for row_id, reason in skipped.items():
        assert rows[row_id][1] is None                                     # nothing of ours on a skipped row
        if "changed in the source" in reason:
            assert row_id in REWRITTEN and rows[row_id][0] == f"bot rewrote {row_id}"
        else:
            assert "busy" in reason                                         # retried on the next tick
    # the bot rewrote rows 301-304 before printing "ready": those at least were skipped
    assert {301, 302, 303, 304} <= {r for r, why in skipped.items() if "changed" in why}
    print(f"{journal}: bot ops {ops}, applied {len(applied)}, skipped changed "
          f"{sum('changed' in r for r in skipped.values())}, skipped busy {sum('busy' in r for r in skipped.values())}")
