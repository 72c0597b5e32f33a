"""score_fact computes the formula once per fact on shared parts; it must agree exactly
with the standalone freshness() / days_until_below() it inlines, and labels with label_for."""
import random

from memwatch_overlay.overlay.engine.scoring import (
    DAY,
    CategoryPolicy,
    Thresholds,
    days_until_below,
    freshness,
    label_for,
    score_fact,
)
from memwatch_overlay.core.timeparse import parse_as_of

AS_OF = parse_as_of("2026-06-01")


def test_score_fact_equals_the_reference_functions_bit_for_bit():
    rnd = random.Random(11)
    th = Thresholds(0.85, 0.55, 0.25)
    for _ in range(5000):
        half = rnd.choice([7, 90, 180, 365.25, 3650])
        learned = AS_OF - rnd.uniform(-5, 3000) * DAY          # includes clock skew (future)
        count = rnd.choice([0, 1, 2, 7, 50, 10_000])
        accessed = None if rnd.random() < 0.4 else AS_OF - rnd.uniform(-1, 900) * DAY
        s = score_fact(AS_OF, learned, CategoryPolicy(half), th, count, accessed)
        age = max(0.0, (AS_OF - learned) / DAY)
        since = None if accessed is None else max(0.0, (AS_OF - accessed) / DAY)
        value = freshness(age, half, count, since)
        assert s.freshness == round(value, 6)
        assert s.label == label_for(value, th)
        left = days_until_below(th.fresh, age, half, count, since)
        assert s.days_left == (None if left is None else round(left, 3))
        until = days_until_below(th.stale, age, half, count, since)
        assert s.days_until_expired == (None if until is None else round(until, 3))
