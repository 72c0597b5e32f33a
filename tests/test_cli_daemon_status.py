"""`memwatch-overlay daemon --once` and `status` through the console script."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).with_name("memwatch-overlay")
CONTRACT = {"name", "last_sync", "lag_seconds", "rows_seen", "rows_read_last_sync", "errors"}


def run(*args, cwd=None):
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "160"}, timeout=120)


def example(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "examples" / "my_agent.db", tmp_path / "my_agent.db")
    text = (ROOT / "memwatch.toml").read_text().replace("examples/my_agent.db", "my_agent.db")
    (tmp_path / "memwatch.toml").write_text(text)
    return tmp_path / "memwatch.toml"


def test_once_syncs_every_source_and_status_keeps_its_json_contract(tmp_path):
    conf = example(tmp_path)
    once = run("daemon", "--config", conf, "--once")
    assert once.returncode == 0, once.stderr
    assert once.stdout == "", "logs go to stderr"
    assert "bot: full sync read" in once.stderr and "daemon stopped (--once)" in once.stderr
    proc = run("status", "--config", conf, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (bot,) = data["sources"]
    assert CONTRACT <= set(bot)
    assert bot["name"] == "bot" and bot["rows_seen"] == 12 and bot["errors"] == 0
    assert bot["rows_read_last_sync"] >= 0 and bot["lag_seconds"] >= 0 and bot["last_sync"]
    assert data["daemon"]["running"] is False and data["daemon"]["stopped_at"]
    table = run("status", "--config", conf)
    assert table.returncode == 0 and "bot" in table.stdout and "no daemon running" in table.stdout


def test_daemon_without_config_says_how_to_get_one(tmp_path):
    proc = run("daemon", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("Error: --config: no memwatch.toml here")
    assert "Traceback" not in proc.stderr


def test_daemon_finds_memwatch_toml_in_the_current_folder(tmp_path):
    example(tmp_path)
    proc = run("daemon", "--once", "--log-format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stderr.splitlines()]
    assert [e["event"] for e in events][0] == "start" and events[-1]["event"] == "stop"
    assert any(e.get("event") == "full" and e["rows_read"] == 12 for e in events)


def test_a_missing_source_is_reported_and_once_exits_2(tmp_path):
    conf = example(tmp_path)
    (tmp_path / "my_agent.db").unlink()
    proc = run("daemon", "--config", conf, "--once")
    assert proc.returncode == 2
    assert "bot: " in proc.stderr and "no such file" in proc.stderr and "Traceback" not in proc.stderr
    status = json.loads(run("status", "--config", conf, "--format", "json").stdout)
    assert status["sources"][0]["errors"] == 1 and "no such file" in status["sources"][0]["last_error"]


def _expiries(db: Path) -> dict:
    import sqlite3
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT id, expires_at FROM agent_facts"))


def test_daemon_writes_back_only_for_sources_with_apply(tmp_path):
    """[[actions]] run through the daemon's after_sync hook: held without apply, written with it."""
    conf = example(tmp_path)
    db = tmp_path / "my_agent.db"
    before = _expiries(db)
    held = run("daemon", "--config", conf, "--once")
    assert held.returncode == 0, held.stderr
    assert _expiries(db) == before, "no apply = true: the store is not written"
    conf.write_text(conf.read_text().replace('name = "bot"', 'name = "bot"\napply = true', 1))
    applied = run("daemon", "--config", conf, "--once")
    assert applied.returncode == 0, applied.stderr
    after = _expiries(db)
    changed = {k for k in after if after[k] != before[k]}
    assert changed, "expired facts get expires_at written back"
    report = json.loads(run("report", "--config", conf, "--format", "json").stdout)
    expired = {f["pk"]["id"] for f in report["facts"] if f["label"] == "expired" and f["status"] != "deleted"}
    assert {str(k) for k in changed} <= expired
