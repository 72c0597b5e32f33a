"""Renderers keep bounded memory: peak allocation does not grow with the number of facts."""
import io
import random
import tracemalloc

import pytest

from memwatch_overlay.overlay.output.formats import RENDERERS, render
from memwatch_overlay.overlay.output.formats.digest import Digest
from reportgen import label_of


class Sink(io.TextIOBase):
    """A text stream that counts and discards what is written."""

    def __init__(self):
        self.chars = 0

    def write(self, s):
        self.chars += len(s)
        return len(s)


def lazy_facts(n, seed=61):
    rnd = random.Random(seed)
    for i in range(n):
        freshness = rnd.random()
        yield {"source": f"s{i % 3}", "table": "t", "pk": {"id": str(i)}, "ref": f"s{i % 3}:t:{i}",
               "subject": "u", "key": "k", "text": "x" * 100, "category": f"c{i % 4}",
               "created_at": "2025-01-01", "age_days": 10.0, "freshness": freshness,
               "label": label_of(freshness), "days_left": rnd.uniform(0, 500),
               "status": "contradicted" if i % 50 == 0 else "active", "contradicted_by": []}


def peak(fmt, n):
    report = {"version": 1, "as_of": "2026-01-01", "passed": True, "summary": {"total": n},
              "thresholds": {}, "facts": lazy_facts(n), "contradictions": []}
    opts = {"max_results": 2000} if fmt == "sarif" else {}
    tracemalloc.start()
    try:
        render(report, fmt, Sink(), **opts)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_peak_memory_does_not_grow_with_facts(fmt):
    small, large = peak(fmt, 5_000), peak(fmt, 40_000)
    # 8x the facts; a renderer that kept every fact would need ~8x the memory.
    assert large < 1.5 * small + 200_000, (small, large)


def test_expiry_uses_days_until_expired_else_days_left():
    d = Digest(top=2)
    d.add({"ref": "a", "label": "aging", "freshness": 0.6, "days_left": 3.0, "days_until_expired": 200.0})
    d.add({"ref": "b", "label": "fresh", "freshness": 0.9, "days_left": 5.0})
    assert [f["ref"] for f in d.soonest] == ["b", "a"]
    assert d.horizons[0] == 1 and d.horizons[4] == 1     # 5 d -> "0-7 d", 200 d -> "181-365 d"


def test_digest_keeps_caps():
    d = Digest(problem_cap=3, top=4).consume(lazy_facts(10_000))
    assert d.seen == 10_000
    assert all(len(g.problem_facts) <= 3 for g in d.groups.values())
    assert sum(g.problem_count for g in d.groups.values()) > 100
    assert len(d.stalest) == 4 and len(d.soonest) == 4
    fresh = sorted(f["freshness"] for f in lazy_facts(10_000))
    assert [f["freshness"] for f in d.stalest] == fresh[:4]
