"""Write-back to JSON and JSON Lines files: atomic rewrite, only over an unchanged file, exact undo."""
from __future__ import annotations

import json
import shutil

import pytest

from memwatch_overlay.connectors import json_writer
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.overlay.writeback.apply import apply_plan
from memwatch_overlay.overlay.writeback.plan import plan_actions
from memwatch_overlay.overlay.writeback.undo import undo_actions
from memwatch_overlay.rules.config import load_config
from wb_support import AS_OF, HERE, OLD, write_config

AS_OF_TS = parse_as_of(AS_OF)
NEW = "2026-11-28T10:00:00Z"


def _memories():
    return [{"id": f"m{i}", "text": f"memory {i}", "created_at": OLD.replace(" ", "T") + "Z" if i % 2 else NEW,
             "expires_at": None if i % 3 else "2030-01-01T00:00:00Z", "meta": {"score": i / 4, "tags": ["a", i]},
             "note": None} for i in range(1, 7)]


def _source(path: str, extra: str = "") -> str:
    return f"""
[[sources]]
name = "js"
connector = "json"
path = "{path}"
text = "text"
created_at = "created_at"
expires_at = "expires_at"
{extra}
"""


SET = """
[[actions]]
when = "expired"
do = "set"
set = { expires_at = "now", note = "memwatch: {label}", "meta.score" = "{freshness}" }
"""


def test_json_document_set_and_undo_byte_for_byte(tmp_path):
    path = tmp_path / "memories.json"
    original = json.dumps({"memories": _memories()}, indent=2, ensure_ascii=False) + "\n"
    path.write_text(original, encoding="utf-8")
    cfg = load_config(write_config(tmp_path, _source("memories.json", 'records = "memories[*]"\nid = "id"') + SET))
    plan = plan_actions(cfg, AS_OF_TS)
    assert sorted(c.pk["id"] for c in plan.writes) == ["m1", "m3", "m5"]
    assert path.read_text() == original
    result = apply_plan(plan)
    assert len(result.applied) == 3
    data = json.loads(path.read_text())
    by_id = {m["id"]: m for m in data["memories"]}
    for i in (1, 3, 5):
        m = by_id[f"m{i}"]
        assert m["note"] == "memwatch: expired" and m["meta"]["score"] < 0.3 and m["meta"]["tags"] == ["a", i]
        assert m["expires_at"].endswith("Z") and "T" in m["expires_at"]      # the field's own format
    assert by_id["m2"] == _memories()[1]
    assert path.read_text().startswith('{\n  "memories": [\n    {')           # indentation kept
    undo_actions(cfg, since=result.run_at)
    assert path.read_text() == original


def test_jsonl_keeps_untouched_lines_and_undoes_a_delete(tmp_path):
    path = tmp_path / "mem.jsonl"
    lines = [json.dumps(m, separators=(",", ":")) for m in _memories()]
    original = ("\n".join(lines) + "\n").encode()
    path.write_bytes(original)
    cfg = load_config(write_config(tmp_path, _source("mem.jsonl", 'id = "id"') + SET))
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    now = path.read_bytes().splitlines()
    assert [now[i] for i in (1, 3, 5)] == [lines[i].encode() for i in (1, 3, 5)]   # untouched, byte for byte
    assert b'"note":"memwatch: expired"' in now[0]                                   # compact style kept
    undo_actions(cfg, since=result.run_at)
    assert path.read_bytes() == original

    delete = load_config(write_config(tmp_path, _source("mem.jsonl", 'id = "id"')
                                      + '\n[[actions]]\nwhen = "expired"\ndo = "delete"\n', "delete.toml"))
    deleted = apply_plan(plan_actions(delete, AS_OF_TS, overlay_path=str(cfg.resolved_overlay_path())))
    assert [json.loads(ln)["id"] for ln in path.read_bytes().splitlines()] == ["m2", "m4", "m6"]
    undo_actions(delete, ids=[i for i, _ in deleted.applied], overlay_path=str(cfg.resolved_overlay_path()))
    assert path.read_bytes() == original


