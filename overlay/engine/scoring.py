"""Freshness scoring: the design's Ebbinghaus formula, kept exact.

    decay_factor  = 0.5 ** (1 / half_life_days)
    base_score    = decay_factor ** days_since_learned      (learned = max(created, updated))
    access_boost  = ln(1 + access_count) * 0.05
    recency_boost = 0.1 * decay_factor ** days_since_last_access   (0 when never accessed)
    freshness     = min(1.0, base_score + access_boost + recency_boost)

Labels: fresh >= 0.8, aging >= 0.5, stale >= 0.3, expired below (configurable).
A category's `ttl_days`, or an expiry the store itself records, makes a fact
`expired` whatever its score.

Confidence (the memlife lifecycle) is a second figure beside freshness: how much a fact
that nobody re-confirms should still be believed. It erodes from the last confirmation
(a `refresh`, or the same value added again through the API) or, for a fact never
re-confirmed, from when it was learned; each confirmation also lifts its starting point
half-way to the ceiling:

    start      = initial + (0.99 - initial) * (1 - 0.5 ** confirmations)
    confidence = max(floor, start * 0.5 ** (days_since_confirmed / confidence_half_life_days))

Defaults: initial 0.9, floor 0.1, half-life 365 days, ceiling 0.99 (never certainty).
Unlike freshness it never drops below the floor and ignores access counts: being read
often is not evidence that a fact is still true.

Everything here is a pure function of its inputs.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from memwatch_overlay.core.numbers import fast_round as _round
from memwatch_overlay.core.timeparse import DAY
from memwatch_overlay.core.vocab import LABELS  # noqa: F401 (scoring's labels, best first)
from memwatch_overlay.rules.policy import (  # noqa: F401 (the policy names are scoring's vocabulary too)
    CONFIDENCE_CEILING,
    DEFAULT_CATEGORY,
    DEFAULT_CONFIDENCE_FLOOR,
    DEFAULT_CONFIDENCE_HALF_LIFE,
    DEFAULT_CONFIDENCE_INITIAL,
    DEFAULT_HALF_LIVES,
    CategoryPolicy,
    ConfidencePolicy,
    Thresholds,
)
from memwatch_overlay.rules.policy import _confidence_start



class Score(NamedTuple):
    """One fact's scores at one moment. A NamedTuple rather than a dataclass: one is built
    per fact on every sync's hot path, and a tuple is the cheapest immutable record."""

    freshness: float
    label: str
    age_days: float
    days_left: float | None          # until the label drops below fresh (None: never)
    days_until_expired: float | None  # until the label becomes expired (None: never)
    expired_by: str | None = None    # "ttl" | "source" when a hard expiry decided the label
    confidence: float | None = None  # ConfidencePolicy.confidence (the sync engine's lifecycle)
    # Days until the label next changes with nothing else changing (None: never). Unrounded
    # and never late: the daemon rescores a fact only once this much time has passed.
    next_change_days: float | None = None


_new_score = tuple.__new__   # Score's fields in order, without the keyword-handling __new__


def decay_factor(half_life_days: float) -> float:
    return 0.5 ** (1.0 / half_life_days)


@lru_cache(maxsize=256)
def _decay(half_life_days: float) -> tuple[float, float]:
    """(decay_factor, its log): constants per category, computed once."""
    d = decay_factor(half_life_days)
    return d, math.log(d)


def freshness(days_since_learned: float, half_life_days: float, access_count: int = 0,
              days_since_access: float | None = None) -> float:
    """The formula above; negative ages (clock skew) count as 0."""
    d = _decay(half_life_days)[0]
    base = d ** max(0.0, days_since_learned)
    boost = math.log1p(max(0, access_count or 0)) * 0.05
    recency = 0.1 * d ** max(0.0, days_since_access) if days_since_access is not None else 0.0
    return min(1.0, base + boost + recency)


def label_for(value: float, thresholds: Thresholds = Thresholds()) -> str:
    if value >= thresholds.fresh:
        return "fresh"
    if value >= thresholds.aging:
        return "aging"
    if value >= thresholds.stale:
        return "stale"
    return "expired"


