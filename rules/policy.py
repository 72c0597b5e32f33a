"""The scoring policy a config sets: half-lives and TTLs per category, label thresholds and
the confidence lifecycle. Plain data with defaults; the formulas live in
overlay/engine/scoring.py, which reads these."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from memwatch_overlay.core.numbers import fast_round as _round
from memwatch_overlay.core.timeparse import DAY

DEFAULT_HALF_LIVES = {
    "employment": 180,
    "location": 365,
    "contact": 730,
    "preference": 365,
    "relationship": 730,
    "skill": 1095,
    "belief": 365,
    "fact": 3650,
    "general": 365,
}
DEFAULT_CATEGORY = "general"
CONFIDENCE_CEILING = 0.99
DEFAULT_CONFIDENCE_INITIAL = 0.9
DEFAULT_CONFIDENCE_FLOOR = 0.1
DEFAULT_CONFIDENCE_HALF_LIFE = 365.0


@dataclass(frozen=True)
class Thresholds:
    fresh: float = 0.8
    aging: float = 0.5
    stale: float = 0.3


@dataclass(frozen=True)
class CategoryPolicy:
    half_life_days: float
    ttl_days: float | None = None


@dataclass(frozen=True)
class ConfidencePolicy:
    """[lifecycle] settings of memwatch.toml: how confidence erodes (see the module doc)."""

    half_life_days: float = DEFAULT_CONFIDENCE_HALF_LIFE
    floor: float = DEFAULT_CONFIDENCE_FLOOR
    initial: float = DEFAULT_CONFIDENCE_INITIAL

    def confidence(self, as_of: float, confirmed_at: float | None, confirmations: int = 0) -> float:
        """Confidence at `as_of` of a fact last confirmed (or learned) at `confirmed_at`."""
        days = max(0.0, (as_of - confirmed_at) / DAY) if confirmed_at is not None else 0.0
        return self.confidence_after(days, confirmations)

    def confidence_after(self, days_since_confirmed: float, confirmations: int = 0) -> float:
        """Confidence `days_since_confirmed` (>= 0) after the last confirmation."""
        start = _confidence_start(self.initial, confirmations)
        return _round(max(self.floor, start * 0.5 ** (days_since_confirmed / self.half_life_days)), 6)


@lru_cache(maxsize=256, typed=True)
def _confidence_start(initial: float, confirmations: int) -> float:
    """The module doc's `start`: a handful of values (confirmations are small counts)."""
    start = initial + (CONFIDENCE_CEILING - initial) * (1.0 - 0.5 ** max(0, confirmations or 0))
    return min(CONFIDENCE_CEILING, start)
