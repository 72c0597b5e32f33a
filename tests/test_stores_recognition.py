"""Recognising stores: the no-preset hint, a folder of stores, zero-config names, mem0's default
qdrant place, subject mapping in the config, category values that are not categories, and a
cron-style `daemon --once` that does the update scan."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import frameworkstores  # noqa: F401  (the frameworks' environment: no telemetry, mem0's home in a temp folder)
from memwatch_overlay.connectors.folders import folder_source_name, scan_folder
from memwatch_overlay.connectors.recognize import detect, hint_table, mapping_snippet, no_match_message
from memwatch_overlay.connectors.subjects import SubjectMapping
from memwatch_overlay.core.errors import ConfigError, ConnectorError
from memwatch_overlay.rules.categorize import Categorizer
from memwatch_overlay.rules.config import parse_config
from storegen import run

MANIFEST_TIME = "2026-11-29T15:57:41Z"     # the shared memlife fixture's reference time


def chroma_like(path: Path, extra_tables: int = 0) -> Path:
    """A store no preset knows, whose first table (by name) is a lock table."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE acquire_write (id INTEGER PRIMARY KEY, lock_status INTEGER NOT NULL)")
        conn.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, payload BLOB, added TEXT, kind TEXT)")
        conn.execute("CREATE TABLE notes (nid INTEGER PRIMARY KEY, body TEXT, written TEXT, owner TEXT)")
        for i in range(extra_tables):
            conn.execute(f"CREATE TABLE t{i:02d} (a INTEGER, b INTEGER, c INTEGER)")
    conn.close()
    return path


def test_the_hint_names_a_memory_table_not_a_lock_table(tmp_path):
    det = detect(str(chroma_like(tmp_path / "app.db")))
    assert det.matches == [] or det.matches[0].preset == "generic"
    assert hint_table(det.tables).name == "notes"
    snippet = mapping_snippet(det)
    assert 'table = "notes"' in snippet and "acquire_write" not in snippet
    assert 'id = "nid"' in snippet


def test_the_no_match_message_says_how_many_tables_it_left_out(tmp_path):
    det = detect(str(chroma_like(tmp_path / "app.db", extra_tables=20)))
    message = no_match_message(det)
    assert message.count("(") - message.count("(saw") == 12          # twelve tables shown
    assert "... and 11 more" in message


