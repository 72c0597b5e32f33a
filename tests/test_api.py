"""MemWatch / TTLConfig: facts stored in the overlay as the native source `memwatch`."""
import json

import pytest

from memwatch_overlay import MemWatch, TTLConfig
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.engine.scoring import DAY
from storegen import run

T0 = 1_780_000_000.0   # 2026-05-28


class Clock:
    def __init__(self, now=T0):
        self.now = now

    def __call__(self):
        return self.now

    def days(self, n):
        self.now += n * DAY


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def mw(tmp_path, clock):
    with MemWatch(db=str(tmp_path / "memwatch.db"), clock=clock) as m:
        yield m


def test_add_and_get_categorise_by_the_rules_and_score_now(mw):
    m = mw.add("employer", "Google")
    assert (m.key, m.value, m.category, m.ref, m.source) == ("employer", "Google", "employment",
                                                             "memwatch:facts:employer", "memwatch")
    assert (m.freshness, m.label, m.status, m.confidence) == (1.0, "fresh", "active", 0.9)
    assert mw.add("favourite_food", "sushi").category == "preference"
    assert mw.get("employer") == m
    assert mw.get("nothing") is None


def test_freshness_decays_with_the_ttl_configs_half_life(tmp_path, clock):
    ttl = TTLConfig().set_half_life("employment", 90)
    with MemWatch(db=str(tmp_path / "a.db"), ttl_config=ttl, clock=clock) as mw:
        mw.add("employer", "Google", category="employment")
        mw.add("city", "Jakarta", category="location")
        clock.days(90)
        assert mw.get("employer").freshness == pytest.approx(0.5) and mw.get("employer").label == "aging"
        assert mw.get("city").freshness == pytest.approx(0.5 ** (90 / 365), abs=1e-6)
        clock.days(200)
        report = mw.report()
        assert [m.key for m in report] == ["employer", "city"]          # stalest first
        assert report[0].label == "expired"
        stats = mw.stats()
        assert (stats["total"], stats["expired"], stats["fresh"]) == (2, 1, 0)
        assert stats["by_category"]["employment"]["expired"] == 1


def test_a_hard_ttl_expires_whatever_the_score(tmp_path, clock):
    ttl = TTLConfig().set_ttl("location", 30)
    with MemWatch(db=str(tmp_path / "a.db"), ttl_config=ttl, clock=clock) as mw:
        mw.add("city", "Jakarta")
        clock.days(29)
        assert mw.get("city").label == "fresh"
        clock.days(2)
        assert mw.get("city").label == "expired"


def test_a_new_value_replaces_and_the_same_value_reconfirms(mw, clock):
    mw.add("city", "Jakarta")
    clock.days(365)
    again = mw.add("city", "Jakarta")
    assert again.freshness == 1.0                                  # re-confirmed: restarts
    assert again.confidence == pytest.approx(0.9 + 0.09 * 0.5)    # one confirmation lifts the start
    assert again.updated_at is None                                # not a new value
    clock.days(10)
    moved = mw.add("city", "Surabaya")
    assert moved.value == "Surabaya" and moved.updated_at is not None
    assert moved.created_at == again.created_at
    assert len(mw.report()) == 1


def test_confidence_erodes_to_the_floor_without_reconfirmation(mw, clock):
    mw.add("city", "Jakarta")
    clock.days(365)
    assert mw.get("city").confidence == pytest.approx(0.45)
    clock.days(3650)
    assert mw.get("city").confidence == 0.1
    assert mw.refresh("city").confidence == pytest.approx(0.945)


def test_refresh_forget_and_errors(mw, clock):
    mw.add("city", "Jakarta")
    clock.days(400)
    assert mw.get("city").label != "fresh"
    assert mw.refresh("city").label == "fresh"
    assert mw.forget("city") is True
    assert mw.get("city") is None and mw.forget("city") is False
    with pytest.raises(ConfigError, match="no fact 'city'"):
        mw.refresh("city")
    with pytest.raises(ConfigError, match="unknown category 'hobbyz'"):
        mw.add("x", "y", category="hobbyz")
    with pytest.raises(ConfigError, match="non-empty value"):
        mw.add("x", "  ")
    with pytest.raises(ConfigError, match="> 0"):
        TTLConfig().set_half_life("employment", 0)


def test_a_ttl_config_can_add_a_category(tmp_path, clock):
    with MemWatch(db=str(tmp_path / "a.db"), ttl_config=TTLConfig().set_half_life("mood", 1), clock=clock) as mw:
        mw.add("today", "happy", category="mood")
        clock.days(1)
        assert mw.get("today").category == "mood" and mw.get("today").freshness == pytest.approx(0.5)


def test_subjects_keep_facts_apart(tmp_path, clock):
    with MemWatch(db=str(tmp_path / "a.db"), subject="alice", clock=clock) as mw:
        mw.add("city", "Jakarta")
        mw.add("city", "Paris", subject="bob")
        assert mw.get("city").value == "Jakarta"
        assert mw.get("city", subject="bob").value == "Paris"
        assert mw.get("city").ref == "memwatch:facts:alice:city"
        assert mw.forget("city", subject="bob") and mw.get("city").value == "Jakarta"


def test_the_cli_reports_the_apis_facts(tmp_path, clock):
    db = tmp_path / "memwatch.db"
    with MemWatch(db=str(db), clock=clock) as mw:
        mw.add("employer", "Google")
        mw.add("city", "Jakarta")
    proc = run("report", "--db", db, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    facts = {f["ref"]: f for f in json.loads(proc.stdout)["facts"]}
    assert set(facts) == {"memwatch:facts:employer", "memwatch:facts:city"}
    assert facts["memwatch:facts:employer"]["source"] == "memwatch"
    assert facts["memwatch:facts:employer"]["category"] == "employment"
    assert facts["memwatch:facts:employer"]["confidence"] is not None
    proc = run("stats", "--overlay", db, "--format", "json", cwd=tmp_path)
    assert json.loads(proc.stdout)["by_source"]["memwatch"]["total"] == 2
