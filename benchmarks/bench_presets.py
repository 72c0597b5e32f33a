"""mem0 preset read cost against a raw sqlite3 scan of the same history rows, in one run.

    python benchmarks/bench_presets.py [--sizes 10000,100000] [--repeat 3]

Builds a synthetic mem0 store per size: `history.db` (one ADD per memory, an UPDATE for
every fifth, a DELETE for every fiftieth) and a qdrant local collection beside it with one
pickled point per live memory. Measures, each in its own subprocess (own peak RSS):
the raw ordered scan of `history`, the preset's read() without the qdrant folder and with
it (grouping, payload lookups, inert unpickling). Prints medians and ratios to the raw scan.
"""
from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import pickle
import sqlite3
import statistics
import tempfile
import uuid
from pathlib import Path

from benchlib import run_script

RAW_SCAN = """
import sqlite3, sys, time, resource
t = time.perf_counter()
conn = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
n = 0
for row in conn.execute("SELECT id, memory_id, old_memory, new_memory, event, created_at, updated_at, "
                        "is_deleted FROM history ORDER BY memory_id, updated_at"):
    n += 1
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""

PRESET_READ = """
import sys, time, resource
from memwatch_overlay.connectors.recognize import detect, source_from_detection
from memwatch_overlay.connectors.registry import make_connector
t = time.perf_counter()
conn = make_connector(source_from_detection(detect(sys.argv[1])))
n = 0
with conn:
    for rec in conn.read():
        n += 1
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""


class PointStruct:
    """Pickles like qdrant's pydantic v2 PointStruct (state with a `__dict__`)."""

    def __init__(self, id, vector, payload):
        self.id, self.vector, self.payload = id, vector, payload

    def __getstate__(self):
        return {"__dict__": dict(self.__dict__), "__pydantic_extra__": None,
                "__pydantic_fields_set__": {"id", "vector", "payload"}, "__pydantic_private__": None}


def build_store(folder: Path, n: int) -> int:
    base = dt.datetime(2026, 11, 29, tzinfo=dt.timezone.utc)
    hist = sqlite3.connect(folder / "history.db")
    hist.execute("CREATE TABLE history (id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT, new_memory TEXT, "
                 "event TEXT, created_at DATETIME, updated_at DATETIME, is_deleted INTEGER, actor_id TEXT, role TEXT)")
    storage = folder / "qdrant" / "collection" / "memories" / "storage.sqlite"
    storage.parent.mkdir(parents=True)
    points = sqlite3.connect(storage)
    points.execute("CREATE TABLE points (id TEXT PRIMARY KEY, point BLOB)")
    rows = 0
    for i in range(n):
        mid = str(uuid.UUID(int=i + 1))
        created = (base - dt.timedelta(days=i % 900)).isoformat()
        text = f"User {i % 5000} fact number {i}"
        events = [(str(uuid.uuid4()), mid, None, text, "ADD", created, created, 0)]
        if i % 5 == 0:
            events.append((str(uuid.uuid4()), mid, text, text + " (updated)", "UPDATE", created,
                           (base - dt.timedelta(days=(i % 900) // 2)).isoformat(), 0))
        deleted = i % 50 == 0
        if deleted:
            events.append((str(uuid.uuid4()), mid, events[-1][3], None, "DELETE", created, base.isoformat(), 1))
        hist.executemany("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 'user')", events)
        rows += len(events)
        if not deleted:
            point = PointStruct(mid, [0.1] * 32, {"user_id": f"u{i % 5000}", "data": events[-1][3]})
            points.execute("INSERT INTO points VALUES (?, ?)",
                           (base64.b64encode(pickle.dumps(mid, protocol=4)).decode(), pickle.dumps(point, protocol=4)))
    hist.commit()
    points.commit()
    hist.close()
    points.close()
    return rows


def measure(script: str, *args: str) -> tuple[float, int, int]:
    seconds, rss_kb, n = run_script(script, *args).split()
    return float(seconds), int(rss_kb), int(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print machine-readable results")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            with_q = Path(tmp) / f"with_{n}"
            with_q.mkdir()
            rows = build_store(with_q, n)
            bare = Path(tmp) / f"bare_{n}"
            bare.mkdir()
            (bare / "history.db").write_bytes((with_q / "history.db").read_bytes())
            timings: dict[str, list[float]] = {"raw": [], "bare": [], "qdrant": []}
            rss: dict[str, int] = {k: 0 for k in timings}
            for _ in range(args.repeat):
                for name, script, path in (("raw", RAW_SCAN, bare), ("bare", PRESET_READ, bare),
                                           ("qdrant", PRESET_READ, with_q)):
                    s, kb, _ = measure(script, str(path / "history.db"))
                    timings[name].append(s)
                    rss[name] = max(rss[name], kb)
            med = {k: statistics.median(v) for k, v in timings.items()}
            results.append({"memories": n, "history_rows": rows, **{f"{k}_s": round(v, 3) for k, v in med.items()},
                            "ratio_bare": round(med["bare"] / med["raw"], 1),
                            "ratio_qdrant": round(med["qdrant"] / med["raw"], 1),
                            **{f"peak_rss_mb_{k}": round(v / 1024) for k, v in rss.items()}})
            print(f"{n:>8,} memories ({rows:,} events)  raw {med['raw']:.3f}s  preset {med['bare']:.3f}s "
                  f"({med['bare'] / med['raw']:.1f}x)  +qdrant {med['qdrant']:.3f}s ({med['qdrant'] / med['raw']:.1f}x)  "
                  f"peak RSS raw {rss['raw'] / 1024:.0f} MB, preset {rss['bare'] / 1024:.0f} MB, "
                  f"+qdrant {rss['qdrant'] / 1024:.0f} MB", flush=True)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
