"""`memwatch-overlay audit` through the installed console script (a real subprocess)."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).with_name("memwatch-overlay")
AS_OF = "2026-11-29"


def run(*args, cwd=None):
    """The console script, run from a scratch folder so zero-config overlays land there."""
    if cwd is None:
        import tempfile
        cwd = tempfile.mkdtemp(prefix="mw-cli-")
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "120"}, timeout=120)


@pytest.fixture
def example(tmp_path):
    """The bundled example store and config, copied."""
    shutil.copy(ROOT / "examples" / "my_agent.db", tmp_path / "my_agent.db")
    text = (ROOT / "memwatch.toml").read_text().replace("examples/my_agent.db", "my_agent.db")
    (tmp_path / "memwatch.toml").write_text(text)
    return tmp_path


def assert_one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("Error: ")
    for needle in needles:
        assert needle in first, first
    assert proc.stdout == ""


def test_config_audit_json_contract(example):
    proc = run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["version"] == 1 and report["as_of"].startswith("2026-11-29")
    assert set(report["summary"]) >= {"total", "fresh", "aging", "stale", "expired", "contradicted", "avg_freshness"}
    assert report["summary"]["total"] == 12 == len(report["facts"])
    fact = next(f for f in report["facts"] if f["text"] == "Works at Google as a product analyst")
    assert fact["pk"] == {"id": "1"} and fact["ref"] == "bot:agent_facts:1"
    assert fact["category"] == "employment" and fact["subject"] == "u1" and fact["key"] == "employer"
    # 540 days at a 90-day half-life, 3 hits, used 200 days ago; and over the 540-day ttl anyway
    assert fact["label"] == "expired"
    labels = [f["label"] for f in report["facts"]]
    assert report["summary"]["expired"] == labels.count("expired")
    assert report["thresholds"] == {"max_stale_ratio": 0.5, "max_contradictions": 5}
    assert report["passed"] is True and isinstance(report["contradictions"], list)


def test_gate_flags_override_config_and_exit_1(example):
    proc = run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF, "--max-stale", "1")
    assert proc.returncode == 1
    assert "max_stale 1" in proc.stdout


def test_table_output_and_output_file(example):
    out = example / "report.json"
    proc = run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF, "--format", "json",
               "--output", out)
    assert proc.returncode == 0 and proc.stdout == ""
    assert json.loads(out.read_text())["summary"]["total"] == 12
    table = run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF)
    assert "memwatch-overlay audit" in table.stdout and "Works at Google" in table.stdout


def test_report_reads_the_overlay_without_the_source(example):
    run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF)
    (example / "my_agent.db").unlink()
    proc = run("report", "--config", example / "memwatch.toml", "--as-of", AS_OF, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["total"] == 12


def test_audit_leaves_the_store_untouched(example):
    db = example / "my_agent.db"
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    assert run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF).returncode == 0
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before
    assert not list(example.glob("my_agent.db-*"))   # no journal or WAL left behind


def test_missing_file(tmp_path):
    assert_one_line_error(run("audit", tmp_path / "nope.db"), "nope.db", "no such file")


def test_not_sqlite(tmp_path):
    bad = tmp_path / "agent.db"
    bad.write_bytes(b"this is not a database at all" * 100)
    assert_one_line_error(run("audit", bad), "agent.db", "not a SQLite database")


def test_unrecognised_store_lists_tables_and_prints_snippet(tmp_path):
    db = tmp_path / "odd.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE blobs (k INTEGER PRIMARY KEY, payload BLOB)")
    proc = run("audit", db)
    assert_one_line_error(proc, "blobs(k, payload)")
    assert "[[sources]]" in proc.stderr and 'table = "blobs"' in proc.stderr


def write_config(tmp_path, **source):
    shutil.copy(ROOT / "examples" / "my_agent.db", tmp_path / "my_agent.db")
    body = {"name": "bot", "connector": "sqlite", "path": "my_agent.db", "table": "agent_facts",
            "id": "id", "text": "fact_value", "created_at": "created_at", **source}
    lines = ["[[sources]]"] + [f"{k} = {json.dumps(v)}" for k, v in body.items() if v is not None]
    (tmp_path / "memwatch.toml").write_text("\n".join(lines) + "\n")
    return tmp_path / "memwatch.toml"


def test_unknown_table(tmp_path):
    assert_one_line_error(run("audit", "--config", write_config(tmp_path, table="facts")),
                          "no table 'facts'", "agent_facts")


def test_missing_column(tmp_path):
    assert_one_line_error(run("audit", "--config", write_config(tmp_path, text="memory")),
                          "text = 'memory'", "no column 'memory'", "fact_value")


def test_invalid_toml(tmp_path):
    (tmp_path / "memwatch.toml").write_text("[[sources]\nname = \n")
    assert_one_line_error(run("audit", "--config", tmp_path / "memwatch.toml"), "memwatch.toml", "invalid TOML")


def test_unknown_key_in_config(tmp_path):
    cfg = write_config(tmp_path, colour="red")
    assert_one_line_error(run("audit", "--config", cfg), "sources[0].colour", "unknown key")


@pytest.mark.parametrize("query,needle", [
    ("UPDATE agent_facts SET fact_value = 'x'", "must be a SELECT"),
    ("SELECT * FROM agent_facts; DELETE FROM agent_facts", "exactly one SELECT"),
])
def test_query_must_be_one_select(tmp_path, query, needle):
    cfg = write_config(tmp_path, table=None, query=query)
    assert_one_line_error(run("audit", "--config", cfg), needle)
    with sqlite3.connect(tmp_path / "my_agent.db") as conn:   # nothing was written
        assert conn.execute("SELECT count(*) FROM agent_facts WHERE fact_value = 'x'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM agent_facts").fetchone()[0] == 12


def test_query_source_works(tmp_path):
    cfg = write_config(tmp_path, table=None, subject="user_id",
                       query="SELECT id, user_id, fact_value, created_at FROM agent_facts WHERE user_id = 'u2'")
    proc = run("audit", "--config", cfg, "--as-of", AS_OF, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)["facts"]
    assert len(facts) == 4 and {f["subject"] for f in facts} == {"u2"}


def test_bad_input_keeps_the_overlay(example):
    ok = run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF)
    assert ok.returncode == 0
    (example / "broken.toml").write_text("[[sources]]\nname = 'bot'\n")
    assert run("audit", "--config", example / "broken.toml").returncode == 2
    (example / "my_agent.db").write_bytes(b"garbage" * 1000)
    assert run("audit", "--config", example / "memwatch.toml", "--as-of", AS_OF).returncode == 2
    proc = run("report", "--config", example / "memwatch.toml", "--as-of", AS_OF, "--format", "json")
    assert json.loads(proc.stdout)["summary"]["total"] == 12


def test_bad_as_of(example):
    proc = run("audit", "--config", example / "memwatch.toml", "--as-of", "last tuesday")
    assert proc.returncode == 2 and "--as-of" in proc.stderr and "Traceback" not in proc.stderr


def test_every_command_has_help():
    from memwatch_overlay.overlay.cli.main import main
    for name, command in main.commands.items():
        assert command.help, f"{name} has no help"
        assert run(name, "--help").returncode == 0
