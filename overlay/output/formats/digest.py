"""One pass over an audit report's facts, keeping only what a renderer prints.

`report["facts"]` may be a one-pass iterator over a million facts, so no renderer
holds them all. `Digest.consume()` reads each fact once and keeps:

- counters per (source, category) and per category (a few ints each);
- per (source, category), the first `problem_cap` problem facts (stale, expired or
  contradicted) and a count of the rest;
- the `top` stalest facts (lowest freshness) and the `top` soonest to lose freshness
  (smallest non-negative `days_left`), in bounded heaps;
- a 10-bin freshness histogram per category and counts of days_left per horizon.

Memory is therefore O(groups x problem_cap + top), whatever the number of facts.
Kept facts are trimmed copies (long text shortened). Facts whose status is
``deleted`` or ``forgotten`` are skipped, as the report's summary skips them.
"""
from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from memwatch_overlay.core.redact import redact_dsn
from memwatch_overlay.core.vocab import LABELS

DEFAULT_PROBLEM_CAP = 50   # problem facts kept per (source, category)
DEFAULT_TOP = 20           # stalest / soonest-expiring facts kept
TEXT_LIMIT = 160           # characters of a fact's text kept for display
HIST_BINS = 10             # freshness histogram bins over [0, 1]
# Upper bounds (days, inclusive) of the expiry timeline's horizons; the last is open.
HORIZONS = (7, 30, 90, 180, 365)
PROBLEM_KINDS = ("expired", "contradicted", "stale")   # most severe first
GONE = ("deleted", "forgotten")   # statuses of facts no longer live: skipped everywhere
SUMMARY_KEYS = ("total", "fresh", "aging", "stale", "expired", "contradicted", "avg_freshness")


def problems(fact: Mapping[str, Any]) -> list[str]:
    """The problem kinds of one fact, most severe first: expired, contradicted, stale.

    A fact deleted in its source (or forgotten) has none: it is no longer live.
    """
    if fact.get("status") in GONE:
        return []
    label = fact.get("label")
    kinds = []
    if label == "expired":
        kinds.append("expired")
    if fact.get("status") == "contradicted" or label == "contradicted":
        kinds.append("contradicted")
    if label == "stale":
        kinds.append("stale")
    return kinds


def expiry_days(fact: Mapping[str, Any]) -> Any:
    """Days until the fact expires: ``days_until_expired`` when the report has it, else
    ``days_left`` (the contract's days until it stops being fresh)."""
    if "days_until_expired" in fact:
        return fact["days_until_expired"]
    return fact.get("days_left")


def head_and_count(items: Iterable, n: int) -> tuple[list, int]:
    """The first `n` of `items` and how many there are, without holding the rest: a list,
    or a report's live Contradictions (len() is one count query, iteration streams)."""
    if not hasattr(items, "__len__"):
        items = list(items)
    return list(itertools.islice(iter(items), n)), len(items)


def shorten(text: Any, limit: int = TEXT_LIMIT) -> str:
    """`text` as one line of at most `limit` characters (an ellipsis marks a cut)."""
    s = " ".join(str(text if text is not None else "").split())
    return s if len(s) <= limit else s[: limit - 1] + "\u2026"


def trim(fact: Mapping[str, Any]) -> dict:
    """A copy of `fact` small enough to keep: text shortened, unknown keys dropped."""
    keep = ("source", "table", "pk", "ref", "subject", "key", "category", "created_at",
            "age_days", "freshness", "label", "days_left", "days_until_expired", "status",
            "contradicted_by")
    out = {k: fact.get(k) for k in keep if k in fact}
    out["text"] = shorten(fact.get("text"))
    return out


def describe(fact: Mapping[str, Any]) -> str:
    """One line naming a fact: ref, category, key: text, freshness and age."""
    what = shorten(fact.get("text"), 80)
    if fact.get("key"):
        what = f"{fact['key']}: {what}"
    bits = [f"{fact.get('ref', '?')} [{fact.get('category', 'general')}] {what}"]
    nums = []
    if isinstance(fact.get("freshness"), (int, float)):
        nums.append(f"freshness {fact['freshness']:.3f}")
    if isinstance(fact.get("age_days"), (int, float)):
        nums.append(f"{fact['age_days']:.0f} days old")
    if nums:
        bits.append("(" + ", ".join(nums) + ")")
    return " ".join(bits)


def safe_target(target: Any, base: Path | None = None) -> str:
    """A source's target for display: a DSN without its password; a path below `base`
    (default: the current folder, i.e. the repository root in CI) made relative to it."""
    if target is None:
        return ""
    text = str(target)
    if "://" in text or "=" in text:
        return redact_dsn(text)
    path = Path(text)
    if path.is_absolute():
        try:
            return path.relative_to((base or Path.cwd()).resolve()).as_posix()
        except ValueError:
            return text
    return path.as_posix()


