"""`memwatch-overlay check TEXT`: contradictions and suggested updates for one utterance."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.overlay.engine.check import check_text
from memwatch_overlay.core.timeparse import parse_timestamp

EXE = Path(sys.executable).with_name("memwatch-overlay")
AS_OF = "2026-11-29T15:57:40Z"


def run(*args, cwd):
    return subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200"}, timeout=120)


@pytest.fixture(scope="module")
def overlay(tmp_path_factory):
    """The LangGraph fixture store audited once into an overlay."""
    import shutil
    root = tmp_path_factory.mktemp("lg")
    shutil.copytree(Path(__file__).parent / "fixtures" / "agent-stores" / "langgraph", root / "store")
    path = root / "overlay.db"
    result = audit(str(root / "store" / "langgraph_store.sqlite"), as_of=parse_timestamp(AS_OF),
                   overlay_path=str(path))
    result.close()
    return path


def test_check_json_lists_contradictions_with_updates(overlay, tmp_path):
    proc = run("check", "Amara moved to Nairobi last week.", "--subject", "u_amara", "--overlay", overlay,
               "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    [c] = out["contradictions"]
    assert c["older_text"] == "Amara lives in Lagos." and c["kind"] == "value"
    assert c["update"]["action"] == "UPDATE" and c["update"]["new_value"] == "Nairobi"
    assert c["update"]["ref"] == c["older"] and c["older"].startswith("langgraph:store:users.u_amara")
    assert c["update"]["key"] == "city"                    # the store's keys are uuids: slot name
    assert out["summary"] == f"1 contradiction(s) detected. {len(out['stale'])} stale memories."
    assert out["subject"] == "u_amara" and "location" in out["categories"]


def test_check_table_ends_with_the_summary_line(overlay, tmp_path):
    proc = run("check", "Tomasz left Google, and he is now based in Warsaw.", "--subject", "u_tomasz",
               "--overlay", overlay, "--as-of", AS_OF, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    # Google ended (EXPIRE), Krakow replaced (UPDATE); the Krakow and old job-title memories
    # are also past their half-lives at the reference time
    assert lines[-1] == "2 contradiction(s) detected. 2 stale memories."
    assert "EXPIRE" in proc.stdout and "UPDATE" in proc.stdout and "Warsaw" in proc.stdout
    stale = [ln for ln in lines if ln.startswith("stale: ")]
    assert len(stale) == 2 and any("Tomasz is based in Krakow." in ln for ln in stale)


def test_check_other_subject_and_unrelated_text(overlay):
    as_of = parse_timestamp(AS_OF)
    r = check_text("Amara moved to Nairobi.", overlay_path=str(overlay), subject="u_priya", as_of=as_of)
    assert r.contradictions == [] and r.line.startswith("0 contradiction(s) detected.")
    r = check_text("The weather is nice today.", overlay_path=str(overlay), subject="u_amara", as_of=as_of)
    assert r.contradictions == []
    # without --subject every subject's facts are candidates; the named person still decides
    r = check_text("Priya moved to Bandung.", overlay_path=str(overlay), as_of=as_of)
    # (Jakarta is already contradicted by Surabaya in the overlay: only Surabaya is current)
    assert {c["older_text"] for c in r.contradictions} == {"Priya moved to Surabaya last month."}


def test_check_on_an_empty_overlay(tmp_path):
    proc = run("check", "I moved to Oslo", "--overlay", tmp_path / "empty.db", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0 contradiction(s) detected. 0 stale memories."


def test_check_suggests_updates_only_for_memories_nothing_has_outdated_yet(overlay, tmp_path):
    # u_priya's "works at Google" is already contradicted by "joined Stripe" in the overlay:
    # the new job outdates Stripe, not Google a second time
    proc = run("check", "I just moved to Surabaya for my new job at Anthropic", "--subject", "u_priya",
               "--overlay", overlay, "--as-of", AS_OF, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    olds = {(u["memory_key"], u["old_value"]) for u in data["suggested_updates"]}
    # Stripe is the current employer; Surabaya (said again) is a confirmation, and Jakarta
    # was already outdated by it
    assert olds == {("employer", "Priya just joined Stripe as a staff engineer (started last Monday).")}
    assert data["summary"].startswith("1 contradiction(s) detected.")
    texts = [c["older_text"] for c in data["contradictions"]]
    assert not any("Google" in t for t in texts)
