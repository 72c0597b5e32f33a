"""The design's formula on hand-computed values."""
import math

import pytest

from memwatch_overlay.overlay.engine import scoring
from memwatch_overlay.overlay.engine.scoring import CategoryPolicy, Thresholds, score_fact

DAY = 86400.0
NOW = 1_800_000_000.0


def test_employment_180_days_never_accessed_is_half():
    assert scoring.freshness(180, 180) == pytest.approx(0.5)
    s = score_fact(NOW, NOW - 180 * DAY, CategoryPolicy(180))
    assert s.freshness == pytest.approx(0.5)
    assert s.label == "aging"          # 0.5 >= aging threshold
    assert s.age_days == pytest.approx(180)


def test_access_and_recency_boosts():
    # 365 days old location fact (base 0.5), 3 accesses, last one 0 days ago
    expected = 0.5 + math.log(4) * 0.05 + 0.1 * 1.0
    assert scoring.freshness(365, 365, access_count=3, days_since_access=0) == pytest.approx(expected)
    # recency decays with the same half-life: accessed 365 days ago adds 0.05
    assert scoring.freshness(365, 365, 0, 365) == pytest.approx(0.5 + 0.05)


def test_freshness_is_capped_at_one():
    assert scoring.freshness(0, 365, access_count=100, days_since_access=0) == 1.0


@pytest.mark.parametrize("value,label", [(0.8, "fresh"), (0.79, "aging"), (0.5, "aging"),
                                         (0.49, "stale"), (0.3, "stale"), (0.29, "expired")])
def test_labels_at_thresholds(value, label):
    assert scoring.label_for(value) == label


def test_custom_thresholds():
    assert scoring.label_for(0.85, Thresholds(fresh=0.9, aging=0.6, stale=0.4)) == "aging"


def test_days_left_reaches_threshold_exactly():
    policy = CategoryPolicy(180)
    s = score_fact(NOW, NOW - 10 * DAY, policy)
    later = score_fact(NOW + s.days_left * DAY, NOW - 10 * DAY, policy)
    assert later.freshness == pytest.approx(0.8, abs=1e-4)
    # closed form: 0.5 ** (t / 180) = 0.8  ->  t = 180 * log2(1 / 0.8)
    assert s.days_left == pytest.approx(180 * math.log2(1 / 0.8) - 10, abs=1e-3)
    assert s.days_until_expired == pytest.approx(180 * math.log2(1 / 0.3) - 10, abs=1e-3)


def test_days_left_zero_once_below_fresh_and_none_when_boost_keeps_it():
    assert score_fact(NOW, NOW - 400 * DAY, CategoryPolicy(180)).days_left == 0.0
    # ln(1 + n) * 0.05 >= 0.8 needs n >= e**16 - 1: such a fact never drops below fresh
    assert scoring.days_until_below(0.8, 1000, 180, access_count=int(math.e ** 16)) is None


def test_ttl_expires_whatever_the_score():
    s = score_fact(NOW, NOW - 100 * DAY, CategoryPolicy(3650, ttl_days=90))
    assert s.freshness > 0.9 and s.label == "expired" and s.expired_by == "ttl"
    young = score_fact(NOW, NOW - 10 * DAY, CategoryPolicy(3650, ttl_days=90))
    assert young.label == "fresh" and young.days_left == pytest.approx(80, abs=1e-3)


def test_source_expiry_and_missing_learned_time():
    past = score_fact(NOW, NOW - DAY, CategoryPolicy(365), expires_at=NOW - 1)
    assert past.label == "expired" and past.expired_by == "source"
    unknown = score_fact(NOW, None, CategoryPolicy(365))
    assert unknown.freshness == 1.0 and unknown.age_days == 0.0