def days_until_below(threshold: float, days_since_learned: float, half_life_days: float,
                     access_count: int = 0, days_since_access: float | None = None) -> float | None:
    """Days from now until freshness falls below `threshold` (closed form).

    freshness(t) = d**t * (d**a + 0.1 * d**s) + boost, so the crossing is
    t = log_d((threshold - boost) / (d**a + 0.1 * d**s)). None when the access
    boost alone keeps the fact above the threshold forever.
    """
    d, log_d = _decay(half_life_days)
    boost = math.log1p(max(0, access_count or 0)) * 0.05
    decaying = d ** max(0.0, days_since_learned)
    if days_since_access is not None:
        decaying += 0.1 * d ** max(0.0, days_since_access)
    return _until(threshold, boost, decaying, log_d)


def _until(threshold: float, boost: float, decaying: float, log_d: float) -> float | None:
    """days_until_below's closed form on precomputed parts (score_fact shares them)."""
    if threshold - boost <= 0:
        return None
    if decaying + boost < threshold:
        return 0.0
    return max(0.0, math.log((threshold - boost) / decaying) / log_d)


_DEFAULT_THRESHOLDS = Thresholds()
_log = math.log
_log1p = math.log1p


def score_fact(as_of: float, learned_at: float | None, policy: CategoryPolicy,
               thresholds: Thresholds = _DEFAULT_THRESHOLDS, access_count: int = 0,
               accessed_at: float | None = None, expires_at: float | None = None,
               confidence: float | None = None, *, lifecycle: ConfidencePolicy | None = None,
               confirmations: int = 0) -> Score:
    """Score one fact at `as_of` (all times epoch seconds UTC).

    `learned_at` None (a store without timestamps) scores as learned at `as_of`.
    `expires_at` is an expiry the source itself records (LangGraph's expires_at,
    mem0's expiration_date); past it the fact is expired.
    `confidence` is passed through to the Score as given; with `lifecycle` instead, it is
    `lifecycle.confidence(as_of, learned_at, confirmations)` (last confirmed when learned).

    The sync's hot path: freshness(), label_for() and days_until_below() on shared parts
    (each power of the decay factor computed once), to the last bit the same
    (tests/test_scoring_reference.py holds it to a plain transcription of the formula).
    """
    d, log_d = _decay(policy.half_life_days)
    age = max(0.0, (as_of - learned_at) / DAY) if learned_at is not None else 0.0
    # freshness()'s access boost; never read (0, None) is exactly 0.0 without the log
    boost = _log1p(max(0, access_count)) * 0.05 if access_count else 0.0
    base = d ** age
    if accessed_at is not None:
        recency = 0.1 * d ** max(0.0, (as_of - accessed_at) / DAY)
        decaying = base + recency        # days_until_below's d**a + 0.1 * d**s
    else:
        recency = 0.0
        decaying = base
    # rounded before labelling so that exactly one half-life reads 0.5 (aging), not 0.49999…
    value = _round(min(1.0, base + boost + recency), 9)
    fresh_at, aging_at, stale_at = thresholds.fresh, thresholds.aging, thresholds.stale
    days_left = _until(fresh_at, boost, decaying, log_d)          # days_until_below(fresh)
    until_expired = _until(stale_at, boost, decaying, log_d)      # days_until_below(stale)

    # label_for(value); freshness only falls with time, so the label walks fresh -> aging ->
    # stale -> expired and the next change is the crossing of the current label's lower threshold.
    if value >= fresh_at:
        label = "fresh"
        next_change = days_left
    elif value >= aging_at:
        label = "aging"
        next_change = _until(aging_at, boost, decaying, log_d)
    elif value >= stale_at:
        label = "stale"
        next_change = until_expired
    else:
        label = "expired"
        next_change = None

    expired_by = None
    ttl = policy.ttl_days
    if ttl is not None or expires_at is not None:
        hard_limits = []
        if ttl is not None:
            hard_limits.append(("ttl", ttl - age))
        if expires_at is not None:
            hard_limits.append(("source", (expires_at - as_of) / DAY))
        for reason, remaining in hard_limits:
            remaining = max(0.0, remaining)
            days_left = remaining if days_left is None else min(days_left, remaining)
            until_expired = remaining if until_expired is None else min(until_expired, remaining)
            if remaining <= 0.0 and expired_by is None:
                expired_by = reason
            if label != "expired":
                next_change = remaining if next_change is None else min(next_change, remaining)
        if expired_by is not None:
            label = "expired"
            next_change = None
    if lifecycle is not None:
        confidence = lifecycle.confidence_after(age, confirmations)
    return _new_score(Score, (_round(value, 6), label, _round(age, 6),
                              None if days_left is None else _round(days_left, 3),
                              None if until_expired is None else _round(until_expired, 3),
                              expired_by, confidence, next_change))


