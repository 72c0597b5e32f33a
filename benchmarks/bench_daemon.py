"""The daemon's cost against a raw sqlite3 scan of the same table, measured in one run.

    python benchmarks/bench_daemon.py [--sizes 10000,100000,1000000] [--repeat 5] [--json]

For each size it builds a WAL-mode agent store (`agent_facts`: text, key, subject,
created_at, updated_at; no index on updated_at, as most bots ship it) in a temp folder,
then measures, each in its own subprocess so peak RSS (ru_maxrss) is its own:

- raw scan: a plain sqlite3 SELECT of the mapped columns over the whole table (baseline);
- first full sync into an empty overlay (what the daemon does once per source);
- ticks on a warm daemon (persistent connector, overlay already synced), exactly what a
  daemon tick runs per source: `has_changes()` then `SyncEngine.sync(full=False)`:
  nothing changed; 1 and 1,000 new rows; 1 and 1,000 updated rows with an index on
  updated_at; the periodic update scan when updated_at has no index; the key-only
  deletion pass; the scheduled rescore of due labels.

Figures are medians over --repeat runs (and several ticks per run); ratios are against
the raw scan of the same size in the same run. The tick rows also print how many source
rows the tick read: the claim is that it stays flat from 10k to 1M rows.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

from benchlib import run_script

COLUMNS = "id, user_id, fact_key, fact_value, created_at, updated_at"
KEYS = ["employer", "city", "email", "food", "language", "pet"]
VALUES = ["Works at Acme {}", "Lives in City {}", "mail{}@example.com", "Loves dish {}",
          "Speaks language {}", "Has a dog named {}"]
INNER = 5          # ticks measured per run for each tick kind

RAW_SCAN = """
import json, resource, sqlite3, sys, time
t = time.perf_counter()
conn = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
n = 0
for row in conn.execute("SELECT {cols} FROM agent_facts"):
    n += 1
print(json.dumps({"seconds": time.perf_counter() - t, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "rows": n}))
""".replace("{cols}", COLUMNS)

COMMON = """
import json, resource, sqlite3, statistics, sys, time
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import parse_config
store_path, overlay_path = sys.argv[1], sys.argv[2]
cfg = parse_config({"sources": [{"name": "bot", "connector": "sqlite", "path": store_path, "table": "agent_facts",
                                 "id": "id", "text": "fact_value", "key": "fact_key", "subject": "user_id",
                                 "created_at": "created_at", "updated_at": "updated_at"}]})
source = cfg.sources[0]
overlay = OverlayStore(overlay_path)
engine = SyncEngine(overlay, cfg)
def rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

FULL_SYNC = COMMON + """
t = time.perf_counter()
stats = engine.sync(source, full=True)
seconds = time.perf_counter() - t
overlay.close()
print(json.dumps({"seconds": seconds, "rss_kb": rss_kb(), "rows": stats.rows_read}))
"""

TICKS = COMMON + """
inner = int(sys.argv[3])
conn = make_connector(source)
conn.update_scan_seconds = 30.0            # the daemon's default
conn.open()
conn.has_changes()
bot = sqlite3.connect(store_path, isolation_level=None, timeout=5)   # the bot, writing
top = bot.execute("SELECT max(id) FROM agent_facts").fetchone()[0]
clock = [0]
def stamp():
    clock[0] += 1
    return (dt0 + datetime.timedelta(seconds=clock[0])).strftime("%Y-%m-%d %H:%M:%S.%f")
import datetime
dt0 = datetime.datetime(2026, 12, 1)

def tick():
    t = time.perf_counter()
    before = conn.rows_read
    if conn.has_changes():
        engine.sync(source, full=False, connector=conn)
    return time.perf_counter() - t, conn.rows_read - before

def insert(k):
    global top
    bot.execute("BEGIN")
    for _ in range(k):
        top += 1
        s = stamp()
        bot.execute("INSERT INTO agent_facts VALUES (?, 'u1', 'city', ?, ?, ?)", (top, f"Moved to town {top}", s, s))
    bot.execute("COMMIT")

def update(k):
    bot.execute("BEGIN")
    for i in range(k):
        bot.execute("UPDATE agent_facts SET fact_value = fact_value || '!', updated_at = ? WHERE id = ?",
                    (stamp(), 1 + (clock[0] * 7919) % 9000))
    bot.execute("COMMIT")

out = {}
def measure(name, change):
    secs, reads = [], []
    for _ in range(inner):
        change()
        s, r = tick()
        secs.append(s)
        reads.append(r)
    out[name] = {"seconds": statistics.median(secs), "rows_read": statistics.median(reads)}

measure("idle", lambda: None)
measure("insert_1", lambda: insert(1))
measure("insert_1000", lambda: insert(1000))
# No index on updated_at: ticks defer updates; the update scan is what costs, every 30 s.
def due_scan(k):
    update(k)
    conn.update_scan_seconds = 0.0
measure("update_scan_unindexed_1", lambda: due_scan(1))
conn.update_scan_seconds = 30.0
bot.execute("CREATE INDEX agent_facts_updated_at ON agent_facts(updated_at)")
tick()
measure("update_1_indexed", lambda: update(1))
measure("update_1000_indexed", lambda: update(1000))
bot.execute("DROP INDEX agent_facts_updated_at")
tick()

secs, keys = [], []
for _ in range(inner):
    bot.execute("DELETE FROM agent_facts WHERE id = (SELECT max(id) FROM agent_facts)")
    tick()
    t = time.perf_counter()
    st = engine.sync_deletions(source, connector=conn)
    secs.append(time.perf_counter() - t)
    keys.append(st.keys_read)
    assert st.deleted == 1, st
out["deletion_pass"] = {"seconds": statistics.median(secs), "rows_read": 0, "keys_read": statistics.median(keys)}

secs, done = [], []
now = time.time()
for i in range(inner):
    t = time.perf_counter()
    done.append(engine.rescore_due(now + (i + 1) * 60))   # one schedule step (60 s) per call
    secs.append(time.perf_counter() - t)
out["rescore_due"] = {"seconds": statistics.median(secs), "rows_read": 0, "rescored": statistics.median(done)}
out["rss_kb"] = rss_kb()
print(json.dumps(out))
"""