def test_a_file_changed_during_the_batch_is_not_written_and_is_retried(tmp_path, monkeypatch):
    path = tmp_path / "mem.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in _memories()))
    cfg = load_config(write_config(tmp_path, _source("mem.jsonl", 'id = "id"') + SET))
    plan = plan_actions(cfg, AS_OF_TS)
    bot_line = json.dumps({"id": "m7", "text": "appended by the bot", "created_at": NEW}) + "\n"
    real_update = json_writer.JsonTxn.update

    def update_while_the_bot_appends(self, key, values):
        real_update(self, key, values)
        if not path.read_text().endswith(bot_line):
            with open(path, "a") as fh:          # the bot appends between our read and our commit
                fh.write(bot_line)

    monkeypatch.setattr(json_writer.JsonTxn, "update", update_while_the_bot_appends)
    result = apply_plan(plan)
    monkeypatch.undo()
    assert not result.applied and all("changed since it was read" in s.reason for s in result.skipped)
    text = path.read_text()
    assert text.endswith(bot_line) and "memwatch" not in text                      # the bot's line, none of ours
    retry = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert len(retry.applied) == 3 and path.read_text().count("memwatch: expired") == 3
    assert "appended by the bot" in path.read_text()


def test_nested_records_by_path(tmp_path):
    path = tmp_path / "bot.json"
    doc = {"users": {"u1": {"memories": _memories()[:2]}, "u2": {"memories": _memories()[2:4]}}}
    path.write_text(json.dumps(doc))
    cfg = load_config(write_config(tmp_path, _source("bot.json", 'records = "users.*.memories[*]"\nsubject = "^#"')
                                   + SET))
    result = apply_plan(plan_actions(cfg, AS_OF_TS))
    assert sorted(c.pk["path"] for _, c in result.applied) == ["$.users.u1.memories[0]", "$.users.u2.memories[0]"]
    data = json.loads(path.read_text())
    assert data["users"]["u2"]["memories"][0]["note"] == "memwatch: expired"
    undo_actions(cfg, since=result.run_at)
    assert json.loads(path.read_text()) == doc


@pytest.mark.parametrize("actions, field, message", [
    ('do = "delete"', "actions[0].do", "needs `id`"),
    ('do = "set"\nset = { nope = 1 }', "actions[0].set.nope", "no column 'nope'"),
    ('do = "set"\nset = { "meta.nope" = 1 }', "actions[0].set.meta.nope", "no column"),
])
def test_refused_before_anything_runs(tmp_path, actions, field, message):
    path = tmp_path / "mem.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in _memories()))
    before = path.read_bytes()
    cfg = load_config(write_config(tmp_path, _source("mem.jsonl") + f'\n[[actions]]\nwhen = "expired"\n{actions}\n'))
    with pytest.raises(ConfigError) as err:
        plan_actions(cfg, AS_OF_TS)
    assert err.value.field == field and message in str(err.value)
    assert path.read_bytes() == before


def test_mcp_memory_graph_takes_annotations_only(tmp_path):
    shutil.copytree(HERE / "fixtures" / "agent-stores" / "mcp-memory", tmp_path / "mcp")
    body = '[[sources]]\nname = "g"\nconnector = "json"\npath = "mcp/memory.jsonl"\npreset = "mcp-memory"\n'
    cfg = load_config(write_config(tmp_path, body + '\n[[actions]]\nwhen = "stale"\ndo = "delete"\n'))
    with pytest.raises(ConfigError, match=r"actions\[0\]: .*mcp-memory layout is not supported"):
        plan_actions(cfg, parse_as_of("2026-11-29"))
    cfg = load_config(write_config(tmp_path, body + '\n[[actions]]\nwhen = "fresh"\ndo = "annotate"\n', "ann.toml"))
    before = (tmp_path / "mcp" / "memory.jsonl").read_bytes()
    result = apply_plan(plan_actions(cfg, parse_as_of("2026-11-29")))
    assert result.annotated
    assert (tmp_path / "mcp" / "memory.jsonl").read_bytes() == before
