"""search: relevance x freshness x confidence over the overlay's facts."""
import json
import shutil

import pytest

from memwatch_overlay import MemWatch
from memwatch_overlay.overlay.engine.scoring import DAY
from memwatch_overlay.overlay.engine.search import terms
from conftest import AGENT_STORES
from storegen import run

T0 = 1_780_000_000.0


def test_terms_drop_stop_words_and_endings():
    assert terms("I moved to the cities, working at Google") == ["mov", "citi", "work", "google"]


@pytest.fixture
def mw(tmp_path):
    now = [T0]
    m = MemWatch(db=str(tmp_path / "o.db"), clock=lambda: now[0])
    m.now = now
    yield m
    m.close()


def test_a_fresher_fact_outranks_an_equally_relevant_stale_one(mw):
    mw.add("old_city", "lives in Jakarta", category="location")
    mw.now[0] += 700 * DAY
    mw.add("new_city", "lives in Bandung", category="location")
    mw.add("pet", "has a dog named Jakarta", category="fact")
    hits = mw.search("lives in")
    assert [h.fact["key"] for h in hits] == ["new_city", "old_city"]
    assert hits[0].relevance == hits[1].relevance == 1.0
    new, old = hits
    assert new.score == pytest.approx(new.fact["freshness"] * new.fact["confidence"], abs=1e-4)
    assert old.score == pytest.approx(old.fact["freshness"] * old.fact["confidence"], abs=1e-4)
    assert old.score < new.score


def test_relevance_ranks_before_age_when_the_match_differs(mw):
    mw.add("note1", "Jakarta Jakarta traffic in Jakarta")
    mw.add("note2", "a trip to Bali, then a long flight home")
    mw.add("note3", "Jakarta")
    hits = mw.search("Jakarta traffic")
    assert [h.fact["key"] for h in hits] == ["note1", "note3"]        # note2 does not match at all
    assert hits[0].relevance == 1.0 > hits[1].relevance > 0
    assert mw.search("the of and") == [] and mw.search("volcano") == []
    assert len(mw.search("Jakarta", limit=1)) == 1


def test_search_command_over_an_audited_store(tmp_path):
    shutil.copy(AGENT_STORES / "langgraph" / "langgraph_store.sqlite", tmp_path / "lg.sqlite")
    as_of = "2026-11-29T15:57:40Z"
    assert run("audit", "lg.sqlite", "--as-of", as_of, "--overlay", "o.db", cwd=tmp_path).returncode in (0, 1)
    proc = run("search", "works at", "--overlay", "o.db", "--as-of", as_of, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits and all("work" in (h["text"] + (h["key"] or "")).lower() for h in hits)
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    one = hits[0]
    assert one["score"] == pytest.approx(one["relevance"] * one["freshness"] * one["confidence"], abs=1e-3)
    subject = one["subject"]
    proc = run("search", "works at", "--overlay", "o.db", "--subject", subject, "--format", "json", cwd=tmp_path)
    assert {h["subject"] for h in json.loads(proc.stdout)} == {subject}
    table = run("search", "works at", "--overlay", "o.db", "--as-of", as_of, cwd=tmp_path)
    assert table.returncode == 0 and one["ref"][:20] in table.stdout
