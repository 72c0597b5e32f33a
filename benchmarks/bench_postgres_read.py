"""Postgres connector read throughput against a raw psycopg named-cursor scan, in one run.

    python benchmarks/bench_postgres_read.py [--rows 200000] [--repeat 3] [--dsn postgresql://…/postgres]

Builds a LangGraph-shaped `store` table (prefix, key, value jsonb, timestamps) in a
throwaway database, then measures, each in its own subprocess (so peak RSS is its own):
- raw: psycopg named cursor (itersize 10,000) over the same columns, rows counted only;
- connector: PostgresConnector.read() with the langgraph-postgres preset, Records built;
- incremental: the same connector from a watermark after 1,000 new rows.
Prints medians, the connector / raw ratio, rows read and peak RSS. The database is dropped.
"""
from __future__ import annotations

import argparse
import os
import statistics

from benchlib import run_script, throwaway_database

DEFAULT_DSN = os.environ.get("MEMWATCH_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")

RAW = """
import sys, time, resource, psycopg
t = time.perf_counter()
with psycopg.connect(sys.argv[1]) as conn:
    cur = conn.cursor(name="raw")
    cur.itersize = 10000
    cur.execute("SELECT prefix, key, value, created_at, updated_at, expires_at FROM store")
    n = sum(1 for _ in cur)
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, n)
"""

CONNECTOR = """
import json, sys, time, resource
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.rules.config import SourceConfig
src = SourceConfig(name="b", connector="postgres", dsn=sys.argv[1], preset="langgraph-postgres")
cursor = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
t = time.perf_counter()
with make_connector(src) as conn:
    n = sum(1 for _ in conn.read(cursor))
    rows = conn.rows_read
    out = conn.cursor
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rows, json.dumps(out))
"""


def run(code: str, *args: str) -> list[str]:
    return run_script(code, *args).split(maxsplit=3)


def main() -> None:
    import psycopg

    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dsn", default=DEFAULT_DSN)
    args = ap.parse_args()
    with throwaway_database(args.dsn, f"memwatch_bench_{os.getpid()}") as (dsn, _):
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE store (prefix text NOT NULL, key text NOT NULL, value jsonb NOT NULL, "
                         "created_at timestamptz DEFAULT now(), updated_at timestamptz DEFAULT now(), "
                         "expires_at timestamptz, ttl_minutes int, PRIMARY KEY (prefix, key))")
            conn.execute("INSERT INTO store (prefix, key, value, created_at, updated_at) "
                         "SELECT 'users.u' || (i %% 1000) || '.memories', 'k' || i, "
                         "jsonb_build_object('memory', 'Works at Acme ' || i), "
                         "now() - interval '400 days' + i * interval '1 second', "
                         "now() - interval '400 days' + i * interval '1 second' "
                         "FROM generate_series(1, %s) AS i", (args.rows,))
            conn.execute("ANALYZE store")
        raw = [run(RAW, dsn) for _ in range(args.repeat)]
        full = [run(CONNECTOR, dsn) for _ in range(args.repeat)]
        cursor = full[-1][3]
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("INSERT INTO store (prefix, key, value) SELECT 'users.new.memories', 'n' || i, "
                         "jsonb_build_object('memory', 'New fact ' || i) FROM generate_series(1, 1000) AS i")
        incr = [run(CONNECTOR, dsn, cursor) for _ in range(args.repeat)]

    def med(runs, i):
        return statistics.median(float(r[i]) for r in runs)

    t_raw, t_full, t_incr = med(raw, 0), med(full, 0), med(incr, 0)
    print(f"rows={args.rows} repeat={args.repeat} (medians; each run in its own process)")
    print(f"raw named cursor   {t_raw:7.3f} s  {args.rows / t_raw:10,.0f} rows/s  peak RSS {med(raw, 1) / 1024:6.1f} MB")
    print(f"connector full     {t_full:7.3f} s  {args.rows / t_full:10,.0f} rows/s  peak RSS {med(full, 1) / 1024:6.1f} MB"
          f"  ratio {t_full / t_raw:.2f}x raw")
    print(f"incremental +1000  {t_incr:7.3f} s  rows read {int(med(incr, 2)):,}  peak RSS {med(incr, 1) / 1024:6.1f} MB")


if __name__ == "__main__":
    main()