ROWS = [
    ("raw", "raw sqlite3 scan (baseline)"),
    ("full", "first full sync"),
    ("idle", "tick, nothing changed"),
    ("insert_1", "tick, 1 new row"),
    ("insert_1000", "tick, 1,000 new rows"),
    ("update_1_indexed", "tick, 1 updated row (indexed updated_at)"),
    ("update_1000_indexed", "tick, 1,000 updated rows (indexed)"),
    ("update_scan_unindexed_1", "update scan, unindexed updated_at (every 30 s)"),
    ("deletion_pass", "deletion pass, keys only (every 300 s)"),
    ("rescore_due", "scheduled rescore of labels due (every 60 s)"),
]


def build_store(path: Path, n: int) -> None:
    rnd = random.Random(1)
    base = dt.datetime(2026, 11, 29)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                 "fact_value TEXT, created_at TEXT, updated_at TEXT)")

    def rows():
        for i in range(n):
            k = rnd.randrange(len(KEYS))
            t = (base - dt.timedelta(days=rnd.random() * 900)).strftime("%Y-%m-%d %H:%M:%S")
            yield (f"u{i % 5000}", KEYS[k], VALUES[k].format(i), t, t)
    conn.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at, updated_at) "
                     "VALUES (?, ?, ?, ?, ?)", rows())
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def run(script: str, *args: str) -> dict:
    return json.loads(run_script(script, *args).strip().splitlines()[-1])


def bench_size(tmp: Path, n: int, repeat: int) -> dict:
    store = tmp / f"agent_{n}.db"
    build_store(store, n)
    raw, full, ticks = [], [], []
    for i in range(repeat):
        raw.append(run(RAW_SCAN, str(store)))
        overlay = tmp / f"overlay_{n}_{i}.db"
        result = run(FULL_SYNC, str(store), str(overlay))
        assert result["rows"] == n, result
        full.append(result)
        # Ticks run on copies, so every run starts from the same store and a synced overlay.
        work = tmp / f"work_{n}.db"
        shutil.copy(store, work)
        warm = tmp / f"warm_{n}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(warm) + suffix).unlink(missing_ok=True)
            if Path(str(overlay) + suffix).exists():
                shutil.copy(str(overlay) + suffix, str(warm) + suffix)
        ticks.append(run(TICKS, str(work), str(warm), str(INNER)))
        for p in tmp.glob(f"overlay_{n}_{i}.db*"):
            p.unlink()
    out = {"rows": n, "raw": _med(raw), "full": _med(full), "rss_kb": {
        "raw": max(r["rss_kb"] for r in raw), "full": max(r["rss_kb"] for r in full),
        "ticks": max(t["rss_kb"] for t in ticks)}}
    for key, _ in ROWS[2:]:
        out[key] = {"seconds": statistics.median(t[key]["seconds"] for t in ticks),
                    "rows_read": statistics.median(t[key]["rows_read"] for t in ticks)}
        for extra in ("keys_read", "rescored"):
            if extra in ticks[0][key]:
                out[key][extra] = statistics.median(t[key][extra] for t in ticks)
    return out


def _med(results: list[dict]) -> dict:
    return {"seconds": statistics.median(r["seconds"] for r in results), "rows_read": results[0]["rows"]}


def fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.001:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def table(results: list[dict]) -> str:
    """A Markdown table: one row per measurement, one column per store size."""
    head = "| measurement | " + " | ".join(f"{r['rows']:,} rows" for r in results) + " |"
    lines = [head, "|" + "---|" * (len(results) + 1)]
    for key, label in ROWS:
        cells = []
        for r in results:
            m = r[key]
            cell = fmt_time(m["seconds"])
            if key != "raw":
                cell += f" ({m['seconds'] / r['raw']['seconds']:.3g}x)"
                if "keys_read" in m:
                    cell += f", {int(m['keys_read']):,} keys read"
                elif "rescored" in m:
                    cell += f", {int(m['rescored']):,} facts rescored, 0 rows read"
                else:
                    cell += f", {int(m['rows_read']):,} rows read"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("| peak RSS: raw scan / full sync / ticks | " + " | ".join(
        f"{r['rss_kb']['raw'] / 1024:.0f} / {r['rss_kb']['full'] / 1024:.0f} / {r['rss_kb']['ticks'] / 1024:.0f} MB"
        for r in results) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="also print machine-readable results")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            results.append(bench_size(Path(tmp), n, args.repeat))
            print(f"measured {n:,} rows", file=sys.stderr, flush=True)
    print(f"medians of {args.repeat} runs (ticks: {INNER} per run); ratio = time / raw scan of the same table; "
          "[source rows read]")
    print(table(results))
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
