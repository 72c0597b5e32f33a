"""The bot's write latency with and without `memwatch-overlay daemon` beside it, one run.

    python benchmarks/bench_bot_latency.py [--rows 20000] [--writes 2000] [--gap-ms 2]
                                           [--modes delete,wal] [--catchup 10] [--unpaced] [--json]

Per journal mode (delete = rollback journal, wal) it builds a store of --rows rows, then:

1. baseline: a bot process (plain sqlite3, busy timeout 5 s, one INSERT per transaction,
   --gap-ms between writes) writes --writes rows, timing each BEGIN IMMEDIATE..COMMIT;
2. with the daemon: the real `memwatch-overlay daemon` console script is started on a
   fresh overlay, left to finish its first full sync, then the same bot writes again
   while the daemon follows it (deletion pass every 2 s, so key passes run under load);
   With --unpaced, a third run starts the same daemon with the connector's rollback-journal
   pacing switched off (PACE_FACTOR 0, WAL-sized pages: the behaviour before issue 16
   point 13), through the console script's entry point in `python -c`;
3. catch-up: after the bot stops, the seconds until the overlay holds as many (not deleted)
   facts as the store has rows (or "no" if not within --catchup seconds).

Prints p50/p95/p99 of the bot's write latency in ms for both runs and the ratio
with/without, measured in the same run on the same machine.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import run_script

BOT = r'''
import json, sqlite3, sys, time
path, n, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) / 1000
conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
top = conn.execute("SELECT max(id) FROM facts").fetchone()[0]
lat = []
for i in range(n):
    top += 1
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    t = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO facts VALUES (?, 'u1', 'city', ?, ?, ?)", (top, f"Moved to town {top}", stamp, stamp))
    conn.execute("COMMIT")
    lat.append(time.perf_counter() - t)
    if gap:
        time.sleep(gap)
print(json.dumps(lat))
'''


UNPACED = r'''
import sys
from memwatch_overlay.connectors import sqlite
sqlite.PACE_FACTOR = 0.0
sqlite.ROLLBACK_PAGE_ROWS = sqlite.PAGE_ROWS
from memwatch_overlay.overlay.cli.main import main
sys.argv = ["memwatch-overlay", *sys.argv[1:]]
sys.exit(main())
'''


def console_script() -> str:
    here = Path(sys.executable).parent / "memwatch-overlay"
    found = str(here) if here.exists() else shutil.which("memwatch-overlay")
    if not found:
        sys.exit("the memwatch-overlay console script is not installed (pip install -e .)")
    return found


def make_store(path: Path, rows: int, mode: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA journal_mode={mode}")
    conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, fact_value TEXT,"
                 " created_at TEXT, updated_at TEXT)")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO facts VALUES (?, ?, 'city', ?, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
                     ((i, f"u{i % 50}", f"Lives in city {i}") for i in range(1, rows + 1)))
    conn.execute("COMMIT")
    conn.close()


def write_config(folder: Path, store: Path) -> Path:
    conf = folder / "memwatch.toml"
    conf.write_text("\n".join([
        "[daemon]", "deletion_scan_seconds = 2", "update_scan_seconds = 2", "rescore_seconds = 5",
        "", "[[sources]]", 'name = "bot"', 'connector = "sqlite"', f'path = "{store}"', 'table = "facts"',
        'id = "id"', 'text = "fact_value"', 'key = "fact_key"', 'subject = "user_id"',
        'created_at = "created_at"', 'updated_at = "updated_at"', "poll_seconds = 1", ""]))
    return conf


def active_facts(folder: Path) -> int:
    path = folder / ".memwatch" / "overlay.db"
    if not path.exists():
        return -1
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    try:
        return conn.execute("SELECT count(*) FROM facts WHERE status != 'deleted'").fetchone()[0]
    except sqlite3.OperationalError:
        return -1
    finally:
        conn.close()


def store_rows(store: Path) -> int:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    finally:
        conn.close()


def wait_until(pred, limit: float) -> float | None:
    t = time.monotonic()
    while time.monotonic() - t < limit:
        if pred():
            return time.monotonic() - t
        time.sleep(0.05)
    return None


def pct(values: list[float]) -> dict:
    qs = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": statistics.median(values) * 1000, "p95": qs[94] * 1000, "p99": qs[98] * 1000}


def with_daemon(folder: Path, store: Path, conf: Path, args, command: list[str], tag: str) -> dict:
    """The bot's latencies with `command` (a daemon on a fresh overlay) running beside it."""
    shutil.rmtree(folder / ".memwatch", ignore_errors=True)
    log = open(folder / f"daemon-{tag}.log", "w")
    daemon = subprocess.Popen([*command, "daemon", "--config", str(conf)], cwd=folder,
                              stdout=subprocess.DEVNULL, stderr=log)
    try:
        first = wait_until(lambda: active_facts(folder) >= store_rows(store), 120)
        if first is None:
            sys.exit(f"{tag}: the daemon did not finish its first sync in 120 s")
        lat = json.loads(run_script(BOT, store, args.writes, args.gap_ms).strip().splitlines()[-1])
        target = store_rows(store)
        behind = target - max(active_facts(folder), 0)
        caught = wait_until(lambda: active_facts(folder) >= target, args.catchup)
    finally:
        daemon.terminate()
        daemon.wait(30)
        log.close()
    return {"ms": pct(lat), "first_sync_s": first, "behind_when_writer_stopped": behind, "caught_up_s": caught}


