#!/usr/bin/env python3
"""Run the contradiction detector over a labelled cases file and score it.

Usage:
    python benchmarks/eval_contradictions.py CASES.jsonl --out PRED.jsonl
        [--embeddings] [--model PATH_OR_NAME] [--threshold X] [--judge-url URL]
        [--judge-model NAME] [--pack slots.toml] [--exclude-subtype S ...] [--show-errors]

Each case becomes one newer fact (``new_text``) and its older facts (``memories``, learned
``age_days`` before it), all of one subject. Predictions are written one line per case:
``{"id", "contradicted": [memory_index, ...], "update": {"key", "new_value"} | null}``,
the format the eval set's own scorer reads. The figures printed here are micro-averaged
precision / recall / F1 of the "contradicted" verdict per memory, plus the hard-negative
false-alarm rate; use the eval set's scorer for the full breakdown.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from memwatch_overlay.overlay.detect.detector import Detector, FactView

T0 = 1_800_000_000.0      # a fixed "now" for the newer fact; ages count back from it
DAY = 86400.0


def load_cases(path: str) -> list[dict]:
    cases = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                cases.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{path}:{n}: bad JSON: {e}")
    return cases


def predict(detector: Detector, case: dict) -> dict:
    """Run the detector on one case; return the prediction line."""
    cat = case.get("category") or "general"
    olders = [FactView(ref=f"m{i}", subject="case", key=m.get("key"), text=m["text"],
                       category=m.get("category") or cat,
                       learned_at=T0 - float(m.get("age_days") or 0) * DAY)
              for i, m in enumerate(case["memories"])]
    newer = FactView(ref="new", subject="case", key=None, text=case["new_text"], category=cat,
                     learned_at=T0)
    found = detector.compare(newer, olders)
    flagged = sorted(int(c.older[1:]) for c in found)
    update = None
    keyed = [c for c in found if c.update and case["memories"][int(c.older[1:])].get("key")]
    if keyed:
        best = max(keyed, key=lambda c: c.confidence)
        update = {"key": best.update["key"], "new_value": best.update["new_value"]}
    return {"id": case["id"], "contradicted": flagged, "update": update,
            "evidence": {c.older: f"{c.kind} {c.confidence}: {c.evidence}" for c in found}}


def score(cases: list[dict], preds: dict[str, dict]) -> dict:
    """Micro P/R/F1 over memories and the hard-negative false-alarm rate."""
    tp = fp = fn = 0
    hn = hn_alarm = 0
    for c in cases:
        flagged = set(preds.get(c["id"], {}).get("contradicted") or [])
        gold = {e["memory_index"] for e in c["expected"] if e["verdict"] == "contradicted"}
        tp += len(flagged & gold)
        fp += len(flagged - gold)
        fn += len(gold - flagged)
        if c.get("hard_negative"):
            hn += 1
            hn_alarm += bool(flagged)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"cases": len(cases), "tp": tp, "fp": fp, "fn": fn, "precision": round(p, 3),
            "recall": round(r, 3), "f1": round(f, 3), "hard_negatives": hn,
            "hard_negative_alarms": hn_alarm}


def build_detector(a) -> Detector:
    embedder = judge = None
    if a.embeddings:
        from memwatch_overlay.overlay.detect.embeddings import Embedder
        embedder = Embedder(a.model)
    if a.judge_url:
        from memwatch_overlay.overlay.detect.judge import Judge
        judge = Judge(a.judge_url, model=a.judge_model)
    kw = {}
    if a.threshold is not None:
        kw["semantic_threshold"] = a.threshold
    return Detector(a.pack, embedder=embedder, judge=judge, **kw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("--out", required=True, help="where to write the predictions (JSONL)")
    ap.add_argument("--embeddings", action="store_true", help="add the semantic layer")
    ap.add_argument("--model", default=None, help="embedding model directory or name")
    ap.add_argument("--threshold", type=float, default=None, help="semantic similarity threshold")
    ap.add_argument("--judge-url", default=None, help="OpenAI-compatible base URL for the judge")
    ap.add_argument("--judge-model", default="llama3.1", help="model name sent to the judge")
    ap.add_argument("--pack", default=None, help="a slot pack TOML instead of the default")
    ap.add_argument("--exclude-subtype", action="append", default=[],
                    help="leave out cases of this subtype when scoring (repeatable)")
    ap.add_argument("--show-errors", action="store_true", help="print false positives/negatives")
    a = ap.parse_args(argv)

    cases = load_cases(a.cases)
    detector = build_detector(a)
    t = time.perf_counter()
    if detector.embedder is not None:     # one batch for every text: far faster than per case
        detector.embedder.embed(sorted({c["new_text"] for c in cases}
                                       | {m["text"] for c in cases for m in c["memories"]}))
    preds = {c["id"]: predict(detector, c) for c in cases}
    elapsed = time.perf_counter() - t
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        for c in cases:
            p = preds[c["id"]]
            f.write(json.dumps({"id": p["id"], "contradicted": p["contradicted"],
                                "update": p["update"]}) + "\n")
    scored = [c for c in cases if c.get("subtype") not in set(a.exclude_subtype)]
    s = score(scored, preds)
    mode = "rules" + (" + embeddings" if a.embeddings else "") + (" + judge" if a.judge_url else "")
    print(f"{mode}: {s['cases']} cases, {detector.comparisons} comparisons in {elapsed:.2f}s")
    print(f"P={s['precision']:.3f} R={s['recall']:.3f} F1={s['f1']:.3f} "
          f"(tp={s['tp']} fp={s['fp']} fn={s['fn']}); hard-negative false alarms "
          f"{s['hard_negative_alarms']}/{s['hard_negatives']}")
    if a.show_errors:
        for c in scored:
            p = preds[c["id"]]
            gold = {e["memory_index"] for e in c["expected"] if e["verdict"] == "contradicted"}
            for i in sorted(set(p["contradicted"]) | gold):
                if (i in gold) != (i in p["contradicted"]):
                    tag = "FN" if i in gold else "FP"
                    print(f"{tag} {c['id']} m{i}: {c['memories'][i]['text'][:70]!r} <- "
                          f"{c['new_text'][:90]!r}  {p['evidence'].get(f'm{i}', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
