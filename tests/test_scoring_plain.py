"""plain_scorer: score_fact for the usual fact (never accessed, no expiry of its own, no TTL)
from per-category constants; it must give score_fact's Score to the bit."""
import random

import pytest

from memwatch_overlay.overlay.engine.scoring import (
    DAY,
    CategoryPolicy,
    ConfidencePolicy,
    Thresholds,
    plain_scorer,
    score_fact,
)
from memwatch_overlay.core.timeparse import parse_as_of
from scoring_reference import same

AS_OF = parse_as_of("2026-06-01")
POLICIES = [CategoryPolicy(7), CategoryPolicy(90), CategoryPolicy(180), CategoryPolicy(365.25), CategoryPolicy(3650),
            CategoryPolicy(200.5)]
THRESHOLDS = [Thresholds(), Thresholds(0.85, 0.55, 0.25), Thresholds(1, 0.5, 0.3), Thresholds(0.8, 0.5, 0.0)]
LIFECYCLES = [ConfidencePolicy(), ConfidencePolicy(180.0, 0.2, 0.7)]


def ages(rnd: random.Random, policy: CategoryPolicy, th: Thresholds) -> list[float]:
    """Random ages, clock skew, zero, and ages at and around every threshold's crossing."""
    import math
    out = [0.0, -0.0, -3.5, 1e-9, 1e6, policy.half_life_days]
    for t in (th.fresh, th.aging, th.stale):
        if 0 < t < 1:
            cross = math.log(t) / math.log(0.5 ** (1 / policy.half_life_days))
            out += [cross, math.nextafter(cross, 0), math.nextafter(cross, math.inf), cross + 1e-7, cross - 1e-7]
    out += [rnd.uniform(-5, 4000) for _ in range(600)]
    return out


@pytest.mark.parametrize("lifecycle", LIFECYCLES, ids=["default lifecycle", "custom lifecycle"])
def test_plain_scorer_equals_score_fact_bit_for_bit(lifecycle):
    rnd = random.Random(3)
    checked = 0
    for policy in POLICIES:
        for th in THRESHOLDS:
            score = plain_scorer(policy, th, lifecycle)
            for age in ages(rnd, policy, th):
                learned = AS_OF - age * DAY
                want = score_fact(AS_OF, learned, policy, th, 0, None, None, lifecycle=lifecycle)
                got = score(AS_OF, learned)
                assert same(got, want), (policy, th, age, got, want)
                assert got.next_change_days == want.next_change_days
                checked += 1
    assert checked > 10_000


def test_plain_scorer_declines_a_category_with_a_ttl():
    assert plain_scorer(CategoryPolicy(180, ttl_days=90), Thresholds(), ConfidencePolicy()) is None
