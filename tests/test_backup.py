"""JSONL export and import of the overlay: a round trip reproduces it; bad input changes nothing."""
import json
import shutil

import pytest

from memwatch_overlay import MemWatch
from memwatch_overlay.overlay.engine import maintenance
from memwatch_overlay.overlay.store.backup import export_file, import_file
from memwatch_overlay.core.errors import ConfigError, OverlayError
from memwatch_overlay.overlay.store.database import SCHEMA_VERSION, OverlayStore
from conftest import AGENT_STORES
from storegen import run

AS_OF = "2026-11-29T15:57:40Z"


@pytest.fixture
def overlay(tmp_path):
    """An overlay holding an audited LangGraph store (with a refresh) and two API facts."""
    store = tmp_path / "langgraph_store.sqlite"
    shutil.copy(AGENT_STORES / "langgraph" / "langgraph_store.sqlite", store)
    path = tmp_path / "overlay.db"
    proc = run("audit", store, "--as-of", AS_OF, "--overlay", path, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    with MemWatch(db=str(path)) as mw:
        mw.add("employer", "Google", subject="u_priya")
        mw.add("city", "Jakarta")
    with OverlayStore(path) as s:
        ref = s.conn.execute("SELECT ref FROM facts WHERE source_id != (SELECT id FROM sources "
                             "WHERE name = 'memwatch') LIMIT 1").fetchone()[0]
        older, newer = [r[0] for r in s.conn.execute("SELECT id FROM facts ORDER BY id LIMIT 2")]
        with s.transaction():
            s.add_contradiction(older, newer, "value", 0.9, "planted for the round trip",
                                {"action": "UPDATE", "key": "k", "old_value": "a", "new_value": "b"}, 1.0)
    maintenance.refresh(None, str(path), [ref])
    return path


def table_dump(path):
    """Every row of every overlay table minus internal ids, ids replaced by refs/names."""
    with OverlayStore(path) as s:
        c = s.conn
        sources = [tuple(r)[1:] for r in c.execute("SELECT * FROM sources ORDER BY name")]
        facts = [(r["source_name"], *[r[k] for k in r.keys() if k not in ("id", "source_id", "source_name")])
                 for r in c.execute("SELECT f.*, s.name AS source_name FROM facts f JOIN sources s "
                                    "ON s.id = f.source_id ORDER BY f.ref")]
        contradictions = [tuple(r) for r in c.execute(
            "SELECT o.ref, n.ref, c.kind, c.confidence, c.evidence, c.update_json, c.detected_at "
            "FROM contradictions c JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id")]
        runs = [tuple(r)[1:] for r in c.execute("SELECT * FROM runs ORDER BY id")]
    return sources, facts, contradictions, runs


def test_export_import_export_is_byte_identical_and_reproduces_the_overlay(overlay, tmp_path):
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    proc = run("export", first, "--overlay", overlay, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    proc = run("import", first, "--overlay", tmp_path / "copy.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert run("export", second, "--db", tmp_path / "copy.db", cwd=tmp_path).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    assert table_dump(overlay) == table_dump(tmp_path / "copy.db")

    lines = [json.loads(line) for line in first.read_text().splitlines()]
    assert lines[0] == {"type": "header", "format": "memwatch-overlay-export", "schema_version": SCHEMA_VERSION}
    kinds = [line["type"] for line in lines]
    assert kinds.count("source") == 2 and kinds.count("run") == 1
    assert kinds.count("contradiction") == len(table_dump(overlay)[2]) >= 1
    assert kinds.count("fact") == len(table_dump(overlay)[1]) > 10
    assert not any("id" in line or "source_id" in line for line in lines)
    # the copy answers like the original
    a = run("report", "--overlay", overlay, "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    b = run("report", "--overlay", tmp_path / "copy.db", "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    strip = lambda out: {k: v for k, v in json.loads(out).items() if k != "sources"}  # noqa: E731
    assert strip(a.stdout) == strip(b.stdout)


def test_import_refuses_a_non_empty_overlay(overlay, tmp_path):
    with OverlayStore(overlay) as s:
        export_file(s, tmp_path / "x.jsonl")
        with pytest.raises(OverlayError, match="not empty"):
            import_file(s, tmp_path / "x.jsonl")


@pytest.mark.parametrize("mangle,message", [
    (lambda lines: lines[:3] + ["{not json"] + lines[3:], r"x\.jsonl:4: not valid JSON"),
    (lambda lines: lines[:1] + [lines[3]] + lines[1:3] + lines[4:], r"x\.jsonl:2: fact of unknown source"),
    (lambda lines: lines[:-1] + [json.dumps({"type": "fact", "source": "memwatch", "colour": 1})],
     r"unknown field 'colour'"),
    (lambda lines: [json.dumps({"type": "header", "format": "memwatch-overlay-export",
                                "schema_version": SCHEMA_VERSION + 1})] + lines[1:], r"x\.jsonl:1: .*upgrade"),
    (lambda lines: lines[1:], r"x\.jsonl:1: not a memwatch-overlay export"),
    (lambda lines: lines + [lines[5]], r"cannot import this fact: UNIQUE"),
])
def test_a_bad_line_is_named_and_nothing_is_imported(overlay, tmp_path, mangle, message):
    with OverlayStore(overlay) as s:
        export_file(s, tmp_path / "good.jsonl")
    lines = (tmp_path / "good.jsonl").read_text().splitlines()
    (tmp_path / "x.jsonl").write_text("\n".join(mangle(lines)) + "\n")
    target = tmp_path / "empty.db"
    with OverlayStore(target) as s:
        with pytest.raises(ConfigError, match=message):
            import_file(s, tmp_path / "x.jsonl")
        assert s.conn.execute("SELECT (SELECT count(*) FROM sources) + (SELECT count(*) FROM facts)").fetchone()[0] == 0


def test_import_errors_through_the_cli_are_one_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"type": "header", "format": "memwatch-overlay-export", "schema_version": 1}\n'
                                        '{"type": "planet"}\n')
    proc = run("import", "bad.jsonl", "--overlay", "o.db", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "Error: bad.jsonl:2: unknown record type 'planet'"
    proc = run("import", "missing.jsonl", "--overlay", "o.db", cwd=tmp_path)
    assert proc.returncode == 2 and "missing.jsonl: file not found" in proc.stderr


def test_an_older_schema_export_imports(tmp_path):
    """A v1 export (no confidence columns) loads; the new columns take their defaults."""
    v1 = tmp_path / "v1.jsonl"
    v1.write_text("\n".join(json.dumps(x) for x in [
        {"type": "header", "format": "memwatch-overlay-export", "schema_version": 1},
        {"type": "source", "name": "bot", "connector": "sqlite", "target": "/x.db", "sync_count": 1},
        {"type": "fact", "source": "bot", "tbl": "t", "pk": '{"id": "1"}', "ref": "bot:t:1", "text": "Lives in Oslo",
         "category": "location", "created_at": 1.7e9, "content_hash": "h", "first_seen": 1.7e9,
         "last_seen": 1.7e9, "seen_sync": 1, "changed_sync": 1},
    ]) + "\n")
    with OverlayStore(tmp_path / "o.db") as s:
        assert import_file(s, v1) == {"source": 1, "fact": 1, "contradiction": 0, "run": 0}
        row = s.conn.execute("SELECT confirmations, confidence, status FROM facts").fetchone()
        assert tuple(row) == (0, None, "active")
    proc = run("report", "--overlay", tmp_path / "o.db", "--format", "json", cwd=tmp_path)
    assert json.loads(proc.stdout)["facts"][0]["confidence"] is not None
