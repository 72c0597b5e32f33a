"""The overlay database: migrations, sync bookkeeping, forget/refresh, deletions."""
import shutil
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.overlay.engine import maintenance
from memwatch_overlay.overlay.engine.audit import audit, overlay_report
from memwatch_overlay.core.errors import OverlayError
from memwatch_overlay.overlay.store.database import SCHEMA_VERSION, OverlayStore
from memwatch_overlay.core.timeparse import parse_as_of
from memwatch_overlay.rules.config import load_config

ROOT = Path(__file__).resolve().parents[1]
AS_OF = parse_as_of("2026-11-29")


@pytest.fixture
def cfg(tmp_path):
    shutil.copy(ROOT / "examples" / "my_agent.db", tmp_path / "my_agent.db")
    (tmp_path / "memwatch.toml").write_text(
        (ROOT / "memwatch.toml").read_text().replace("examples/my_agent.db", "my_agent.db"))
    return load_config(tmp_path / "memwatch.toml")


def test_schema_is_versioned_and_refuses_the_future(tmp_path):
    path = tmp_path / "o.db"
    OverlayStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(OverlayError, match="newer"):
        OverlayStore(path)


def test_overlay_lives_beside_the_config(cfg):
    audit(config=cfg, as_of=AS_OF).close()
    assert (cfg.base_dir / ".memwatch" / "overlay.db").exists()


def test_second_audit_changes_nothing_and_deletes_are_marked(cfg):
    first = audit(config=cfg, as_of=AS_OF)
    assert first.stats[0].changed == 12
    first.close()
    again = audit(config=cfg, as_of=AS_OF)
    assert again.stats[0].changed == 0 and again.summary["total"] == 12
    again.close()
    with sqlite3.connect(cfg.sources[0].resolved_path) as conn:
        conn.execute("UPDATE agent_facts SET is_deleted = 1 WHERE id = 2")   # filtered out by `where`
        conn.execute("DELETE FROM agent_facts WHERE id = 3")
    third = audit(config=cfg, as_of=AS_OF)
    facts = {f["ref"]: f for f in third.iter_facts()}
    assert facts["bot:agent_facts:2"]["status"] == "deleted"
    assert facts["bot:agent_facts:3"]["status"] == "deleted"
    assert third.summary["total"] == 10 and third.summary["deleted"] == 2
    third.close()


def test_refresh_restarts_freshness_and_forget_hides(cfg):
    audit(config=cfg, as_of=AS_OF).close()
    ref = "bot:agent_facts:2"     # "Lives in Jakarta", 700 days old: expired
    assert maintenance.refresh(cfg, None, [ref], now=AS_OF) == 1
    result = overlay_report(cfg, as_of=AS_OF)
    fact = next(f for f in result.iter_facts() if f["ref"] == ref)
    assert fact["label"] == "fresh" and fact["freshness"] == 1.0
    result.close()
    # a later audit keeps the refresh (a person re-confirmed it)
    again = audit(config=cfg, as_of=AS_OF)
    assert next(f for f in again.iter_facts() if f["ref"] == ref)["label"] == "fresh"
    again.close()

    assert maintenance.forget(cfg, None, [ref], None) == 1
    result = audit(config=cfg, as_of=AS_OF)
    assert ref not in {f["ref"] for f in result.iter_facts()} and result.summary["total"] == 11
    result.close()


def test_refresh_unknown_ref_is_an_error(cfg):
    audit(config=cfg, as_of=AS_OF).close()
    from memwatch_overlay.core.errors import ConfigError
    with pytest.raises(ConfigError, match="no fact"):
        maintenance.refresh(cfg, None, ["bot:agent_facts:999"])


def test_status_and_stats(cfg):
    audit(config=cfg, as_of=AS_OF).close()
    status = maintenance.source_status(cfg, None)["sources"][0]
    assert status["name"] == "bot" and status["rows_seen"] == 12 and status["rows_read_last_sync"] == 12
    assert status["errors"] == 0 and status["lag_seconds"] >= 0
    stats = maintenance.overlay_stats(cfg, None)
    assert stats["by_source"]["bot"]["total"] == 12
    assert sum(s["total"] for s in stats["by_category"].values()) == 12


def test_runs_keep_each_audit_summary(cfg):
    for _ in range(3):
        audit(config=cfg, as_of=AS_OF).close()
    with OverlayStore(cfg.resolved_overlay_path()) as store:
        runs = store.runs()
    assert len(runs) == 3 and all(r["summary"]["total"] == 12 for r in runs)
