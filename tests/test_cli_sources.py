"""`sources detect`, `connectors` and `init` through the console script."""
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine.init_config import init_config, strip_password
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.rules.config import load_config

EXE = Path(sys.executable).with_name("memwatch-overlay")
AS_OF = "2026-11-29T15:57:42Z"


def run(*args, cwd=None):
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200"}, timeout=120)


@pytest.fixture
def notes_json(tmp_path):
    """A home-made JSON store: no preset but the generic heuristics map it."""
    p = tmp_path / "notes.json"
    p.write_text(json.dumps({"memories": [
        {"id": "n1", "memory": "Works at Google as an analyst", "user_id": "u1", "created_at": "2025-05-01"},
        {"id": "n2", "memory": "Joined Stripe last week", "user_id": "u1", "created_at": "2026-11-22"},
        {"id": "n3", "memory": "Likes green tea", "user_id": "u2", "created_at": "2026-02-01"}]}))
    return p


def test_sources_detect_mcp(agent_store):
    store = agent_store("mcp-memory") / "memory.jsonl"
    proc = run("sources", "detect", store, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["kind"] == "json" and data["matches"][0]["preset"] == "mcp-memory"
    assert any("observations" in r for r in data["matches"][0]["reasons"])
    lines = {t["name"]: t["columns"] for t in data["tables"]}
    assert {"name", "entityType", "observations"} <= set(lines["$"])
    table = run("sources", "detect", store)
    assert "1. mcp-memory score 1.00" in table.stdout and "used by audit and init" in table.stdout


def test_sources_detect_generic_json_and_sqlite(notes_json, tmp_path):
    data = json.loads(run("sources", "detect", notes_json, "--format", "json").stdout)
    best = data["matches"][0]
    assert best["preset"] == "generic-json"
    assert best["mapping"] == {"records": "memories[*]", "text": "memory", "created_at": "created_at",
                               "id": ["id"], "subject": "user_id"}
    db = tmp_path / "facts.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, content TEXT, created_at TEXT)")
    data = json.loads(run("sources", "detect", db, "--format", "json").stdout)
    assert data["kind"] == "sqlite" and data["matches"][0]["preset"] == "generic"


def test_sources_detect_without_a_match_shows_a_mapping(tmp_path):
    p = tmp_path / "odd.json"
    p.write_text(json.dumps([{"a": 1, "b": "x"}]))
    proc = run("sources", "detect", p)
    assert proc.returncode == 0
    assert "no preset matches" in proc.stdout and 'records = "[*]"' in proc.stdout
    proc = run("audit", p, "--overlay", tmp_path / "o.db")
    assert proc.returncode == 2 and "no known agent store recognised" in proc.stderr
    assert 'connector = "json"' in proc.stderr and "Traceback" not in proc.stderr


