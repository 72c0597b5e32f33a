"""JSON / JSONL connector: selectors, mapping, pk, cursors, bad input."""
import json
import os
import sys
import subprocess
from pathlib import Path

import pytest

from memwatch_overlay.connectors.json_file import JsonConnector, describe_file, json_format
from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.core.errors import ConnectorError
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.core.timeparse import parse_timestamp
from memwatch_overlay.rules.config import Config, SourceConfig, load_config

EXE = Path(sys.executable).with_name("memwatch-overlay")


def source(path, **kw):
    kw.setdefault("name", "notes")
    return SourceConfig(connector="json", path=str(path), **kw)


def read_all(src, cursor=None):
    with make_connector(src) as conn:
        recs = list(conn.read(cursor))
        return recs, conn


def run(*args, cwd=None):
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "120"}, timeout=120)


# -- selectors and mapping ---------------------------------------------------------------

def test_array_of_objects(tmp_path):
    p = tmp_path / "mem.json"
    p.write_text(json.dumps([
        {"id": 7, "fact": "Works at Google", "user": "u1", "created": "2025-06-01T10:00:00Z", "kind": "employment"},
        {"id": 8, "fact": "", "user": "u1"},                       # empty text: not a memory
        {"id": 9, "fact": "Lives in Jakarta", "user": "u2", "created": 1700000000},
    ]))
    recs, conn = read_all(source(p, records="[*]", text="fact", subject="user", created_at="created",
                                 category="kind"))
    assert [r.text for r in recs] == ["Works at Google", "Lives in Jakarta"]
    assert recs[0].pk == {"path": "$[0]"} and recs[1].pk == {"path": "$[2]"}
    assert recs[0].subject == "u1" and recs[0].category == "employment"
    assert recs[0].created_at == parse_timestamp("2025-06-01T10:00:00Z")
    assert recs[1].created_at == 1700000000.0
    assert recs[0].table == "mem.json" and recs[0].ref == "notes:mem.json:$[0]"
    assert conn.rows_read == 3


def test_objects_keyed_by_id_with_id_from_key(tmp_path):
    p = tmp_path / "mem.json"
    p.write_text(json.dumps({"m1": {"memory": "Prefers aisle seats", "at": "2025-01-01"},
                             "m2": {"memory": "Speaks French", "at": "2024-01-01"}}))
    recs, _ = read_all(source(p, id=["#"], text="memory", created_at="at", table="memories"))
    assert {r.pk["#"]: r.text for r in recs} == {"m1": "Prefers aisle seats", "m2": "Speaks French"}
    assert recs[0].ref == "notes:memories:m1"
    # records unset on an object of objects: each value is a record
    recs, _ = read_all(source(p, text="memory"))
    assert [r.pk for r in recs] == [{"path": "$.m1"}, {"path": "$.m2"}]


def test_nested_records_reach_the_parent(tmp_path):
    p = tmp_path / "graph.json"
    p.write_text(json.dumps({"entities": [
        {"name": "Priya", "updated": "2026-01-01", "observations": ["Lives in Jakarta", "Works at Google"]},
        {"name": "Tomasz", "observations": ["Is vegetarian"]}]}))
    recs, _ = read_all(source(p, records="entities[*].observations[*]", text="@", subject="^.name",
                              created_at="^.updated"))
    assert [(r.subject, r.text) for r in recs] == [
        ("Priya", "Lives in Jakarta"), ("Priya", "Works at Google"), ("Tomasz", "Is vegetarian")]
    assert recs[1].pk == {"path": "$.entities[0].observations[1]"}
    assert recs[0].created_at == parse_timestamp("2026-01-01") and recs[2].created_at is None


def test_jsonl_lines_pk_and_json_text_values(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"text": "a", "meta": "{\\"user\\": \\"u9\\"}"}\n\n{"text": "b"}\n')
    recs, conn = read_all(source(p, text="text", subject="meta.user"))
    assert [(r.pk, r.text, r.subject) for r in recs] == [
        ({"line": "1", "path": "$"}, "a", "u9"), ({"line": "3", "path": "$"}, "b", None)]
    assert conn.rows_read == 2


