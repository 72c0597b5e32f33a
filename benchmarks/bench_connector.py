"""CPU seconds of the SQLite connector alone: a full read into Records and the key pass (figures, not a test).

    .venv/bin/python benchmarks/bench_connector.py [--rows 100000] [--repeat 3]

The store is bench_audit's `agent_facts` table (the zero-config mapping an audit detects),
once as it is and once with an `updated_at` column (mapped too, so the read keeps the
cursor's mark). Each figure is the best of --repeat runs in this process, beside a raw
sqlite3 scan of the same columns measured in the same run.
"""
from __future__ import annotations

import argparse
import resource
import sqlite3
import tempfile
from pathlib import Path

from bench_audit import COLUMNS, build_store

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.overlay.engine.audit import zero_config_sources


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        t = cpu()
        work()
        times.append(cpu() - t)
    return min(times)


def raw_scan(path: Path, columns: str) -> None:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    for _ in conn.execute(f"SELECT {columns} FROM agent_facts"):
        pass
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "agent.db"
        build_store(plain, args.rows)
        with_updated = Path(tmp) / "agent_updated.db"
        build_store(with_updated, args.rows)
        conn = sqlite3.connect(with_updated)
        conn.execute("ALTER TABLE agent_facts ADD COLUMN updated_at TEXT")
        conn.execute("UPDATE agent_facts SET updated_at = created_at")
        conn.commit()
        conn.close()
        print(f"SQLite connector, {args.rows:,} rows, CPU seconds (best of {args.repeat})")
        for name, path, columns in (("agent_facts", plain, COLUMNS),
                                    ("agent_facts + updated_at", with_updated, COLUMNS + ", updated_at")):
            connector = make_connector(zero_config_sources(str(path), None)[0])
            with connector:
                raw = best(args.repeat, lambda: raw_scan(path, columns))
                read = best(args.repeat, lambda: sum(1 for _ in connector.read(None)))
                keys = best(args.repeat, lambda: sum(1 for _ in connector.keys()))
            print(f"  {name:<26} raw scan {raw:6.3f}  read() into Records {read:6.3f} ({read / raw:4.1f}x)"
                  f"  keys() {keys:6.3f} ({keys / raw:4.1f}x)", flush=True)


if __name__ == "__main__":
    main()
