"""The daemon polls a real Postgres source: inserts and updates arrive by the updated_at
watermark every poll_seconds, deletions by the periodic pass, and a stopped server is
an error that backs off and recovers without stopping the daemon."""
from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest

from memwatch_overlay.overlay.daemon.loop import Daemon
from memwatch_overlay.rules.config import parse_config

pytestmark = pytest.mark.postgres


def admin(dsn, *statements):
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as conn:
        for st in statements:
            conn.execute(st)


def overlay(tmp_path) -> dict[str, tuple[str, str]]:
    path = tmp_path / "overlay.db"
    if not path.exists():
        return {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {json.loads(pk)["id"]: (text, status) for pk, text, status in
                conn.execute("SELECT pk, text, status FROM facts")}
    except sqlite3.OperationalError:
        return {}
    finally:
        conn.close()


def wait_for(predicate, limit: float = 30.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_daemon_follows_a_postgres_table(pg_dsn, tmp_path):
    schema = f"daemon_{int(time.time() * 1000) % 10**9}"
    table = f"{schema}.facts"
    admin(pg_dsn, f"CREATE SCHEMA {schema}",
          f"CREATE TABLE {table} (id bigint PRIMARY KEY, fact text, created_at timestamptz, updated_at timestamptz)",
          f"INSERT INTO {table} SELECT g, 'fact ' || g, now() - interval '10 days', now() - interval '10 days' "
          f"FROM generate_series(1, 20) g")
    cfg = parse_config({
        "overlay": {"path": str(tmp_path / "overlay.db")},
        "daemon": {"deletion_scan_seconds": 0.5, "rescore_seconds": 3600, "heartbeat_seconds": 3600},
        "sources": [{"name": "pg", "connector": "postgres", "dsn": pg_dsn, "table": table, "id": "id",
                     "text": "fact", "created_at": "created_at", "updated_at": "updated_at",
                     "poll_seconds": 0.2}]})
    d = Daemon(cfg)
    thread = threading.Thread(target=d.run, daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: len(overlay(tmp_path)) == 20)
        admin(pg_dsn, f"INSERT INTO {table} VALUES (21, 'lives in Lima', now(), now())",
              f"UPDATE {table} SET fact = 'moved to Quito', updated_at = now() WHERE id = 3",
              f"DELETE FROM {table} WHERE id = 4")
        assert wait_for(lambda: overlay(tmp_path).get("21", ("",))[0] == "lives in Lima")
        assert wait_for(lambda: overlay(tmp_path)["3"][0] == "moved to Quito")
        assert wait_for(lambda: overlay(tmp_path)["4"][1] == "deleted")
        assert d.states[0].failures == 0
    finally:
        d.stop()
        thread.join(15)
    assert not thread.is_alive()
    facts = overlay(tmp_path)
    assert len(facts) == 21
    assert sum(s in ("active", "contradicted") for _, s in facts.values()) == 20   # the detector runs too