def test_config_with_records_loads_and_audits(tmp_path):
    """A generic JSON file given a small config: the design's JSON contract."""
    (tmp_path / "bot.json").write_text(json.dumps({"memories": [
        {"id": "a1", "content": "Works at Google as an analyst", "user_id": "u1", "ts": "2025-06-07"},
        {"id": "a2", "content": "Just joined Stripe", "user_id": "u1", "ts": "2026-11-20"}]}))
    (tmp_path / "memwatch.toml").write_text(
        '[[sources]]\nname = "bot"\nconnector = "json"\npath = "bot.json"\nrecords = "memories[*]"\n'
        'id = "id"\ntext = "content"\nsubject = "user_id"\ncreated_at = "ts"\n')
    load_config(tmp_path / "memwatch.toml")
    proc = run("audit", "--config", tmp_path / "memwatch.toml", "--as-of", "2026-11-29", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    facts = {f["ref"]: f for f in report["facts"]}
    assert set(facts) == {"bot:bot.json:a1", "bot:bot.json:a2"}
    old = facts["bot:bot.json:a1"]
    assert old["pk"] == {"id": "a1"} and old["category"] == "employment" and old["subject"] == "u1"
    assert old["created_at"].startswith("2025-06-07") and old["label"] != "fresh"
    assert facts["bot:bot.json:a2"]["label"] == "fresh"
    assert report["summary"]["total"] == 2


@pytest.mark.parametrize("key, value, needle", [
    ("text", "a..b", "text = 'a..b'"),
    ("records", "x[", "records = 'x['"),
    ("subject", "^nope", "subject = '^nope'"),
])
def test_bad_paths_name_the_key(tmp_path, key, value, needle):
    p = tmp_path / "m.json"
    p.write_text("[]")
    kw = {"text": "t", key: value}
    with pytest.raises(ConnectorError, match=needle.replace("[", r"\[").replace("^", r"\^")):
        make_connector(source(p, **kw)).open()


def test_sql_keys_are_refused_for_json(tmp_path):
    p = tmp_path / "m.json"
    p.write_text("[]")
    with pytest.raises(ConnectorError, match="`where` does not apply to a json source"):
        make_connector(source(p, text="t", where="x = 1")).open()


# -- bad input ---------------------------------------------------------------------------

def test_malformed_json_file_names_line_and_column(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('[\n  {"text": "ok"},\n  {"text": "missing quote}\n]\n')
    with pytest.raises(ConnectorError) as err:
        read_all(source(p, text="text"))
    assert str(err.value).startswith(f"{p}:3:")
    assert "invalid JSON" in str(err.value)


def test_malformed_json_cli_exit_2_and_overlay_kept(tmp_path):
    good = tmp_path / "mem.json"
    good.write_text(json.dumps([{"memory": "Lives in Lagos", "created_at": "2026-01-01"}]))
    cfg = tmp_path / "memwatch.toml"
    cfg.write_text('[[sources]]\nname = "m"\nconnector = "json"\npath = "mem.json"\ntext = "memory"\n'
                   'created_at = "created_at"\n')
    assert run("audit", "--config", cfg, "--as-of", "2026-11-29").returncode == 0
    good.write_text('[{"memory": "Lives in Lagos",]')
    proc = run("audit", "--config", cfg, "--as-of", "2026-11-29")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0].startswith(f"Error: {good}:1:")
    report = run("report", "--config", cfg, "--format", "json", "--as-of", "2026-11-29")
    assert [f["text"] for f in json.loads(report.stdout)["facts"]] == ["Lives in Lagos"]


def test_malformed_jsonl_line_is_a_warning_others_are_read(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"text": "one"}\n{"text": "two"\n{"text": "three"}\n')
    recs, conn = read_all(source(p, text="text"))
    assert [r.text for r in recs] == ["one", "three"]
    assert len(conn.warnings) == 1 and conn.warnings[0].startswith(f"{p}:2:")
    # the CLI reports it on stderr and still audits
    proc = run("audit", p, "--format", "json", "--as-of", "2026-11-29", "--overlay", tmp_path / "o.db")
    assert proc.returncode == 0, proc.stderr
    assert f"{p}:2:" in proc.stderr
    assert {f["text"] for f in json.loads(proc.stdout)["facts"]} == {"one", "three"}


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "e.json"
    empty.write_text("")
    with pytest.raises(ConnectorError, match="empty file"):
        read_all(source(empty, text="t"))
    with pytest.raises(ConnectorError, match="no such file"):
        read_all(source(tmp_path / "nope.json", text="t"))
    (tmp_path / "e.jsonl").write_text("")
    recs, _ = read_all(source(tmp_path / "e.jsonl", text="t"))
    assert recs == []          # an empty log is just empty


# -- JSONL cursor ------------------------------------------------------------------------

def test_partial_last_line_is_read_next_time(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"text": "one"}\n{"text": "tw')
    src = source(p, text="text")
    with make_connector(src) as conn:
        first = list(conn.read(None))
        assert [r.text for r in first] == ["one"] and conn.warnings == []
        cursor = conn.cursor
    assert cursor["offset"] == len(b'{"text": "one"}\n') and cursor["line"] == 1
    with open(p, "ab") as fh:
        fh.write(b'o"}\n{"text": "three"}\n')
    with make_connector(src) as conn:
        second = list(conn.read(cursor))
        assert [(r.text, r.pk["line"]) for r in second] == [("two", "2"), ("three", "3")]
        assert conn.rows_read == 2 and conn.read_all is False and conn.warnings == []


def test_unterminated_complete_last_line_is_read(tmp_path):
    """The MCP server writes no trailing newline: a whole object on the last line counts."""
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"text": "one"}\n{"text": "two"}')
    src = source(p, text="text")
    with make_connector(src) as conn:
        assert [r.text for r in conn.read(None)] == ["one", "two"]
        cursor = conn.cursor
    with open(p, "ab") as fh:
        fh.write(b'\n{"text": "three"}\n')
    with make_connector(src) as conn:
        assert [(r.text, r.pk["line"]) for r in conn.read(cursor)] == [("three", "3")]


def test_appends_read_only_new_lines(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps({"text": f"fact {i}"}) + "\n" for i in range(500)))
    src = source(p, text="text")
    with make_connector(src) as conn:
        assert len(list(conn.read(None))) == 500
        assert conn.rows_read == 500
        cursor = conn.cursor
    with make_connector(src) as conn:          # nothing changed: nothing read
        assert list(conn.read(cursor)) == [] and conn.rows_read == 0
        assert conn.cursor == cursor
    with open(p, "a") as fh:
        fh.write(json.dumps({"text": "fact 500"}) + "\n")
    with make_connector(src) as conn:
        recs = list(conn.read(cursor))
        assert [r.pk for r in recs] == [{"line": "501", "path": "$"}] and conn.rows_read == 1


def test_rewritten_file_is_reread_whole_and_deletions_seen(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"id": 1, "text": "one"}\n{"id": 2, "text": "two"}\n')
    src = source(p, text="text", id=["id"])
    with OverlayStore(tmp_path / "o.db") as store:
        engine = SyncEngine(store, Config(sources=[src]))
        engine.sync(src, full=True)
        # a writer that rewrites the file (temp file + rename), then an incremental sync
        tmp = tmp_path / "log.tmp"
        tmp.write_text('{"id": 2, "text": "two"}\n{"id": 3, "text": "three"}\n{"id": 4, "text": "four"}\n')
        os.replace(tmp, p)
        stats = engine.sync(src, full=False)
        assert stats.rows_read == 3
        rows = dict(store.conn.execute("SELECT text, status FROM facts").fetchall())
    assert rows == {"one": "deleted", "two": "active", "three": "active", "four": "active"}


def test_whole_json_cursor_skips_unchanged_file(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps([{"text": "a"}, {"text": "b"}]))
    src = source(p, text="text")
    with make_connector(src) as conn:
        assert len(list(conn.read(None))) == 2
        cursor = conn.cursor
    with make_connector(src) as conn:
        assert list(conn.read(cursor)) == [] and conn.rows_read == 0
    os.utime(p, ns=(cursor["mtime_ns"] + 10**9, cursor["mtime_ns"] + 10**9))   # touched, same bytes
    with make_connector(src) as conn:
        assert list(conn.read(cursor)) == [] and conn.read_all is False
    p.write_text(json.dumps([{"text": "a"}, {"text": "c"}]))
    with make_connector(src) as conn:
        assert [r.text for r in conn.read(cursor)] == ["a", "c"] and conn.read_all is True


def test_reading_leaves_the_file_untouched(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"text": "one"}\n')
    before = (p.read_bytes(), p.stat().st_mtime_ns)
    read_all(source(p, text="text"))
    describe_file(p)
    assert (p.read_bytes(), p.stat().st_mtime_ns) == before


# -- format sniffing and describe ----------------------------------------------------------

def test_format_sniffing(tmp_path):
    jsonl_named_json = tmp_path / "memory.json"
    jsonl_named_json.write_text('{"a": 1}\n{"a": 2}\n')
    pretty = tmp_path / "pretty.json"
    pretty.write_text('{\n  "a": 1\n}\n')
    one_line = tmp_path / "one.json"
    one_line.write_text('[{"a": 1}]\n')
    assert [json_format(p) for p in (jsonl_named_json, pretty, one_line)] == ["jsonl", "json", "json"]


def test_describe_lists_collections_as_selectors(tmp_path):
    p = tmp_path / "bot.json"
    p.write_text(json.dumps({"memories": [{"content": "x", "meta": {"user": "u"}, "tags": ["a"]}],
                             "version": 2}))
    tables = {t.name: t.columns for t in describe_file(p)}
    assert tables["memories[*]"] == ["content", "meta", "meta.user", "tags"]
    assert tables["memories[*].tags[*]"] == ["@"]
    assert JsonConnector.kind == "json"