class PlainConstants(NamedTuple):
    """What plain_scorer works out once per category: everything in a plain fact's score that
    does not depend on the fact. The store's set-based rescore (overlay/store/plain_rescore.py)
    computes score_fact's figures in SQL from these, to the same bits."""

    decay: float                 # decay_factor(half_life_days)
    log_decay: float             # its natural log (< 0)
    fresh: float
    aging: float
    stale: float
    confidence_floor: float
    confidence_half_life: float
    confidence_start: float      # _confidence_start(initial, 0): never re-confirmed


def plain_constants(policy: CategoryPolicy, thresholds: Thresholds,
                    lifecycle: ConfidencePolicy) -> PlainConstants | None:
    """The constants of plain_scorer(policy, thresholds, lifecycle); None for a category with
    `ttl_days` (its facts are scored by score_fact)."""
    if policy.ttl_days is not None:
        return None
    d, log_d = _decay(policy.half_life_days)
    return PlainConstants(d, log_d, thresholds.fresh, thresholds.aging, thresholds.stale, lifecycle.floor,
                          lifecycle.half_life_days, _confidence_start(lifecycle.initial, 0))


def plain_scorer(policy: CategoryPolicy, thresholds: Thresholds, lifecycle: ConfidencePolicy):
    """score(as_of, learned_at) -> score_fact(as_of, learned_at, policy, thresholds,
    lifecycle=lifecycle) for the usual fact: never accessed, no access count, no expiry of
    its own, in a category without `ttl_days` (for such a category: None, use score_fact).

    What is the same for every fact of the category (the decay factor and its log, the
    thresholds, the confidence's starting point) is worked out once here, so a sync pays only
    for the fact's own arithmetic: score_fact's operations in score_fact's order with the
    access terms (exactly 0.0) left out, hence the same bits (tests/test_scoring_plain.py).
    """
    constants = plain_constants(policy, thresholds, lifecycle)
    if constants is None:
        return None
    d, log_d, fresh_at, aging_at, stale_at, floor, conf_half_life, start = constants
    log, rnd, new = _log, _round, _new_score

    def until(threshold: float, base: float) -> float | None:
        # _until(threshold, 0.0, base, log_d): x - 0.0 and x + 0.0 are x for these values
        if threshold <= 0:
            return None
        if base < threshold:
            return 0.0
        return max(0.0, log(threshold / base) / log_d)

    def score(as_of: float, learned_at: float) -> Score:
        age = (as_of - learned_at) / DAY
        if not age > 0.0:           # max(0.0, age)
            age = 0.0
        base = d ** age             # > 0 or +0.0: base + 0.0 + 0.0 is base
        value = rnd(min(1.0, base), 9)
        days_left = until(fresh_at, base)
        until_expired = until(stale_at, base)
        if value >= fresh_at:
            label, next_change = "fresh", days_left
        elif value >= aging_at:
            label, next_change = "aging", until(aging_at, base)
        elif value >= stale_at:
            label, next_change = "stale", until_expired
        else:
            label, next_change = "expired", None
        confidence = rnd(max(floor, start * 0.5 ** (age / conf_half_life)), 6)
        return new(Score, (rnd(value, 6), label, rnd(age, 6),
                           None if days_left is None else rnd(days_left, 3),
                           None if until_expired is None else rnd(until_expired, 3),
                           None, confidence, next_change))

    return score
