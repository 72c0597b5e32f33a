"""Write-back cost against a raw UPDATE by primary key, and what a concurrent bot waits.

    python benchmarks/bench_writeback.py [--rows 20000] [--repeat 3]

For a table of N expired memories, measured in one run (medians of --repeat):
- raw: one transaction of `UPDATE … SET expires_at = ? WHERE id = ?` for every row
  (sqlite3 executemany), the floor any write-back pays;
- apply: `apply_plan()` of a plan setting expires_at = now (batches of 100, re-read and
  content-hash check per row, before/after images logged in the overlay);
- undo: `undo_actions()` of all of them;
- plan: `plan_actions()` including the full sync it does first.
Then the latency a bot sees: a subprocess writing one row per millisecond records the
longest wait for its write, alone and while apply runs.
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config

CONFIG = """
[overlay]
path = "overlay.db"

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
"""
BOT = """
import sqlite3, sys, time, os
conn = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
worst, n = 0.0, 0
while not os.path.exists(sys.argv[2]):
    t = time.perf_counter()
    conn.execute("INSERT INTO botlog (n) VALUES (?)", (n,))
    worst = max(worst, time.perf_counter() - t)
    n += 1
    time.sleep(0.001)
print(worst, n)
"""


def build(folder: Path, rows: int) -> None:
    conn = sqlite3.connect(folder / "bot.db")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, fact TEXT, at TEXT, expires_at TEXT)")
    conn.execute("CREATE TABLE botlog (id INTEGER PRIMARY KEY, n INTEGER)")
    conn.executemany("INSERT INTO items VALUES (?, ?, '2001-01-01 00:00:00', NULL)",
                     ((i, f"memory {i}") for i in range(rows)))
    conn.commit()
    conn.close()
    (folder / "memwatch.toml").write_text(CONFIG)


def fresh_copy(base: Path, run: Path) -> Path:
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(base, run)
    return run


def raw_update(folder: Path, rows: int) -> float:
    conn = sqlite3.connect(folder / "bot.db", isolation_level=None)
    t = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("UPDATE items SET expires_at = ? WHERE id = ?",
                     (("2026-11-29 16:00:00", i) for i in range(rows)))
    conn.execute("COMMIT")
    took = time.perf_counter() - t
    conn.close()
    return took


def bot_worst_wait(folder: Path, during=None) -> float:
    stop = folder / "stop"
    stop.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", BOT, str(folder / "bot.db"), str(stop)],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    if during:
        during()
    else:
        time.sleep(1.0)
    stop.touch()
    worst, _ = proc.communicate(timeout=60)[0].split()
    return float(worst)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    as_of = parse_as_of("2026-11-29")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        build(base, args.rows)
        times = {"raw": [], "plan": [], "apply": [], "undo": []}
        for r in range(args.repeat):
            run = fresh_copy(base, Path(tmp) / "run")
            times["raw"].append(raw_update(run, args.rows))
            run = fresh_copy(base, Path(tmp) / "run")
            cfg = load_config(run / "memwatch.toml")
            t = time.perf_counter()
            plan = plan_actions(cfg, as_of)
            times["plan"].append(time.perf_counter() - t)
            t = time.perf_counter()
            result = apply_plan(plan)
            times["apply"].append(time.perf_counter() - t)
            assert len(result.applied) == args.rows, result.skipped[:3]
            t = time.perf_counter()
            undone = undo_actions(cfg, since=result.run_at)
            times["undo"].append(time.perf_counter() - t)
            assert len(undone.restored) == args.rows
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"rows {args.rows}, medians of {args.repeat}")
        for k in ("raw", "plan", "apply", "undo"):
            print(f"  {k:6s} {med[k]:8.3f} s   {args.rows / med[k]:10,.0f} rows/s   "
                  f"x{med[k] / med['raw']:.1f} raw")
        run = fresh_copy(base, Path(tmp) / "run")
        cfg = load_config(run / "memwatch.toml")
        plan = plan_actions(cfg, as_of)
        alone = bot_worst_wait(run)
        during = bot_worst_wait(run, lambda: apply_plan(plan))
        print(f"  bot's longest single write: alone {alone * 1000:.1f} ms, during apply {during * 1000:.1f} ms")


if __name__ == "__main__":
    main()
