"""What the benchmark scripts share: running a measurement in its own Python process, and a
throwaway Postgres database.

Each measurement is a snippet run with `python -c` so that its peak RSS (ru_maxrss) is its
own; it prints its figures on its last line of stdout.
"""
from __future__ import annotations

import contextlib
import subprocess
import sys


def run_script(script: str, *args) -> str:
    """stdout of `python -c script args…`; a failing script ends the benchmark with its stderr."""
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"benchmark subprocess failed:\n{out.stderr}")
    return out.stdout


@contextlib.contextmanager
def throwaway_database(dsn: str, name: str):
    """A new Postgres database named `name` on `dsn`'s server, dropped afterwards.
    Yields (libpq conninfo, postgresql:// URL) of it."""
    import psycopg
    from psycopg import conninfo, sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    info = conninfo.conninfo_to_dict(dsn)
    url = f"postgresql://{info.get('user', 'postgres')}@{info.get('host', '127.0.0.1')}:{info.get('port', '5432')}/{name}"
    try:
        yield conninfo.make_conninfo(dsn, dbname=name), url
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
