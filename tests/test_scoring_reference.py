"""The fast score_fact against a plain transcription of the formula, bit for bit.

tests/scoring_reference.py holds `reference_score`, overlay/engine/scoring.py's score_fact as it
was before the hot-path rewrite (freshness(), days_until_below(), label_for(),
ConfidencePolicy.confidence() called one by one, builtin round()), and `design_freshness`,
the design's formula written out. Every Score field must be equal and of the same type:
compared by repr, which tells apart any two different floats (and 0.0 from -0.0) and an
int from a float.
"""
from __future__ import annotations

import math
import random

import pytest

from memwatch_overlay.overlay.engine import scoring
from memwatch_overlay.overlay.engine.scoring import (
    DAY,
    DEFAULT_HALF_LIVES,
    CategoryPolicy,
    ConfidencePolicy,
    Score,
    Thresholds,
    score_fact,
)
from memwatch_overlay.core.timeparse import parse_as_of
from scoring_reference import (design_freshness, ref_confidence, ref_days_until_below, ref_decay_factor, ref_label,
                               reference_score, same)

# -- random inputs ----------------------------------------------------------------------------
AS_OFS = [parse_as_of("2026-06-01"), parse_as_of("2026-11-29T15:57:40"), 1_800_000_000.0]
HALF_LIVES = sorted(set(DEFAULT_HALF_LIVES.values())) + [1, 7, 90, 365.25, 1000.5]
THRESHOLDS = [Thresholds(), Thresholds(0.85, 0.55, 0.25), Thresholds(0.9, 0.6, 0.4), Thresholds(0.5, 0.5, 0.5),
              Thresholds(0.95, 0.05, 0.01)]
COUNTS = [0, 0, 0, 1, 2, 3, 7, 10, 50, 100, 10_000, int(math.e ** 16), None, -3]
LIFECYCLES = [ConfidencePolicy(), ConfidencePolicy(180.0, 0.2, 0.7), ConfidencePolicy(30.0, 0.0, 0.99)]


def random_age(rnd: random.Random, half_life: float, th: Thresholds) -> float:
    """Days since learning: anywhere in 0..10,000, on a half-life multiple, or just around a
    threshold crossing (where rounding decides the label)."""
    kind = rnd.random()
    if kind < 0.45:
        return rnd.uniform(0, 10_000)
    if kind < 0.55:
        return rnd.uniform(0, 30)
    if kind < 0.7:
        return half_life * rnd.choice([0.5, 1, 1, 2, 3, 10])       # exactly one half-life, ...
    if kind < 0.75:
        return rnd.choice([0.0, -rnd.uniform(0, 5)])               # now, or clock skew
    # near a crossing: d**t == threshold  ->  t = half_life * log2(1 / threshold)
    t = half_life * math.log2(1 / rnd.choice([th.fresh, th.aging, th.stale]))
    for _ in range(rnd.randint(0, 40)):
        t = math.nextafter(t, rnd.choice([math.inf, -math.inf]))
    return t + rnd.choice([0.0, 0.0, 1e-7, -1e-7, 1e-4, -1e-4])


def random_case(rnd: random.Random) -> dict:
    as_of = rnd.choice(AS_OFS)
    half_life = rnd.choice(HALF_LIVES)
    th = rnd.choice(THRESHOLDS)
    ttl = rnd.choice([None, None, None, 1, 30, 90, 365, 3650.5, "age"])
    age = random_age(rnd, half_life, th)
    learned = None if rnd.random() < 0.05 else as_of - age * DAY
    if ttl == "age":   # the ttl runs out exactly now
        ttl = max(0.0, (as_of - learned) / DAY) if learned is not None else 0
    accessed = rnd.choice([None, None, "past", "past", "future", "learned"])
    accessed = {None: None, "past": as_of - rnd.uniform(0, 3000) * DAY, "future": as_of + rnd.uniform(0, 10) * DAY,
                "learned": learned}[accessed]
    expires = rnd.choice([None, None, None, "past", "future", "now"])
    expires = {None: None, "past": as_of - rnd.uniform(0, 400) * DAY, "future": as_of + rnd.uniform(0, 400) * DAY,
               "now": as_of}[expires]
    return dict(as_of=as_of, learned_at=learned, policy=CategoryPolicy(half_life, ttl), thresholds=th,
                access_count=rnd.choice(COUNTS), accessed_at=accessed, expires_at=expires)


def test_score_fact_equals_the_reference_on_random_inputs():
    rnd = random.Random(20261129)
    labels, expired_by = set(), set()
    for _ in range(40_000):
        case = random_case(rnd)
        args = (case["as_of"], case["learned_at"], case["policy"], case["thresholds"], case["access_count"],
                case["accessed_at"], case["expires_at"])
        got = score_fact(*args)
        want = reference_score(*args)
        assert same(got, want), (case, got, want)
        assert isinstance(got, Score)
        labels.add(got.label)
        expired_by.add(got.expired_by)
    assert labels == {"fresh", "aging", "stale", "expired"} and expired_by == {None, "ttl", "source"}