def test_sources_detect_bad_target(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"memories": [')
    proc = run("sources", "detect", bad)
    assert proc.returncode == 2 and proc.stderr.startswith(f"Error: {bad}:1:")
    proc = run("sources", "detect", tmp_path / "nope.db")
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_connectors_lists_builtins_with_origin():
    proc = run("connectors", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    kinds = {c["name"]: c for c in data["connectors"]}
    assert {"sqlite", "json", "postgres"} <= set(kinds)
    assert kinds["json"]["origin"].startswith("built-in (memwatch_overlay.connectors.json_file")
    assert kinds["json"]["available"] is True and kinds["json"]["description"]
    presets = {p["name"]: p for p in data["presets"]}
    assert presets["mcp-memory"]["kind"] == "json"
    assert presets["mem0-pgvector"]["kind"] == "postgres"
    assert presets["langgraph-postgres"]["kind"] == "postgres"
    assert "mcp-memory" in run("connectors").stdout


def test_preset_of_another_kind_is_a_config_error(tmp_path):
    cfg = tmp_path / "memwatch.toml"
    (tmp_path / "m.json").write_text("[]")
    cfg.write_text('[[sources]]\nname = "x"\nconnector = "json"\npath = "m.json"\npreset = "langgraph"\n')
    proc = run("audit", "--config", cfg, "--overlay", tmp_path / "o.db")
    assert proc.returncode == 2
    assert "preset 'langgraph' reads sqlite stores" in proc.stderr and "mcp-memory" in proc.stderr


# -- init ----------------------------------------------------------------------------------

def _summary_and_labels(proc):
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    return report["summary"], sorted((f["ref"], f["label"], f["category"], f["subject"]) for f in report["facts"])


@pytest.mark.parametrize("kind", ["mcp", "generic-json", "langgraph-sqlite"])
def test_init_output_reproduces_zero_config_audit(kind, agent_store, notes_json, tmp_path):
    target = {"mcp": lambda: agent_store("mcp-memory") / "memory.jsonl",
              "generic-json": lambda: notes_json,
              "langgraph-sqlite": lambda: agent_store("langgraph") / "langgraph_store.sqlite"}[kind]()
    work = tmp_path / "conf"
    work.mkdir()
    proc = run("init", target, cwd=work)
    assert proc.returncode == 0, proc.stderr
    cfg = work / "memwatch.toml"
    load_config(cfg)
    zero = run("audit", target, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "a.db")
    again = run("audit", "--config", cfg, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "b.db")
    first, second = _summary_and_labels(zero), _summary_and_labels(again)
    assert first == second and first[0]["total"] > 0


def test_init_file_is_commented_and_relative(notes_json, tmp_path):
    result = init_config(str(notes_json), tmp_path / "memwatch.toml")
    text = result.path.read_text()
    assert 'path = "notes.json"' in text                   # relative to the config's folder
    assert 'records = "memories[*]"' in text and 'text = "memory"' in text
    assert "# [ci]" in text and "# [categories.employment]" in text and "generic-json" in text
    cfg = load_config(result.path)
    assert cfg.sources[0].name == "notes" and cfg.sources[0].id == ["id"] and cfg.ci == {}


def test_init_refuses_to_overwrite(notes_json, tmp_path):
    out = tmp_path / "memwatch.toml"
    out.write_text("# mine\n")
    proc = run("init", notes_json, "--output", out)
    assert proc.returncode == 2 and "--force" in proc.stderr and out.read_text() == "# mine\n"
    proc = run("init", notes_json, "--output", out, "--force")
    assert proc.returncode == 0 and "[[sources]]" in out.read_text()
    with pytest.raises(ConfigError):
        init_config(str(notes_json), out)


def test_init_without_a_match_writes_nothing(tmp_path):
    p = tmp_path / "odd.json"
    p.write_text(json.dumps([{"a": 1}]))
    proc = run("init", p, "--output", tmp_path / "memwatch.toml")
    assert proc.returncode == 2 and "no known agent store recognised" in proc.stderr
    assert not (tmp_path / "memwatch.toml").exists()


@pytest.mark.parametrize("dsn, clean", [
    ("postgresql://bot:s3cr3t@db:5432/app", "postgresql://bot@db:5432/app"),
    ("postgresql://bot@db/app", "postgresql://bot@db/app"),
    ("host=db password='a b' dbname=app", "host=db dbname=app"),
])
def test_strip_password(dsn, clean):
    assert strip_password(dsn) == (clean, dsn != clean)


def test_sources_detect_prints_valid_toml_at_any_width_and_whatever_the_path(tmp_path):
    import tomllib
    folder = tmp_path / 'my "odd" \\ folder with a rather long name to wrap at forty columns'
    folder.mkdir()
    db = folder / "notes.db"
    with sqlite3.connect(db) as conn:       # a memory column, no time column: no preset matches
        conn.execute('CREATE TABLE "user notes" (id INTEGER PRIMARY KEY, user_id TEXT, text TEXT, '
                     "extra_column_with_a_long_name TEXT, another_long_column_name TEXT)")
    proc = subprocess.run([str(EXE), "sources", "detect", str(db)], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "COLUMNS": "40"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    config = tomllib.loads(proc.stdout)                   # the whole of stdout, as `> memwatch.toml` keeps it
    [source] = config["sources"]
    assert source["path"] == str(db) and source["table"] == "user notes"
    # what the column names make obvious is filled in
    assert source["text"] == "text" and source["subject"] == "user_id" and source["id"] == "id"
    assert "no preset matches" in proc.stdout


def test_a_table_whose_only_time_column_is_updated_at_is_recognised(tmp_path):
    db = tmp_path / "notes.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, user_id TEXT, text TEXT, updated_at TEXT)")
        conn.execute("INSERT INTO notes VALUES (1, 'u1', 'Works at Google', '2025-01-01T00:00:00Z')")
        conn.execute("INSERT INTO notes VALUES (2, 'u1', 'Joined Stripe last week', '2026-11-20T00:00:00Z')")
    data = json.loads(run("sources", "detect", db, "--format", "json").stdout)
    assert data["matches"][0]["preset"] == "generic"
    assert data["matches"][0]["mapping"]["created_at"] == "updated_at"
    proc = run("audit", db, "--overlay", tmp_path / "o.db", "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    facts = {f["text"]: f for f in json.loads(proc.stdout)["facts"]}
    assert facts["Works at Google"]["subject"] == "u1"
    assert facts["Works at Google"]["age_days"] > 600 > facts["Joined Stripe last week"]["age_days"]