def test_audit_of_a_folder_reads_each_memlife_database_as_its_own_source(agent_store, tmp_path):
    folder = agent_store("memlife")
    proc = run("audit", folder, "--as-of", MANIFEST_TIME, "--overlay", tmp_path / "o.db", "--format", "json",
               cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    names = [s["name"] for s in report["sources"]]
    assert names == ["memlife-u_amara", "memlife-u_priya", "memlife-u_tomasz"]
    for fact in report["facts"]:
        assert fact["source"] == "memlife-" + fact["subject"]            # each user its own subject
    manifest = json.loads((folder / "manifest.json").read_text())
    ids = {(f["source"], f["pk"]["id"]) for f in report["facts"]}
    for item in manifest["items"]:
        user = item["source"]["file"].split("/")[0]
        assert ("memlife-" + user, item["source"]["pk"]["id"]) in ids


def test_init_of_a_folder_writes_every_store_and_audits_the_same(agent_store, tmp_path):
    folder = agent_store("memlife")
    proc = run("init", folder, "--output", tmp_path / "memwatch.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "3 sources" in proc.stdout
    direct = run("audit", folder, "--as-of", MANIFEST_TIME, "--overlay", "a.db", "--format", "json", cwd=tmp_path)
    configured = run("audit", "--config", "memwatch.toml", "--as-of", MANIFEST_TIME, "--overlay", "b.db",
                     "--format", "json", cwd=tmp_path)
    assert configured.returncode == 0, configured.stderr
    refs = lambda proc: sorted((f["ref"], f["subject"], f["label"]) for f in json.loads(proc.stdout)["facts"])
    assert refs(direct) == refs(configured)


def test_a_folder_without_a_known_store_says_what_it_saw(tmp_path):
    chroma_like(tmp_path / "app.db")
    (tmp_path / "notes.txt").write_text("not a store")
    proc = run("audit", tmp_path, "--overlay", tmp_path / "o.db", cwd=tmp_path.parent)
    assert proc.returncode == 2
    assert "no known agent store in this folder" in proc.stderr and "app.db" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_folder_names_are_stable_and_drop_the_preset_word(tmp_path):
    for rel in ("u_priya/memlife.db", "bots/support/store.sqlite"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    assert folder_source_name("memlife", tmp_path, tmp_path / "u_priya/memlife.db") == "memlife-u_priya"
    assert folder_source_name("langgraph", tmp_path, tmp_path / "bots/support/store.sqlite") == \
        "langgraph-bots-support-store"
    chroma = tmp_path / "chroma"
    chroma.mkdir()
    (chroma / "chroma.sqlite3").write_bytes(b"")
    assert folder_source_name("chroma", tmp_path, chroma / "chroma.sqlite3") == "chroma"


def test_a_folder_scan_skips_what_stores_keep_beside_them(agent_store):
    folder = agent_store("mem0")                 # history.db + qdrant/collection/*/storage.sqlite
    scan = scan_folder(folder)
    assert [(p.name, d.matches[0].preset) for p, d in scan.stores] == [("history.db", "mem0")]
    assert all("qdrant" not in p.parts for p, _ in scan.skipped)


def test_zero_config_names_documented_as_they_are(agent_store, tmp_path):
    """docs/stores.md says a detected store is named after its preset, a generic one after its file."""
    folder = agent_store("langgraph")
    proc = run("audit", folder / "langgraph_store.sqlite", "--overlay", "o.db", "--format", "json", cwd=tmp_path)
    assert [s["name"] for s in json.loads(proc.stdout)["sources"]] == ["langgraph"]
    docs = (Path(__file__).parents[1] / "docs" / "stores.md").read_text()
    assert "named after its preset" in docs


def test_crewai_0x_says_it_has_no_user_and_a_pattern_finds_it(agent_store, tmp_path):
    folder = agent_store("crewai")
    manifest = json.loads((folder / "manifest.json").read_text())
    proc = run("audit", folder / "long_term_memory_storage.db", "--as-of", manifest["reference_time"],
               "--overlay", "o.db", "--format", "json", cwd=tmp_path)
    assert "keeps no user" in proc.stderr
    (tmp_path / "memwatch.toml").write_text(
        f'[[sources]]\nname = "crew"\nconnector = "sqlite"\npreset = "crewai"\n'
        f'path = "{folder / "long_term_memory_storage.db"}"\nsubject = "task_description"\n'
        "subject_pattern = '\\((u_[a-z]+)\\)'\n")
    proc = run("audit", "--config", "memwatch.toml", "--as-of", manifest["reference_time"], "--overlay", "o2.db",
               "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "keeps no user" not in proc.stderr
    subjects = {f["pk"]["id"]: f["subject"] for f in json.loads(proc.stdout)["facts"]}
    assert {subjects[str(i["source"]["pk"]["id"])] for i in manifest["items"]} == set(manifest["users"])
    for item in manifest["items"]:
        assert subjects[str(item["source"]["pk"]["id"])] == item["user"]


# -- mem0's qdrant ---------------------------------------------------------------------------
def test_mem0_default_qdrant_place_is_mem0s_own_default():
    qdrant = pytest.importorskip("mem0.configs.vector_stores.qdrant", reason="the test-integrations extra")
    from memwatch_overlay.connectors.presets import mem0 as preset
    assert str(preset.MEM0_DEFAULT_QDRANT) == qdrant.QdrantConfig.model_fields["path"].default


@pytest.mark.integrations
def test_mem0_finds_qdrant_where_mem0_puts_it_by_default(tmp_path, monkeypatch):
    pytest.importorskip("mem0", reason="pip install 'memwatch-overlay[test-integrations]'")
    import frameworkstores as fs
    import storeplan as plan
    from memwatch_overlay.connectors.presets import mem0 as preset
    from memwatch_overlay.connectors.recognize import source_from_detection
    from memwatch_overlay.connectors.registry import make_connector
    default = tmp_path / "tmp-qdrant"          # stands in for /tmp/qdrant, which other runs share
    monkeypatch.setattr(preset, "MEM0_DEFAULT_QDRANT", default)
    home = tmp_path / "home" / ".mem0"          # ~/.mem0/history.db: nothing beside it
    home.mkdir(parents=True)
    fs.mem0(home / "history.db", default)
    conn = make_connector(source_from_detection(detect(str(home / "history.db")), name="mem0"))
    conn.open()
    live = [r for r in conn.read(None) if r.status != "deleted"]
    conn.close()
    assert {r.subject for r in live} == set(plan.USERS) and not conn.warnings


# -- config: subjects, categories -------------------------------------------------------------
def test_subject_mapping_pattern_and_map():
    import re
    m = SubjectMapping(re.compile(r"^chat-(?P<subject>[^-]+)-"), {"3f2a": "u_erin"})
    assert m.apply("chat-u_farid-2026-11-20") == "u_farid"
    assert m.apply("3f2a") == "u_erin"
    assert m.apply("other") == "other" and m.apply(None) is None
    assert SubjectMapping(re.compile(r"^(u_\w+)/"), None).apply("u_chen/42") == "u_chen"


def test_subject_mapping_and_aliases_are_validated():
    base = {"name": "s", "connector": "sqlite", "path": "x.db"}
    with pytest.raises(ConfigError, match=r"sources\[0\]\.subject_pattern.*invalid regex"):
        parse_config({"sources": [{**base, "subject_pattern": "(unclosed"}]})
    with pytest.raises(ConfigError, match=r"subject_map\.a"):
        parse_config({"sources": [{**base, "subject_map": {"a": 3}}]})
    cfg = parse_config({"categories": {"preference": {"aliases": ["Preferences", "likes"]}}})
    assert cfg.category_aliases == {"preferences": "preference", "likes": "preference"}
    with pytest.raises(ConfigError, match="already maps to 'preference'"):
        parse_config({"categories": {"preference": {"aliases": ["x"]}, "skill": {"aliases": ["x"]}}})


def test_unknown_category_values_are_told_once_and_aliases_map_them():
    cat = Categorizer(known={"preference", "general"}, aliases={"preferences": "preference"})
    assert cat.categorize("s", None, "likes tea", "Preferences") == "preference"
    assert cat.categorize("s", None, "likes tea", "units") != "units"
    cat.categorize("s", None, "x", "units")
    assert cat.take_unknown() == {"units": 2}
    assert cat.take_unknown() == {}                 # told once


def test_audit_warns_about_category_values_that_are_not_categories(tmp_path):
    with sqlite3.connect(tmp_path / "m.db") as conn:
        conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, created_at TEXT, category TEXT)")
        conn.executemany("INSERT INTO memories VALUES (?, ?, '2026-01-01', ?)",
                         [(1, "likes tea", "preferences"), (2, "lives in Oslo", "preferences"), (3, "x", "general")])
    conn.close()
    proc = run("audit", "m.db", "--overlay", "o.db", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("not categories") == 1 and "'preferences' (2)" in proc.stderr
    (tmp_path / "memwatch.toml").write_text(
        '[categories.preference]\naliases = ["preferences"]\n[[sources]]\nname = "m"\nconnector = "sqlite"\n'
        'path = "m.db"\ntable = "memories"\nid = "id"\ntext = "content"\ncreated_at = "created_at"\n'
        'category = "category"\n')
    proc = run("audit", "--config", "memwatch.toml", "--overlay", "o2.db", "--format", "json", cwd=tmp_path)
    assert "not categories" not in proc.stderr
    cats = {f["pk"]["id"]: f["category"] for f in json.loads(proc.stdout)["facts"]}
    assert cats == {"1": "preference", "2": "preference", "3": "general"}


# -- daemon --once ---------------------------------------------------------------------------
@pytest.mark.slow
def test_daemon_once_does_the_update_scan(tmp_path):
    with sqlite3.connect(tmp_path / "bot.db") as conn:     # updated_at has no index: scans are deferred
        conn.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, fact TEXT, created_at TEXT, updated_at TEXT)")
        conn.executemany("INSERT INTO facts VALUES (?, ?, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
                         [(i, f"fact {i}") for i in range(1, 6)])
    conn.close()
    (tmp_path / "memwatch.toml").write_text(
        '[overlay]\npath = "o.db"\n[daemon]\nupdate_scan_seconds = 3600\n[[sources]]\nname = "bot"\n'
        'connector = "sqlite"\npath = "bot.db"\ntable = "facts"\nid = "id"\ntext = "fact"\n'
        'created_at = "created_at"\nupdated_at = "updated_at"\n')
    assert run("daemon", "--config", "memwatch.toml", "--once", cwd=tmp_path).returncode == 0
    with sqlite3.connect(tmp_path / "bot.db") as conn:
        conn.execute("UPDATE facts SET fact = 'edited', updated_at = '2026-02-01 00:00:00' WHERE id = 3")
    conn.close()
    assert run("daemon", "--config", "memwatch.toml", "--once", cwd=tmp_path).returncode == 0
    report = json.loads(run("report", "--config", "memwatch.toml", "--format", "json", cwd=tmp_path).stdout)
    assert {f["pk"]["id"]: f["text"] for f in report["facts"]}["3"] == "edited"


def test_a_plain_directory_is_not_a_store_file(tmp_path):
    from memwatch_overlay.connectors.recognize import kind_of
    with pytest.raises(ConnectorError, match="no LanceDB table"):
        kind_of(str(tmp_path))


def test_each_preset_s_declared_store_kind_is_its_class_s_kind():
    from memwatch_overlay.connectors import registry

    for name in registry.BUILTIN_PRESETS:
        for spec in registry._specs(name):
            assert registry.preset_spec_kind(spec) == registry.kind_of_class(registry._load(spec)), spec


def test_recognising_a_sqlite_store_imports_no_postgres_or_lancedb_module(tmp_path):
    """A console call on a SQLite file does not pay psycopg's (or lancedb's) import."""
    import subprocess
    import sys

    db = tmp_path / "bot.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, memory TEXT, created_at TEXT)")
    conn.close()
    code = ("import sys\nfrom memwatch_overlay.connectors.recognize import detect\n"
            f"det = detect({str(db)!r})\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'lancedb')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
