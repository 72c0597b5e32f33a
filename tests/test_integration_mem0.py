"""The mem0 client wrapper, around mem0's own `Memory` configured offline (qdrant on disk,
a deterministic embedding, infer=False: no LLM), as the fixture stores were made."""
from __future__ import annotations

import pytest

import frameworkstores      # first: mem0's home in a temporary folder, telemetry off, before mem0 is imported

pytestmark = pytest.mark.integrations   # under CI=true a skip (mem0 missing) fails the run
T0 = 1_780_000_000.0
DAY = 86400.0


class Clock:
    now = T0

    def __call__(self):
        return self.now


@pytest.fixture
def memory(tmp_path):
    pytest.importorskip("mem0", reason="pip install 'memwatch-overlay[test-integrations]'")
    mem = frameworkstores.mem0_memory(tmp_path / "history.db", tmp_path / "qdrant")
    yield mem
    frameworkstores.mem0_close(mem)


def test_add_passes_through_and_returns_the_watch_result_of_that_user(memory, tmp_path):
    from memwatch_overlay.integrations.mem0 import WatchedMemory
    clock = Clock()
    watched = WatchedMemory(memory, db=str(tmp_path / "memwatch.db"), clock=clock)
    first = watched.add("Priya works at Google as a product analyst.", user_id="u_priya", infer=False)
    # mem0's own result, as mem0 returns it
    assert first["results"][0]["event"] == "ADD" and first["results"][0]["memory"].startswith("Priya works")
    mid = first["results"][0]["id"]
    assert memory.get(mid)["memory"] == "Priya works at Google as a product analyst."     # really in mem0
    assert first["watch"]["user_id"] == "u_priya"
    assert first["watch"]["summary"] == "0 contradiction(s) detected. 0 stale memories."
    [m] = first["watch"]["memories"]
    assert m["ref"] == f"mem0:memories:{mid}" and m["category"] == "employment" and m["event"] == "ADD"

    watched.add("Tomasz works at Deloitte in Krakow.", user_id="u_tomasz", infer=False)
    clock.now += 30 * DAY
    second = watched.add("Priya just joined Stripe as a staff engineer.", user_id="u_priya", infer=False)
    watch = second["watch"]
    assert watch["summary"] == "1 contradiction(s) detected. 0 stale memories."
    [c] = watch["contradictions"]
    assert c["older"] == f"mem0:memories:{mid}" and c["older_text"].startswith("Priya works at Google")
    assert c["newer_text"].startswith("Priya just joined Stripe") and c["kind"] in ("value", "cue")
    assert second["watch"]["memories"][0]["contradicts"] == [f"mem0:memories:{mid}"]
    # another user's memories are not that user's contradictions
    other = watched.add("Tomasz likes hiking.", user_id="u_tomasz", infer=False)
    assert other["watch"]["contradictions"] == []
    # mem0's other methods pass through: get_all lists both of Priya's memories
    found = watched.get_all(filters={"user_id": "u_priya"})
    assert len(found["results"]) == 2
    # a delete reaches mem0 and the overlay
    watched.delete(mid)
    assert memory.get(mid) is None
    assert watched.watch("u_priya")["contradictions"] == []
    watched.close()