def test_confidence_computed_inside_score_fact_equals_the_reference():
    rnd = random.Random(7)
    for _ in range(20_000):
        case = random_case(rnd)
        lifecycle = rnd.choice(LIFECYCLES)
        confirmations = rnd.choice([0, 0, 1, 2, 3, 4, 5])
        args = (case["as_of"], case["learned_at"], case["policy"], case["thresholds"], case["access_count"],
                case["accessed_at"], case["expires_at"])
        want_confidence = ref_confidence(lifecycle, case["as_of"], case["learned_at"], confirmations)
        want = reference_score(*args, confidence=want_confidence)
        got = score_fact(*args, lifecycle=lifecycle, confirmations=confirmations)
        assert same(got, want), (case, lifecycle, confirmations, got, want)
        # the passthrough (what callers with their own confidence use) is unchanged
        assert same(score_fact(*args, confidence=want_confidence), want)
        confirmed = case["as_of"] - rnd.uniform(-2, 2000) * DAY
        assert repr(lifecycle.confidence(case["as_of"], confirmed, confirmations)) == \
            repr(ref_confidence(lifecycle, case["as_of"], confirmed, confirmations))


def test_public_functions_equal_the_reference():
    rnd = random.Random(3)
    for _ in range(10_000):
        half_life = rnd.choice(HALF_LIVES)
        th = rnd.choice(THRESHOLDS)
        age = random_age(rnd, half_life, th)
        count = rnd.choice(COUNTS)
        since = rnd.choice([None, rnd.uniform(0, 3000), 0.0])
        assert repr(scoring.freshness(age, half_life, count, since)) == repr(design_freshness(age, half_life, count, since))
        for t in (th.fresh, th.aging, th.stale):
            assert repr(scoring.days_until_below(t, age, half_life, count, since)) == \
                repr(ref_days_until_below(t, age, half_life, count, since))
        value = rnd.random()
        assert scoring.label_for(value, th) == ref_label(value, th)
        assert repr(scoring.decay_factor(half_life)) == repr(ref_decay_factor(half_life))


def test_an_exact_half_life_reads_half_and_aging():
    for half_life in HALF_LIVES:
        as_of = AS_OFS[0]
        s = score_fact(as_of, as_of - half_life * DAY, CategoryPolicy(half_life))
        assert same(s, reference_score(as_of, as_of - half_life * DAY, CategoryPolicy(half_life)))
        assert s.freshness == 0.5 and s.label == "aging"


def test_score_is_an_immutable_record_with_defaults():
    s = Score(0.5, "aging", 1.0, 2.0, 3.0)
    assert (s.expired_by, s.confidence, s.next_change_days) == (None, None, None)
    assert s == Score(0.5, "aging", 1.0, 2.0, 3.0, None, None, None)
    assert s._replace(confidence=0.9).confidence == 0.9
    with pytest.raises(AttributeError):
        s.label = "fresh"


# -- scoring._round against round() --------------------------------------------------------
def near_ties(rnd: random.Random, ndigits: int):
    """Values on and around k + 0.5 units of 10**-ndigits, where rounding is decided."""
    scale = 10 ** ndigits
    k = rnd.choice([0, 1, 2, 5, 49, 50, 499, rnd.randint(0, 10 ** 6), rnd.randint(0, 10 ** 12)])
    x = (k + 0.5) / scale
    yield x
    for direction in (math.inf, -math.inf):
        y = x
        for _ in range(rnd.randint(1, 6)):
            y = math.nextafter(y, direction)
            yield y


def test_round_equals_builtin_round_bit_for_bit():
    rnd = random.Random(99)
    values = [0.0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.375, 2.675, 1e-20, 5e-324, 1e14, 1e15, 1e16, 1e300,
              math.inf, -math.inf, math.nan, -1e-12, -0.5, 1, 0, 2, True, 10 ** 20]
    for _ in range(60_000):
        values.append(rnd.choice([rnd.random(), rnd.uniform(0, 10_000), rnd.random() * 10 ** rnd.randint(-20, 14),
                                  -rnd.random(), round(rnd.uniform(0, 100), rnd.randint(0, 9))]))
    for ndigits in (0, 1, 2, 3, 6, 9, 12):
        for _ in range(3000):
            values.extend(near_ties(rnd, ndigits))
    for x in values:
        for ndigits in (0, 1, 2, 3, 6, 9, 12):
            got, want = scoring._round(x, ndigits), round(x, ndigits)
            assert type(got) is type(want) and repr(got) == repr(want), (x, ndigits, got, want)
