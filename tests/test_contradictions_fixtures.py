"""The detector over the fixture stores' manifests: planted contradictions are found,
hard negatives (``similar_but_not_contradicting``) and everything else are not flagged."""
from __future__ import annotations

from datetime import datetime

import pytest

from fixture_stores import FIXTURES

from memwatch_overlay.overlay.detect.detector import Detector, FactView

from conftest import load_manifest

FRAMEWORKS = list(FIXTURES)


def _facts(manifest: dict) -> dict[str, FactView]:
    ref_time = datetime.fromisoformat(manifest["reference_time"]).timestamp()
    return {it["item_id"]: FactView(ref=it["item_id"], subject=it["user"], key=None,
                                    text=it["text"], category=it["category"],
                                    learned_at=ref_time - it["age_days"] * 86400.0)
            for it in manifest["items"]}


def _item_by_source(manifest: dict, identity: dict) -> str:
    for it in manifest["items"]:
        if it["source"] == identity:
            return it["item_id"]
    raise AssertionError(f"manifest identity not among its items: {identity}")


def _detect_all(facts: dict[str, FactView], detector: Detector) -> set[tuple[str, str]]:
    """Every fact against every older fact of the same subject (stricter than one block)."""
    found = set()
    for new in facts.values():
        olders = [f for f in facts.values() if f.subject == new.subject and f.learned_at < new.learned_at]
        for c in detector.compare(new, olders):
            found.add((c.older, c.newer))
    return found


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_planted_contradictions_found_and_nothing_else(framework):
    manifest = load_manifest(framework)
    facts = _facts(manifest)
    planted = {(it["item_id"], _item_by_source(manifest, it["expected"]["contradicted_by"]))
               for it in manifest["items"] if it["expected"].get("contradicted_by")}
    assert planted, "the manifest plants contradictions"
    found = _detect_all(facts, Detector())
    assert planted <= found, f"missed: {sorted(planted - found)}"
    assert found == planted, f"false alarms: {sorted(found - planted)}"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_hard_negatives_not_flagged_either_way(framework):
    manifest = load_manifest(framework)
    facts = _facts(manifest)
    d = Detector()
    pairs = [(it["item_id"], _item_by_source(manifest, it["similar_but_not_contradicting"]))
             for it in manifest["items"] if it.get("similar_but_not_contradicting")]
    assert pairs
    for a, b in pairs:
        old, new = sorted((facts[a], facts[b]), key=lambda f: f.learned_at)
        assert d.compare(new, [old]) == [], f"{old.text!r} flagged by {new.text!r}"


def test_planted_contradictions_come_with_updates():
    """Each planted pair yields an UPDATE or EXPIRE naming the memory and the new value."""
    manifest = load_manifest("crewai")
    facts = _facts(manifest)
    d = Detector()
    by_pair = {(c.older, c.newer): c for new in facts.values()
               for c in d.compare(new, [f for f in facts.values()
                                        if f.subject == new.subject and f.learned_at < new.learned_at])}
    loc = by_pair[("p.loc.old", "p.loc.new")]
    assert loc.update["action"] == "UPDATE" and loc.update["new_value"] == "Surabaya"
    emp = by_pair[("p.emp.old", "p.emp.new")]
    assert emp.kind == "value" and emp.update["new_value"] in ("Stripe", "staff engineer")
    email = by_pair[("t.email.old", "t.email.new")]
    assert email.update["new_value"] == "t.nowak@example.net"
    assert all(0 < c.confidence <= 1 and c.evidence for c in by_pair.values())
