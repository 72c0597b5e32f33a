"""What the benchmark scripts share: running a measurement in its own Python process, and a
throwaway Postgres database.

Each measurement is a snippet run with `python -c` so that its peak RSS (ru_maxrss) is its
own; it prints its figures on its last line of stdout.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys


def measured_env() -> dict[str, str]:
    """The environment measured processes run in: this one, with Python's bytecode cache on.
    A user's install writes and reads `__pycache__`; with PYTHONDONTWRITEBYTECODE set (as on
    some CI machines) every process compiles every module it imports, which added ~1.7 s to
    a 100k console audit here and more to each worker process."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_script(script: str, *args) -> str:
    """stdout of `python -c script args…` (in measured_env()); a failing script ends the
    benchmark with its stderr."""
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True,
                         env=measured_env())
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
