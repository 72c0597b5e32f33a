"""`memwatch-overlay audit <fixture> --format json`: the installed console script, in a subprocess,
zero config, against the design's JSON contract."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_stores import of_kind

AGENT_STORES = Path(__file__).parent / "fixtures" / "agent-stores"
SCRIPT = shutil.which("memwatch-overlay", path=str(Path(sys.executable).parent)) or shutil.which("memwatch-overlay")

# (framework, store file, expected preset): every SQLite fixture store (see fixture_stores.py)
STORES = [(name, store, f.preset) for name, f in of_kind("sqlite").items() for store in f.stores]
TOP_KEYS = {"version", "as_of", "passed", "summary", "thresholds", "facts", "contradictions"}
SUMMARY_KEYS = {"total", "fresh", "aging", "stale", "expired", "contradicted", "avg_freshness"}
FACT_KEYS = {"source", "table", "pk", "ref", "subject", "key", "text", "category", "created_at", "age_days",
             "freshness", "label", "days_left", "status", "contradicted_by"}
CONTRADICTION_KEYS = {"older", "newer", "kind", "confidence", "evidence"}
LABELS = {"fresh", "aging", "stale", "expired"}
STATUSES = {"active", "contradicted", "deleted"}


def run_audit(target: Path, as_of: str, overlay: Path, *extra: str) -> subprocess.CompletedProcess:
    assert SCRIPT, "the memwatch-overlay console script is not installed in this environment"
    return subprocess.run([SCRIPT, "audit", str(target), "--format", "json", "--as-of", as_of,
                           "--overlay", str(overlay), *extra],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("framework,file,preset", STORES, ids=[f"{n}/{s}" for n, s, _ in STORES])
def test_cli_json_contract_on_fixture(agent_store, tmp_path, framework, file, preset):
    folder = agent_store(framework)
    manifest = json.loads((folder / "manifest.json").read_text())
    proc = run_audit(folder / file, manifest["reference_time"], tmp_path / "overlay.db")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout)

    assert TOP_KEYS <= set(report)
    assert report["version"] == 1
    assert report["passed"] is True
    assert report["as_of"].startswith(manifest["reference_time"][:19])
    assert isinstance(report["thresholds"], dict)
    summary = report["summary"]
    assert SUMMARY_KEYS <= set(summary)
    assert summary["total"] == summary["fresh"] + summary["aging"] + summary["stale"] + summary["expired"]
    assert 0.0 < summary["avg_freshness"] <= 1.0
    assert [s["preset"] for s in report["sources"]] == [preset]

    facts = report["facts"]
    live = [f for f in facts if f["status"] != "deleted"]
    assert len(live) == summary["total"] > 0
    assert sum(f["status"] == "contradicted" for f in facts) == summary["contradicted"]
    refs = {f["ref"] for f in facts}
    for fact in facts:
        assert FACT_KEYS <= set(fact), FACT_KEYS - set(fact)
        assert fact["label"] in LABELS and fact["status"] in STATUSES
        assert isinstance(fact["pk"], dict) and all(isinstance(v, str) for v in fact["pk"].values())
        assert fact["ref"] == ":".join([fact["source"], fact["table"], *fact["pk"].values()])
        assert 0.0 <= fact["freshness"] <= 1.0 and fact["age_days"] >= 0.0
        assert isinstance(fact["contradicted_by"], list) and set(fact["contradicted_by"]) <= refs
        assert fact["text"].strip()
    for c in report["contradictions"]:
        assert CONTRADICTION_KEYS <= set(c)
        assert c["older"] in refs and c["newer"] in refs and 0.0 <= c["confidence"] <= 1.0

    # The manifest's planted items all come out with their own primary keys.
    pks = {json.dumps(f["pk"], sort_keys=True) for f in facts}
    mine = [i for i in manifest["items"] if i["source"].get("file", file) == file]
    assert mine
    for item in mine:
        assert json.dumps({k: str(v) for k, v in item["source"]["pk"].items()}, sort_keys=True) in pks


@pytest.mark.slow
def test_cli_reports_native_contradictions_of_mem0(agent_store, tmp_path):
    folder = agent_store("mem0")
    manifest = json.loads((folder / "manifest.json").read_text())
    report = json.loads(run_audit(folder / "history.db", manifest["reference_time"], tmp_path / "o.db").stdout)
    updates = [i for i in manifest["items"] if (i["expected"]["contradicted_by"] or {}).get("event") == "UPDATE"]
    assert len(updates) >= 2
    by_older = {f["pk"]["id"]: f for f in report["facts"]}
    native = {(c["older"], c["newer"]): c for c in report["contradictions"] if c["kind"] == "value"}
    for item in updates:
        older = by_older[item["source"]["pk"]["id"]]
        newer = by_older[item["expected"]["contradicted_by"]["pk"]["id"]]
        assert older["status"] == "contradicted"
        assert (older["ref"], newer["ref"]) in native
    assert report["summary"]["contradicted"] >= len(updates)


@pytest.mark.slow
def test_cli_gate_fails_on_the_fixture_with_a_strict_threshold(agent_store, tmp_path):
    folder = agent_store("langgraph")
    manifest = json.loads((folder / "manifest.json").read_text())
    proc = run_audit(folder / "langgraph_store.sqlite", manifest["reference_time"], tmp_path / "o.db",
                     "--max-stale-ratio", "0.05")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["passed"] is False
    summary = report["summary"]
    assert (summary["stale"] + summary["expired"]) / summary["total"] > 0.05
