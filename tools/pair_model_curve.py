#!/usr/bin/env python3
"""The rules mode's learned pair model at other thresholds: what it adds to the rules on a cases file.

Usage:
    python tools/pair_model_curve.py CASES.jsonl [--at 0.63 0.82]

Runs the default mode (rules + the shipped pair model, no embeddings; the detector
benchmarks/eval_contradictions.py builds) over every case, keeps the pair model's probability
of each pair it weighs (the pairs the rules leave open), and prints, for thresholds from 0.30
to 0.95 (or those of --at), the true and false flags the pair model adds beyond the rules and
the default mode's overall precision and recall at that threshold. Nothing is fitted and
nothing is written: it measures the shipped model, for choosing its threshold on one set and
checking the choice on another.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import eval_contradictions as ev  # noqa: E402


def memories(path: str) -> list[tuple[bool, bool, float | None]]:
    """(contradicted, flagged by the rules, the pair model's probability or None) per memory."""
    det = ev.build_detector(ev.parser().parse_args([path, "--out", "-"]))
    weighed: dict[str, float | None] = {}           # older ref -> probability, for the current case
    score = det._pair_probability

    def recorded(new, old, *args, **kwargs):
        p = weighed[old.ref] = score(new, old, *args, **kwargs)
        return p

    det._pair_probability = recorded
    out = []
    for case in ev.load_cases(path):
        weighed.clear()
        det._pair_scores.clear()            # a pair met in an earlier case is scored again, and recorded
        pred = ev.predict(det, case)
        gold = {e["memory_index"] for e in case["expected"] if e["verdict"] == "contradicted"}
        for i in range(len(case["memories"])):
            ref = f"m{i}"
            evidence = pred["evidence"].get(ref, "")
            rule = bool(evidence) and "learned pair model" not in evidence
            out.append((i in gold, rule, None if rule else weighed.get(ref)))
    return out


def figures(rows, threshold: float) -> dict:
    added = [y for y, rule, p in rows if not rule and p is not None and p >= threshold]
    tp = sum(y and rule for y, rule, _ in rows) + sum(added)
    fp = sum(not y and rule for y, rule, _ in rows) + len(added) - sum(added)
    pos = sum(y for y, _, _ in rows)
    return {"added_tp": sum(added), "added_fp": len(added) - sum(added),
            "P": round(tp / (tp + fp), 3) if tp + fp else 0.0, "R": round(tp / pos, 3) if pos else 0.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("--at", nargs="*", type=float, default=None, help="only these thresholds")
    a = ap.parse_args(argv)
    rows = memories(a.cases)
    for th in a.at or [t / 100 for t in range(30, 100, 5)]:
        print(f"threshold {th:.2f}: {figures(rows, th)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
