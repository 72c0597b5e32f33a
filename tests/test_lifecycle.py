"""Lifecycle (from memlife): confidence erosion in audits, [lifecycle] validation, gc."""
import sqlite3

import pytest

from memwatch_overlay.overlay.engine import maintenance
from memwatch_overlay.overlay.engine.audit import audit
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.engine.scoring import DAY, ConfidencePolicy
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.core.timeparse import parse_as_of, parse_timestamp
from memwatch_overlay.rules.config import load_config, parse_config
from storegen import AS_OF, make_store, run, write_config

LIFECYCLE = """
[lifecycle]
confidence_half_life_days = 100
confidence_floor = 0.2
confidence_initial = 0.8
gc_retention_days = 10
"""


def test_confidence_policy_formula():
    p = ConfidencePolicy(half_life_days=100, floor=0.2, initial=0.8)
    assert p.confidence(100 * DAY, 0.0) == pytest.approx(0.4)
    assert p.confidence(1000 * DAY, 0.0) == 0.2                    # floor
    assert p.confidence(0.0, 0.0, confirmations=1) == pytest.approx(0.8 + 0.19 * 0.5)
    assert p.confidence(0.0, 0.0, confirmations=60) == 0.99        # ceiling, never certainty
    assert p.confidence(0.0, 50 * DAY) == 0.8                      # a future timestamp counts as now


@pytest.mark.parametrize("body,field", [
    ({"confidence_floor": 0.99}, "lifecycle.confidence_floor"),
    ({"confidence_half_life_days": 0}, "lifecycle.confidence_half_life_days"),
    ({"confidence_initial": 1.0}, "lifecycle.confidence_initial"),
    ({"confidence_initial": 0.05, "confidence_floor": 0.1}, "lifecycle.confidence_initial"),
    ({"gc_retention_days": -1}, "lifecycle.gc_retention_days"),
    ({"half_life": 3}, "lifecycle.half_life"),
    ({"confidence_floor": "low"}, "lifecycle.confidence_floor"),
])
def test_lifecycle_keys_are_validated(body, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        parse_config({"lifecycle": body})


def test_the_native_source_name_is_reserved():
    with pytest.raises(ConfigError, match=r"sources\[0\]\.name.*reserved"):
        parse_config({"sources": [{"name": "memwatch", "connector": "sqlite", "path": "x.db", "table": "t",
                                   "text": "v"}]})


def test_audit_scores_confidence_with_the_configured_policy(tmp_path):
    store = make_store(tmp_path / "agent.db", n=30)
    cfg = load_config(write_config(tmp_path, store, ci=LIFECYCLE))
    assert cfg.lifecycle == ConfidencePolicy(100.0, 0.2, 0.8) and cfg.gc_retention_days == 10
    as_of = parse_as_of(AS_OF)
    result = audit(config=cfg, as_of=as_of)
    facts = list(result.iter_facts())
    result.close()
    assert len(facts) == 30
    for f in facts:
        age = (as_of - parse_timestamp(f["created_at"])) / DAY
        assert f["confidence"] == pytest.approx(max(0.2, 0.8 * 0.5 ** (age / 100)), abs=1e-6)
    assert min(f["confidence"] for f in facts) == 0.2


def test_refresh_counts_as_a_confirmation(tmp_path):
    store = make_store(tmp_path / "agent.db", n=5)
    cfg = load_config(write_config(tmp_path, store, ci=LIFECYCLE))
    as_of = parse_as_of(AS_OF)
    audit(config=cfg, as_of=as_of).close()
    maintenance.refresh(cfg, None, ["bot:memories:1"], now=as_of)
    result = audit(config=cfg, as_of=as_of + 100 * DAY)
    fact = next(f for f in result.iter_facts() if f["ref"] == "bot:memories:1")
    result.close()
    assert fact["confidence"] == pytest.approx((0.8 + 0.19 * 0.5) * 0.5)


def overlay_refs(path):
    with OverlayStore(path) as store:
        return {r["ref"]: r["status"] for r in store.conn.execute("SELECT ref, status FROM facts")}


def test_gc_prunes_facts_deleted_in_the_source_after_the_retention(tmp_path):
    store = make_store(tmp_path / "agent.db", n=10)
    cfg = load_config(write_config(tmp_path, store, ci=LIFECYCLE))
    audit(config=cfg, as_of=parse_as_of(AS_OF)).close()
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM memories WHERE id IN (2, 3)")
    audit(config=cfg, as_of=parse_as_of(AS_OF)).close()
    overlay = cfg.resolved_overlay_path()
    assert overlay_refs(overlay)["bot:memories:2"] == "deleted"

    # inside the retention period ([lifecycle] gc_retention_days = 10) nothing goes
    assert maintenance.gc(cfg, None, now=None)["facts_pruned"] == 0
    assert maintenance.gc(cfg, None, now=parse_as_of("2100-01-01"))["facts_pruned"] == 2
    refs = overlay_refs(overlay)
    assert len(refs) == 8 and "bot:memories:2" not in refs and set(refs.values()) == {"active"}
    # pruned rows are gone for good: the next audit does not bring them back
    again = audit(config=cfg, as_of=parse_as_of(AS_OF))
    assert again.summary["total"] == 8 and again.summary["deleted"] == 0
    again.close()


def test_gc_command(tmp_path):
    store = make_store(tmp_path / "agent.db", n=6)
    config = write_config(tmp_path, store)
    assert run("audit", "--config", config, "--as-of", AS_OF, cwd=tmp_path).returncode in (0, 1)
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM memories WHERE id = 1")
    run("audit", "--config", config, "--as-of", AS_OF, cwd=tmp_path)
    proc = run("gc", "--config", config, cwd=tmp_path)
    assert proc.returncode == 0 and "pruned 0 fact(s)" in proc.stdout      # default 30 days
    proc = run("gc", "--config", config, "--retention-days", "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pruned 1 fact(s)" in proc.stdout
    assert len(overlay_refs(tmp_path / "overlay.db")) == 5
    proc = run("gc", "--config", config, "--retention-days", "-3", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
