"""A Postgres source under attack (issue 16 points 2, 3), against the real server.

- dblink_exec in a `where` deleted a row through a second connection a READ ONLY
  transaction does not cover: now refused (no function outside the pure allow-list runs),
  and a role that may use dblink is warned about loudly;
- a read that cannot finish (a bot's lock, a slow view) ends after the source's
  timeout_seconds with a one-line error, and a killed client leaves no backend behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from hostile import EXE, assert_clean_error, run

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg")


def admin(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for s in statements:
            conn.execute(s)


def count(dsn: str, sql: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql).fetchone()[0]


@pytest.fixture
def facts_db(pg_database):
    dsn = pg_database("memwatch_harden")
    admin(dsn, "CREATE TABLE agent_facts (id int PRIMARY KEY, text text, created_at timestamptz)",
          "INSERT INTO agent_facts SELECT g, 'fact ' || g, now() - g * interval '1 day' "
          "FROM generate_series(1, 60) g")
    return dsn


def source_toml(tmp_path, dsn: str, extra: str = "", table: str = "agent_facts") -> None:
    (tmp_path / "memwatch.toml").write_text(
        f'[overlay]\npath = "overlay.db"\n\n[[sources]]\nname = "pg"\nconnector = "postgres"\n'
        f'dsn = "{dsn}"\ntable = "{table}"\nid = "id"\ntext = "text"\ncreated_at = "created_at"\n{extra}\n')


def our_backends(dsn: str) -> int:
    return count(dsn, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'memwatch-overlay' "
                      "AND datname = current_database() "
                      "AND pid <> pg_backend_pid()")


def backends_gone(dsn: str, within: float = 30.0) -> bool:
    """Whether our backends are gone within ``within`` seconds: a server ends a backend
    shortly after its client exits, not at the same instant."""
    deadline = time.monotonic() + within
    while our_backends(dsn) and time.monotonic() < deadline:
        time.sleep(0.1)
    return our_backends(dsn) == 0


def dblink_available(dsn: str) -> bool:
    return bool(count(dsn, "SELECT count(*) FROM pg_available_extensions WHERE name = 'dblink'"))


# -- 2. no write through a second connection ----------------------------------------------

def test_dblink_exec_in_where_is_refused_and_the_row_stays(facts_db, tmp_path):
    if not dblink_available(facts_db):
        pytest.skip("the dblink extension is not available on this server")
    admin(facts_db, "CREATE EXTENSION dblink")
    target = facts_db.rsplit("/", 1)[1]
    where = f"dblink_exec('dbname={target} host=127.0.0.1 user=postgres', 'DELETE FROM agent_facts WHERE id=49') IS NOT NULL"
    source_toml(tmp_path, facts_db, f'where = """{where}"""')
    proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path)
    assert_clean_error(proc, "sources[0].where", "dblink_exec()")
    assert count(facts_db, "SELECT count(*) FROM agent_facts WHERE id = 49") == 1


def test_a_role_that_can_use_dblink_is_warned_about(facts_db, tmp_path):
    if not dblink_available(facts_db):
        pytest.skip("the dblink extension is not available on this server")
    admin(facts_db, "CREATE EXTENSION dblink")
    source_toml(tmp_path, facts_db)
    proc = run("audit", "--config", "memwatch.toml", "--format", "json", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "WARNING: this role is a superuser and may call dblink" in proc.stderr


def test_a_select_only_role_gets_no_warning(facts_db, tmp_path):
    role = "mw_reader_" + str(os.getpid())
    admin(facts_db, f"DROP ROLE IF EXISTS {role}", f"CREATE ROLE {role} LOGIN",
          f"GRANT SELECT ON agent_facts TO {role}")
    try:
        source_toml(tmp_path, facts_db.replace("postgres@", f"{role}@"))
        proc = run("audit", "--config", "memwatch.toml", "--format", "json", cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        assert "WARNING" not in proc.stderr
    finally:
        admin(facts_db, f"DROP OWNED BY {role}", f"DROP ROLE {role}")


# -- 3. every read ends ------------------------------------------------------------------------

def test_a_read_blocked_by_a_lock_ends_after_timeout_seconds(facts_db, tmp_path):
    source_toml(tmp_path, facts_db, "timeout_seconds = 1")
    holder = psycopg.connect(facts_db)
    try:
        holder.execute("LOCK TABLE agent_facts IN ACCESS EXCLUSIVE MODE")
        proc = run("audit", "--config", "memwatch.toml", cwd=tmp_path, timeout=60)
        assert_clean_error(proc, "timeout_seconds = 1")
    finally:
        holder.rollback()
        holder.close()
    assert backends_gone(facts_db, within=10)


def test_a_killed_client_leaves_no_backend_running(facts_db, tmp_path):
    admin(facts_db, "CREATE VIEW slow_facts AS SELECT f.* FROM agent_facts f, pg_sleep(3600) s")
    source_toml(tmp_path, facts_db, "timeout_seconds = 3600", table="slow_facts")
    proc = subprocess.Popen([EXE, "audit", "--config", "memwatch.toml"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while our_backends(facts_db) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert our_backends(facts_db) >= 1, "the audit never reached the server"
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert backends_gone(facts_db)        # client_connection_check_interval notices the dead client


def test_the_daemon_warns_about_a_privileged_role_too(facts_db, tmp_path):
    source_toml(tmp_path, facts_db)
    proc = run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "WARNING: this role is a superuser" in proc.stderr
