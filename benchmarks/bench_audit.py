"""Full-audit throughput against a raw sqlite3 scan of the same columns, measured in one run.

    python benchmarks/bench_audit.py [--sizes 10000,100000,1000000] [--repeat 3]

Each measurement runs in its own subprocess so peak RSS (ru_maxrss) is its own. Prints
medians, the ratio audit / raw scan, and peak RSS. The store is a home-made agent table
(`agent_facts`, text + key + subject + timestamp), built once per size in a temp folder.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COLUMNS = "id, user_id, fact_key, fact_value, created_at"
KEYS = ["employer", "city", "email", "food", "language", "pet"]
VALUES = ["Works at Acme {}", "Lives in City {}", "mail{}@example.com", "Loves dish {}",
          "Speaks language {}", "Has a dog named {}"]
AS_OF = "2026-11-29"

RAW_SCAN = """
import sqlite3, sys, time, resource
t = time.perf_counter()
conn = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
n = 0
for row in conn.execute("SELECT {cols} FROM agent_facts"):
    n += 1
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
""".replace("{cols}", COLUMNS)

AUDIT = """
import os, sys, time, resource
from memwatch_overlay.overlay.audit import audit
from memwatch_overlay.overlay.output import write_json
from memwatch_overlay.overlay.timeparse import parse_as_of
t = time.perf_counter()
result = audit(sys.argv[1], as_of=parse_as_of(sys.argv[3]), overlay_path=sys.argv[2])
with open(os.devnull, "w") as out:
    write_json(result, out)
n = result.summary["total"]
result.close()
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""


def build_store(path: Path, n: int) -> None:
    rnd = random.Random(1)
    base = dt.datetime(2026, 11, 29)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                 "fact_value TEXT, created_at TEXT)")

    def rows():
        for i in range(n):
            k = rnd.randrange(len(KEYS))
            yield (f"u{i % 5000}", KEYS[k], VALUES[k].format(i),
                   (base - dt.timedelta(days=rnd.random() * 900)).strftime("%Y-%m-%d %H:%M:%S"))
    conn.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                     rows())
    conn.commit()
    conn.close()


def measure(script: str, *args: str) -> tuple[float, int, int]:
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
    seconds, rss_kb, n = out.stdout.split()
    return float(seconds), int(rss_kb), int(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print machine-readable results")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            store = Path(tmp) / f"agent_{n}.db"
            build_store(store, n)
            raw, full = [], []
            rss_raw = rss_audit = 0
            for i in range(args.repeat):
                s, rss, _ = measure(RAW_SCAN, str(store))
                raw.append(s)
                rss_raw = max(rss_raw, rss)
                overlay = Path(tmp) / f"overlay_{n}_{i}.db"   # a fresh overlay: first audit
                s, rss, total = measure(AUDIT, str(store), str(overlay), AS_OF)
                assert total == n, (total, n)
                full.append(s)
                rss_audit = max(rss_audit, rss)
            r, a = statistics.median(raw), statistics.median(full)
            results.append({"rows": n, "raw_scan_s": round(r, 3), "audit_s": round(a, 3),
                            "ratio": round(a / r, 1), "rows_per_s": round(n / a),
                            "peak_rss_mb_raw": round(rss_raw / 1024), "peak_rss_mb_audit": round(rss_audit / 1024)})
            print(f"{n:>9,} rows  raw scan {r:7.3f}s  audit {a:7.3f}s  ratio {a / r:5.1f}x  "
                  f"{n / a:>9,.0f} rows/s  peak RSS {rss_audit / 1024:6.0f} MB (raw {rss_raw / 1024:.0f} MB)",
                  flush=True)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