def measure(mode: str, args, base: Path) -> dict:
    folder = base / mode
    folder.mkdir()
    store = folder / "bot.db"
    make_store(store, args.rows, mode)
    alone = pct(json.loads(run_script(BOT, store, args.writes, args.gap_ms).strip().splitlines()[-1]))
    conf = write_config(folder, store)
    runs = {"daemon": with_daemon(folder, store, conf, args, [console_script()], "daemon")}
    if args.unpaced:
        runs["unpaced"] = with_daemon(folder, store, conf, args, [sys.executable, "-c", UNPACED], "unpaced")
    for run in runs.values():
        run["ratio"] = {k: run["ms"][k] / alone[k] for k in alone}
    return {"mode": mode, "rows": args.rows, "writes": args.writes, "alone_ms": alone, **runs}

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--writes", type=int, default=2000)
    ap.add_argument("--gap-ms", type=float, default=2.0)
    ap.add_argument("--modes", default="delete,wal")
    ap.add_argument("--catchup", type=float, default=10.0)
    ap.add_argument("--unpaced", action="store_true", help="also run the daemon without rollback-journal pacing")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench_bot_latency_"))
    try:
        results = [measure(m.strip(), args, base) for m in args.modes.split(",") if m.strip()]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"store {args.rows} rows, bot writes {args.writes} rows (one per transaction, {args.gap_ms:g} ms apart)")
    print(f"{'mode':7} {'':17} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for r in results:
        a = r["alone_ms"]
        print(f"{r['mode']:7} {'alone':17} {a['p50']:8.2f} {a['p95']:8.2f} {a['p99']:8.2f}")
        for name in ("daemon", "unpaced"):
            if name not in r:
                continue
            run = r[name]
            v, q = run["ms"], run["ratio"]
            print(f"{r['mode']:7} {'+' + name:17} {v['p50']:8.2f} {v['p95']:8.2f} {v['p99']:8.2f}")
            print(f"{r['mode']:7} {'  ratio to alone':17} {q['p50']:8.2f} {q['p95']:8.2f} {q['p99']:8.2f}")
            caught = "no" if run["caught_up_s"] is None else f"yes, {run['caught_up_s']:.2f} s"
            print(f"{r['mode']:7}   {name}: first sync {run['first_sync_s']:.2f} s; "
                  f"{run['behind_when_writer_stopped']} rows behind when the bot stopped; "
                  f"caught up within {args.catchup:g} s: {caught}")

if __name__ == "__main__":
    main()
