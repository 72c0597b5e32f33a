"""Build audit reports in the design's JSON-contract shape for renderer tests.

Facts are random but reproducible (seeded); summaries are computed from the facts,
so tests compare renderer output with figures derived here, never typed in.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Iterable, Iterator

CATEGORIES = ("employment", "location", "preference", "contact", "general")
LABELS = ("fresh", "aging", "stale", "expired")


def label_of(freshness: float) -> str:
    if freshness >= 0.8:
        return "fresh"
    if freshness >= 0.5:
        return "aging"
    if freshness >= 0.3:
        return "stale"
    return "expired"


def make_facts(n: int, seed: int = 7, sources=("bot", "crm"), categories=CATEGORIES,
               contradicted_share: float = 0.05) -> list[dict]:
    rnd = random.Random(seed)
    facts = []
    for i in range(n):
        source = sources[i % len(sources)]
        category = rnd.choice(categories)
        freshness = round(rnd.random(), 4)
        label = label_of(freshness)
        days_left = round(rnd.uniform(-30, 400), 1) if label != "expired" else 0.0
        ref = f"{source}:facts:{i}"
        facts.append({
            "source": source, "table": "facts", "pk": {"id": str(i)}, "ref": ref,
            "subject": f"u{i % 7}", "key": f"{category}_key", "text": f"value {i} | <b>{category}</b>",
            "category": category, "created_at": "2025-01-01T00:00:00+00:00",
            "age_days": round(rnd.uniform(0, 900), 1), "freshness": freshness, "label": label,
            "days_left": days_left, "status": "active", "contradicted_by": [],
            "days_until_expired": round(days_left + rnd.uniform(0, 300), 1) if label != "expired" else 0.0,
        })
    for fact in facts:
        if rnd.random() < contradicted_share:
            newer = rnd.choice(facts)
            if newer is not fact:
                fact["status"] = "contradicted"
                fact["contradicted_by"] = [newer["ref"]]
    return facts


def summarize(facts: Iterable[dict]) -> dict:
    facts = list(facts)
    out = {"total": len(facts), **dict.fromkeys(LABELS, 0), "contradicted": 0}
    for f in facts:
        out[f["label"]] += 1
        out["contradicted"] += f["status"] == "contradicted"
    out["avg_freshness"] = sum(f["freshness"] for f in facts) / len(facts) if facts else 0.0
    return out


def make_report(facts: list[dict], *, passed=True, violations=(), sources=None,
                thresholds=None) -> dict:
    contradictions = [
        {"older": f["ref"], "newer": f["contradicted_by"][0], "kind": "value", "confidence": 0.9,
         "evidence": f"{f['key']}: '{f['text']}' vs a newer value"}
        for f in facts if f["status"] == "contradicted"]
    by_cat, by_src = {}, {}
    for f in facts:
        by_cat.setdefault(f["category"], []).append(f)
        by_src.setdefault(f["source"], []).append(f)
    report = {
        "version": 1, "as_of": "2026-03-01T00:00:00+00:00", "passed": passed,
        "summary": summarize(facts), "thresholds": thresholds or {"max_stale_ratio": 0.1},
        "facts": facts, "contradictions": contradictions,
        "violations": list(violations),
        "by_category": {k: summarize(v) for k, v in by_cat.items()},
        "by_source": {k: summarize(v) for k, v in by_src.items()},
    }
    if sources is not None:
        report["sources"] = sources
    return report


def problem_kinds(fact: dict) -> list[str]:
    """Independent restatement of which problems a fact has (for expected values)."""
    kinds = []
    if fact["label"] == "expired":
        kinds.append("expired")
    if fact["status"] == "contradicted":
        kinds.append("contradicted")
    if fact["label"] == "stale":
        kinds.append("stale")
    return kinds


class OnePass:
    """An iterable that may be iterated once, like a cursor over a million facts."""

    def __init__(self, items: Iterable[dict]):
        self._items = items
        self.used = False

    def __iter__(self) -> Iterator[dict]:
        if self.used:
            raise AssertionError("facts iterated twice")
        self.used = True
        yield from self._items


def sarif_schema() -> dict:
    """The official SARIF 2.1.0 schema vendored in tests/fixtures (see its README)."""
    return json.loads((Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0.json").read_text())
