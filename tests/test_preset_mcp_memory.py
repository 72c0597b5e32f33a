"""The MCP memory server's knowledge graph, from the fixture the real server wrote."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import load_manifest

from memwatch_overlay.connectors.recognize import detect
from memwatch_overlay.connectors.presets.mcp_memory import observation_id
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import Config, SourceConfig

EXE = Path(sys.executable).with_name("memwatch-overlay")
AS_OF = "2026-11-29T15:57:42Z"


def run(*args, cwd=None):
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "120"}, timeout=120)


def graph_lines(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write_like_the_server(path, lines):
    """The server's way: the whole graph to a temp file, renamed over, no trailing newline."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(json.dumps(x, separators=(",", ":")) for x in lines))
    os.replace(tmp, path)


def test_zero_config_audit_gives_one_fact_per_observation(agent_store, tmp_path):
    store = agent_store("mcp-memory") / "memory.jsonl"
    manifest = load_manifest("mcp-memory")
    proc = run("audit", store, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "o.db")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["sources"][0]["preset"] == "mcp-memory" and report["sources"][0]["connector"] == "json"
    facts = report["facts"]
    obs = {(f["pk"]["entity"], f["text"]): f for f in facts if f["table"] == "observations"}
    # every planted memory is there, under its entity, with a pk independent of line numbers
    for item in manifest["items"]:
        fact = obs[(item["source"]["entity"], item["text"])]
        assert fact["subject"] == item["source"]["entity"]
        assert fact["pk"] == {"entity": item["source"]["entity"], "observation": observation_id(item["text"])}
        assert fact["ref"] == f"mcp-memory:observations:{item['source']['entity']}:{observation_id(item['text'])}"
        assert fact["created_at"] is None and fact["first_seen"] is not None   # aged from first sight
    assert len(obs) == len(manifest["items"])
    rels = [f for f in facts if f["table"] == "relations"]
    assert sorted((f["subject"], f["key"], f["pk"]["to"]) for f in rels) == sorted(
        (r["from"], r["relationType"], r["to"]) for r in manifest["relations"])
    works = next(f for f in rels if f["pk"] == {"from": "Priya Raman", "relation": "works_at", "to": "Stripe"})
    assert works["text"] == "Priya Raman works at Stripe" and works["category"] == "employment"
    assert report["summary"]["total"] == len(manifest["items"]) + len(manifest["relations"])
    for key in ("version", "as_of", "passed", "summary", "thresholds", "facts", "contradictions"):
        assert key in report


def test_server_rewrites_keep_identities(agent_store, tmp_path):
    path = agent_store("mcp-memory") / "memory.jsonl"
    src = SourceConfig(name="memory", connector="json", path=str(path), preset="mcp-memory")
    with OverlayStore(tmp_path / "o.db") as store:
        engine = SyncEngine(store, Config(sources=[src]))
        engine.sync(src, full=True)
        before = {r["ref"]: r["first_seen"] for r in store.conn.execute("SELECT ref, first_seen FROM facts")}
        time.sleep(0.01)
        lines = graph_lines(path)
        priya = next(x for x in lines if x.get("name") == "Priya Raman")
        dropped = priya["observations"].pop(1)                 # delete_observations
        priya["observations"].insert(0, "Priya now lives in Bandung.")   # order changes too
        lines.insert(0, {"type": "entity", "name": "Noor", "entityType": "person",
                         "observations": ["Noor is a nurse."]})            # a new first line
        write_like_the_server(path, lines)
        stats = engine.sync(src, full=False)
        rows = {r["ref"]: r for r in store.conn.execute("SELECT ref, status, first_seen, text FROM facts")}
    gone = f"memory:observations:Priya Raman:{observation_id(dropped)}"
    assert rows[gone]["status"] == "deleted"
    assert stats.deleted == 1
    for ref, first_seen in before.items():
        if ref != gone:
            assert rows[ref]["status"] == "active" and rows[ref]["first_seen"] == first_seen
    new = {r["text"] for ref, r in rows.items() if ref not in before}
    assert new == {"Priya now lives in Bandung.", "Noor is a nurse."}


def test_unchanged_file_is_not_reread(agent_store, tmp_path):
    path = agent_store("mcp-memory") / "memory.jsonl"
    src = SourceConfig(name="memory", connector="json", path=str(path), preset="mcp-memory")
    with OverlayStore(tmp_path / "o.db") as store:
        engine = SyncEngine(store, Config(sources=[src]))
        first = engine.sync(src, full=True)
        again = engine.sync(src, full=False)
    assert first.rows_read == len(graph_lines(path)) and again.rows_read == 0


def test_detection_covers_jsonl_named_json_and_read_graph_output(tmp_path, agent_store):
    path = agent_store("mcp-memory") / "memory.jsonl"
    legacy = tmp_path / "memory.json"                 # older servers' default file name
    legacy.write_text(path.read_text())
    assert detect(str(legacy)).matches[0].preset == "mcp-memory"
    lines = graph_lines(path)
    graph = tmp_path / "graph.json"                   # what the read_graph tool returns
    graph.write_text(json.dumps({"entities": [x for x in lines if x["type"] == "entity"],
                                 "relations": [x for x in lines if x["type"] == "relation"]}, indent=2))
    det = detect(str(graph))
    assert det.matches[0].preset == "mcp-memory"
    proc = run("audit", graph, "--format", "json", "--as-of", AS_OF, "--overlay", tmp_path / "o.db")
    assert proc.returncode == 0, proc.stderr
    n_obs = sum(len(x["observations"]) for x in lines if x["type"] == "entity")
    assert json.loads(proc.stdout)["summary"]["total"] == n_obs + sum(x["type"] == "relation" for x in lines)
