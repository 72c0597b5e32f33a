"""The CI gate: thresholds from [ci] and flags, checked against an audit's summary.

Scopes are checked independently: the top-level [ci] limits (overridden by flags)
against the whole audit; each ``[ci.categories.NAME]`` table against that category's
facts only, and each ``[ci.sources.NAME]`` table against that source's facts only.
A scoped table holds only the limits it checks; it does not inherit the top-level ones.
"""
from __future__ import annotations

from dataclasses import dataclass

THRESHOLD_KEYS = ("max_stale_ratio", "max_stale", "max_contradictions", "min_avg_freshness")
SCOPES = {"categories": "category", "sources": "source"}   # [ci.<table>] -> scope word


@dataclass(frozen=True)
class Violation:
    key: str
    value: float
    limit: float
    scope: str = ""   # "" for the whole audit, "category employment", "source bot"

    @property
    def message(self) -> str:
        where = f" ({self.scope})" if self.scope else ""
        if self.key == "max_stale_ratio":
            return f"stale ratio {self.value:.3f} > max_stale_ratio {self.limit:g}{where}"
        if self.key == "max_stale":
            return f"{int(self.value)} stale or expired facts > max_stale {int(self.limit)}{where}"
        if self.key == "max_contradictions":
            return f"{int(self.value)} contradicted facts > max_contradictions {int(self.limit)}{where}"
        return f"average freshness {self.value:.3f} < min_avg_freshness {self.limit:g}{where}"


def merge_thresholds(ci: dict, flags: dict) -> dict:
    """[ci] values overridden by command-line flags (None = not given)."""
    out = {k: ci[k] for k in THRESHOLD_KEYS if ci.get(k) is not None}
    out.update({k: v for k, v in flags.items() if v is not None})
    return out


def stale_count(summary: dict) -> int:
    return int(summary.get("stale", 0)) + int(summary.get("expired", 0))


def evaluate(summary: dict, thresholds: dict, scope: str = "") -> list[Violation]:
    """Violations of `thresholds` by one summary (stale ratio = (stale + expired) / total)."""
    out = []
    total = summary.get("total", 0)
    stale = stale_count(summary)
    ratio = stale / total if total else 0.0
    if "max_stale_ratio" in thresholds and ratio > thresholds["max_stale_ratio"]:
        out.append(Violation("max_stale_ratio", ratio, thresholds["max_stale_ratio"], scope))
    if "max_stale" in thresholds and stale > thresholds["max_stale"]:
        out.append(Violation("max_stale", stale, thresholds["max_stale"], scope))
    if "max_contradictions" in thresholds and summary.get("contradicted", 0) > thresholds["max_contradictions"]:
        out.append(Violation("max_contradictions", summary["contradicted"], thresholds["max_contradictions"], scope))
    if ("min_avg_freshness" in thresholds and total
            and summary.get("avg_freshness", 0.0) < thresholds["min_avg_freshness"]):
        out.append(Violation("min_avg_freshness", summary["avg_freshness"], thresholds["min_avg_freshness"], scope))
    return out


def scoped_thresholds(ci: dict) -> dict[str, dict[str, dict]]:
    """{"categories": {name: limits}, "sources": {name: limits}} from [ci]; empty tables dropped."""
    out = {}
    for table in SCOPES:
        named = {name: {k: v for k, v in (limits or {}).items() if k in THRESHOLD_KEYS}
                 for name, limits in (ci.get(table) or {}).items()}
        named = {name: limits for name, limits in named.items() if limits}
        if named:
            out[table] = named
    return out


def evaluate_scoped(scoped: dict, by_table: dict[str, dict[str, dict]]) -> list[Violation]:
    """Violations of each scoped table: `by_table["categories"]` maps a category to its summary.

    A category or source with no facts in this audit has nothing to violate.
    """
    out = []
    for table, named in scoped.items():
        summaries = by_table.get(table) or {}
        for name, limits in sorted(named.items()):
            summary = summaries.get(name)
            if summary:
                out.extend(evaluate(summary, limits, scope=f"{SCOPES[table]} {name}"))
    return out