def source_targets(report: Mapping[str, Any], base: Path | None = None) -> dict[str, str]:
    """Source name -> displayable target (see `safe_target`), from report["sources"]."""
    out = {}
    for src in report.get("sources") or ():
        if isinstance(src, Mapping) and src.get("name") is not None:
            out[str(src["name"])] = safe_target(src.get("target"), base)
    return out


def stale_ratio(summary: Mapping[str, Any]) -> float:
    """(stale + expired) / total, 0 when there are no facts."""
    total = summary.get("total") or 0
    return ((summary.get("stale") or 0) + (summary.get("expired") or 0)) / total if total else 0.0


def horizon_name(index: int) -> str:
    """Label of expiry horizon `index` (see HORIZONS), e.g. '8-30 d' or '> 365 d'."""
    if index >= len(HORIZONS):
        return f"> {HORIZONS[-1]} d"
    low = 0 if index == 0 else HORIZONS[index - 1] + 1
    return f"{low}-{HORIZONS[index]} d"


@dataclass
class Group:
    """Counters and kept problem facts of one (source, category) or one category."""

    total: int = 0
    labels: dict = field(default_factory=lambda: dict.fromkeys(LABELS, 0))
    contradicted: int = 0
    freshness_sum: float = 0.0
    problem_facts: list = field(default_factory=list)
    problem_count: int = 0      # facts with at least one problem, kept or not

    @property
    def avg_freshness(self) -> float:
        return self.freshness_sum / self.total if self.total else 0.0

    @property
    def omitted(self) -> int:
        return self.problem_count - len(self.problem_facts)


class Smallest:
    """The `size` items with the smallest keys seen so far."""

    def __init__(self, size: int):
        self.size = size
        self._items: list = []
        self._tie = itertools.count()

    def push(self, key: float, item_factory) -> None:
        if self.size <= 0:
            return
        entry = (-key, -next(self._tie))     # equal keys: the earlier fact stays
        if len(self._items) < self.size:
            heapq.heappush(self._items, (entry, item_factory()))
        elif entry > self._items[0][0]:
            heapq.heapreplace(self._items, (entry, item_factory()))

    def sorted(self) -> list:
        return [item for _, item in sorted(self._items, key=lambda e: (-e[0][0], -e[0][1]))]


class Digest:
    """Bounded summary of a stream of facts (see the module docstring)."""

    def __init__(self, problem_cap: int = DEFAULT_PROBLEM_CAP, top: int = DEFAULT_TOP):
        self.problem_cap = problem_cap
        self.top = top
        self.groups: dict[tuple[str, str], Group] = {}
        self.categories: dict[str, Group] = {}
        self.histograms: dict[str, list[int]] = {}
        self.horizons = [0] * (len(HORIZONS) + 1)
        self.seen = 0
        self._stalest = Smallest(top)
        self._soonest = Smallest(top)

    def consume(self, facts: Iterable[Mapping[str, Any]]) -> "Digest":
        for fact in facts:
            self.add(fact)
        return self

    def add(self, fact: Mapping[str, Any]) -> None:
        if fact.get("status") in GONE:
            return
        self.seen += 1
        source = str(fact.get("source") or "")
        category = str(fact.get("category") or "general")
        kinds = problems(fact)
        contradicted = "contradicted" in kinds
        label = fact.get("label")
        freshness = fact.get("freshness")
        fresh_ok = isinstance(freshness, (int, float)) and not math.isnan(freshness)
        pair = _group(self.groups, (source, category))
        for group in (pair, _group(self.categories, category)):
            group.total += 1
            if label in group.labels:
                group.labels[label] += 1
            if contradicted:
                group.contradicted += 1
            if fresh_ok:
                group.freshness_sum += freshness
            if kinds:
                group.problem_count += 1
        if kinds:
            kept = pair.problem_facts
            if len(kept) < self.problem_cap:
                kept.append(trim(fact))
        if fresh_ok:
            bins = self.histograms.get(category)
            if bins is None:
                bins = self.histograms[category] = [0] * HIST_BINS
            bins[min(HIST_BINS - 1, max(0, int(freshness * HIST_BINS)))] += 1
            self._stalest.push(freshness, lambda: trim(fact))
        days_left = expiry_days(fact)
        if isinstance(days_left, (int, float)) and days_left >= 0 and label != "expired":
            self.horizons[_horizon(days_left)] += 1
            self._soonest.push(days_left, lambda: trim(fact))

    @property
    def stalest(self) -> list[dict]:
        """Kept facts, lowest freshness first."""
        return self._stalest.sorted()

    @property
    def soonest(self) -> list[dict]:
        """Kept not-yet-expired facts, soonest to expire first (see `expiry_days`)."""
        return self._soonest.sorted()


def _group(table: dict, key) -> Group:
    """table[key], a new Group the first time (not one built per fact and thrown away)."""
    group = table.get(key)
    if group is None:
        group = table[key] = Group()
    return group


def _horizon(days_left: float) -> int:
    for i, bound in enumerate(HORIZONS):
        if days_left <= bound:
            return i
    return len(HORIZONS)
