"""The daemon and incremental sync under hostile conditions (issue 16 points 3, 14, 15).

Real daemon processes through the console script, against real SQLite stores.
"""
from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

from hostile import EXE, assert_clean_error, config, make_store, run, sqlite_source

INFINITE_WHERE = ('where = "id IN (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) '
                  'SELECT n FROM r WHERE n < 0)"\ntimeout_seconds = 1')


def texts(tmp_path: Path, source: str) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{tmp_path / 'overlay.db'}?mode=ro", uri=True)
    try:
        return {json.loads(pk)["id"]: text for pk, text in conn.execute(
            "SELECT f.pk, f.text FROM facts f JOIN sources s ON s.id = f.source_id WHERE s.name = ?", (source,))}
    finally:
        conn.close()


# -- 14. a second write within the same second ----------------------------------------------

def test_daemon_once_sees_a_second_write_at_the_same_updated_at(tmp_path):
    db = tmp_path / "bot.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, updated_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?)",
                     [(1, "lives in Paris", "2026-11-01 10:00:00"), (2, "works at Google", "2026-11-02 10:00:00")])
    conn.commit()
    config(tmp_path, '[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "bot.db"\ntable = "memories"\n'
                     'id = "id"\ntext = "content"\nupdated_at = "updated_at"\n')
    assert run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path).returncode == 0
    conn.execute("UPDATE memories SET content = 'works at Apple' WHERE id = 2")   # same updated_at W
    conn.commit()
    for _ in range(2):
        proc = run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert texts(tmp_path, "bot")["2"] == "works at Apple"
    conn.close()


# -- 3. a stuck source does not hold up the others --------------------------------------------

def test_daemon_once_syncs_the_good_source_and_reports_the_stuck_one(tmp_path):
    make_store(tmp_path / "good.db", n=10)
    make_store(tmp_path / "stuck.db", n=10)
    config(tmp_path, sqlite_source("good", "good.db") + sqlite_source("stuck", "stuck.db", extra=INFINITE_WHERE))
    proc = run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "stuck:" in proc.stderr and "timeout_seconds = 1" in proc.stderr
    assert len(texts(tmp_path, "good")) == 10


def test_running_daemon_keeps_syncing_while_a_source_is_stuck(tmp_path):
    make_store(tmp_path / "good.db", n=10)
    make_store(tmp_path / "stuck.db", n=10)
    config(tmp_path, sqlite_source("good", "good.db", extra="poll_seconds = 0.2")
           + sqlite_source("stuck", "stuck.db", extra=INFINITE_WHERE)
           + "\n[daemon]\nbackoff_initial_seconds = 0.5\nbackoff_max_seconds = 2\nerror_log_seconds = 0\n")
    log = open(tmp_path / "daemon.log", "w")
    proc = subprocess.Popen([EXE, "daemon", "--config", "memwatch.toml", "--log-format", "json"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if len(texts(tmp_path, "good")) == 10:
                    break
            except sqlite3.OperationalError:
                pass
            time.sleep(0.2)
        conn = sqlite3.connect(tmp_path / "good.db")
        conn.execute("INSERT INTO memories VALUES (11, 'u1', 'general', 'k11', 'moved to Berlin', '2026-11-28')")
        conn.commit()
        conn.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "11" not in texts(tmp_path, "good"):
            time.sleep(0.2)
        assert texts(tmp_path, "good").get("11") == "moved to Berlin"
        def errors():
            events = [json.loads(ln) for ln in (tmp_path / "daemon.log").read_text().splitlines() if ln.strip()]
            return [e for e in events if e.get("event") == "error" and e.get("source") == "stuck"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(e.get("attempt", 0) >= 2 for e in errors()):
            time.sleep(0.2)
        assert errors() and "timeout_seconds" in errors()[0]["error"]
        assert any(e.get("attempt", 0) >= 2 for e in errors()), "the stuck source is retried"
        assert proc.poll() is None, "the daemon keeps running"
    finally:
        proc.kill()
        proc.wait(10)
        log.close()


# -- 15. smaller ----------------------------------------------------------------------------------

def test_daemon_against_a_future_schema_overlay_prints_only_the_real_error(tmp_path):
    make_store(tmp_path / "bot.db", n=5)
    config(tmp_path, sqlite_source())
    assert run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path).returncode == 0
    conn = sqlite3.connect(tmp_path / "overlay.db")
    conn.execute("PRAGMA user_version = 999")
    conn.commit()
    conn.close()
    proc = run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path)
    assert_clean_error(proc, "newer")
    assert "daemon stopped" not in proc.stderr and "None" not in proc.stderr


def test_deletion_pass_counts_only_true_misses(tmp_path):
    store = make_store(tmp_path / "bot.db", n=5)
    conn = sqlite3.connect(store)
    conn.execute("UPDATE memories SET content = '' WHERE id = 3")    # a row that is no memory
    conn.commit()
    config(tmp_path, sqlite_source())
    assert run("daemon", "--once", "--config", "memwatch.toml", cwd=tmp_path).returncode == 0
    conn.execute("UPDATE memories SET content = 'memory 1 again' WHERE id = 1")
    conn.commit()
    conn.close()
    proc = run("daemon", "--once", "--config", "memwatch.toml", "--log-format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    passes = [json.loads(ln) for ln in proc.stderr.splitlines() if '"deletions"' in ln]
    assert all(p["missing"] == 0 for p in passes), passes
    assert "missing row(s) synced" not in proc.stderr
