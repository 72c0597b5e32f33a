#!/usr/bin/env python3
"""Where the embeddings mode's flags and misses come from, and what other encoder weights would score.

Usage (needs the `embeddings` extra):
    python tools/encoder_layers.py CASES.jsonl [--weights W.safetensors ...] [--at 0.6 0.72 0.8]
        [--record PAIRS.jsonl | --from-record PAIRS.jsonl] [--by-category] [--average]

Runs the embeddings mode (the detector benchmarks/eval_contradictions.py builds with
--embeddings: rules, the pair model, the pair encoder) over every case once and records, per
(case, memory): whether it is contradicted, which layer flagged it (rules, learned, the
semantic cue layer, the encoder, or none), why the rules kept it from the learned layers when
they did (`entity`: the two texts open with different names and are never compared;
`confirmed`, `ends_other`, `elsewhere`, `someone_else`: the rules' reading; `keys`: the store
keys settle it), and the shipped encoder's probability of every pair, read or not. Printed
(aggregates only, no text): the mode's precision and recall, where its misses go, and for the
shipped encoder and each --weights file the mode's figures at each --at threshold, computed
from the record: what the rules and the pair model flag stays flagged, and a pair open to the
encoder is flagged when its probability reaches the threshold. (The semantic cue layer reads
only pairs the encoder left; its few flags are kept as recorded.) One detector run serves
every set of weights: this is how stop 41 compared encoder recipes on the validation authors.
--average also scores the mean of the --weights files' probabilities (an ensemble of fits: one
forward pass per file and pair).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from memwatch_overlay.core.errors import ConfigError  # noqa: E402

FLAGGING = ("rules", "learned", "semcue")      # layers whose flags do not depend on the encoder
VETOED = ("rules", "learned")                   # the flags --veto lets the encoder overrule


def layer_of(evidence: str) -> str:
    """The layer a contradiction's evidence names."""
    if evidence.startswith("pair encoder"):
        return "encoder"
    if evidence.startswith("learned pair model"):
        return "learned"
    if "in a clause similar" in evidence:
        return "semcue"
    return "rules"


def simulate(rows: list[dict], probs: list[float], threshold: float, veto: float | None = None) -> dict:
    """The mode's figures were the encoder's probabilities ``probs`` (one per row): ``rows``
    as record() writes them. ``veto``: a flag of the rules or the pair model is dropped when
    the encoder reads the pair below it."""
    tp = fp = fn = 0
    for r, p in zip(rows, probs):
        kept = r["layer"] in FLAGGING and (veto is None or r["layer"] not in VETOED or p >= veto)
        flag = kept or (r["closed"] is None and p >= threshold)
        tp += flag and r["contradicted"]
        fp += flag and not r["contradicted"]
        fn += r["contradicted"] and not flag
    return {"P": round(tp / (tp + fp), 3) if tp + fp else 0.0, "R": round(tp / (tp + fn), 3) if tp + fn else 0.0,
            "tp": tp, "fp": fp, "fn": fn}


def by_category(rows: list[dict], probs: list[float], threshold: float, veto: float | None = None) -> dict[str, dict]:
    """simulate() per memory category (the category the case gives the older memory)."""
    groups: dict[str, tuple[list, list]] = {}
    for r, p in zip(rows, probs):
        rs, ps = groups.setdefault(r.get("category") or "-", ([], []))
        rs.append(r)
        ps.append(p)
    return {c: simulate(rs, ps, threshold, veto) for c, (rs, ps) in sorted(groups.items())}


def fates(rows: list[dict]) -> dict[str, int]:
    """Where the contradicted memories the mode missed went: kept from the encoder (by why), or
    read by it and scored below its threshold (by tenth of probability)."""
    out: Counter = Counter()
    for r in rows:
        if not r["contradicted"] or r["layer"] is not None:
            continue
        out[f"kept from it: {r['closed']}" if r["closed"] else f"encoder {int(min(r['p'], 0.99) * 10) / 10:.1f}-"] += 1
    return dict(sorted(out.items()))


def record(path: str) -> list[dict]:
    """One row per (case, memory) of the cases file (see the module docstring)."""
    import eval_contradictions as ev

    # recorded without the encoder's veto: every flag of the rules and the pair model is kept
    # (with its pair's probability), so that --veto can score any veto from the record
    det = ev.build_detector(ev.parser().parse_args([path, "--out", "-", "--embeddings", "--pair-encoder-veto", "0"]))
    rows = []
    for case in ev.load_cases(path):
        pred = ev.predict(det, case)
        newer, olders = ev.case_views(case)
        nr = det.read(newer)
        probs = det.pair_encoder.probabilities([det.encoder_input(newer, o) for o in olders])
        gold = {e["memory_index"] for e in case["expected"] if e["verdict"] == "contradicted"}
        for i, (old, p) in enumerate(zip(olders, probs)):
            evidence = pred["evidence"].get(old.ref)
            orr = det.read(old)
            v = det._pair_against(newer, nr, old, orr)
            closed = ("entity" if nr.entity and orr.entity and nr.entity != orr.entity
                      else "confirmed" if v.confirmed else "ends_other" if v.ends_other
                      else "elsewhere" if v.elsewhere else "someone_else" if v.someone_else
                      else "keys" if det._settled_by_keys(newer, old) else None)
            rows.append({"case": case["id"], "memory": i, "contradicted": i in gold,
                         "category": case["memories"][i].get("category"),
                         "layer": None if evidence is None else layer_of(evidence.split(": ", 1)[1]),
                         "closed": closed, "p": round(float(p), 6)})
    return rows


def case_pairs(path: str) -> tuple[list[tuple[str, int]], list[tuple[str, str]]]:
    """(case id, memory index) and the pair the encoder reads, for every (case, memory) of a
    cases file, in record()'s order: built once, then scored with each set of weights."""
    import eval_contradictions as ev
    from memwatch_overlay.overlay.detect.detector import Detector

    det = Detector(learned=False)
    keys, pairs = [], []
    for case in ev.load_cases(path):
        newer, olders = ev.case_views(case)
        keys += [(case["id"], i) for i in range(len(olders))]
        pairs += [det.encoder_input(newer, o) for o in olders]
    return keys, pairs


def probabilities(pairs: list[tuple[str, str]], weights: str) -> list[float]:
    """The encoder's probability of each pair with these weights."""
    from memwatch_overlay.overlay.detect.pair_encoder import PairEncoder
    return [float(p) for p in PairEncoder(weights=weights).probabilities(pairs)]


def averaged(runs: list[list[float]]) -> list[float]:
    """The mean probability of each pair over several fits' runs (one list per fit, same order)."""
    return [sum(ps) / len(ps) for ps in zip(*runs, strict=True)]


def read_record(path: str) -> list[dict]:
    """The rows a --record run wrote."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("--weights", nargs="*", default=[], help="other pair-encoder weights to score through the mode")
    ap.add_argument("--at", nargs="*", type=float, default=[0.6, 0.72, 0.8, 0.9])
    ap.add_argument("--record", default=None, help="also write the rows here (JSONL, no text)")
    ap.add_argument("--from-record", default=None,
                    help="read the rows a --record run wrote for this cases file instead of running the detector")
    ap.add_argument("--by-category", action="store_true", help="also print the figures per memory category")
    ap.add_argument("--average", action="store_true",
                    help="also score the mean of the --weights files' probabilities (an ensemble of the fits)")
    ap.add_argument("--veto", nargs="*", type=float, default=[],
                    help="also score each threshold with the rules' and the pair model's flags dropped where "
                         "the encoder reads the pair below this probability (as the detector's veto does; it "
                         "never asks about two facts under one store key, and a case's newer text has none)")
    a = ap.parse_args(argv)
    if a.average and len(a.weights) < 2:
        ap.error("--average needs two or more --weights files")
    if a.from_record:
        try:
            rows = read_record(a.from_record)
        except (OSError, ValueError) as e:
            print(f"error: --from-record {a.from_record}: {e}", file=sys.stderr)
            return 2
    else:
        rows = record(a.cases)
    # other weights' probabilities are read off the cases file and paired with the rows by position
    keys, pairs = case_pairs(a.cases) if a.weights else ([], [])
    if a.from_record and a.weights and [(r["case"], r["memory"]) for r in rows] != keys:
        print(f"error: --from-record {a.from_record} was not recorded from {a.cases} (its pairs differ)",
              file=sys.stderr)
        return 2
    if a.record:
        with open(a.record, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    flagged = Counter((r["layer"], r["contradicted"]) for r in rows if r["layer"])
    print("flags by layer (right / wrong):",
          ", ".join(f"{k} {flagged[(k, True)]} / {flagged[(k, False)]}" for k in sorted({k for k, _ in flagged})))
    print("misses:", fates(rows))
    try:
        scored = [("shipped", [r["p"] for r in rows])] + [(w, probabilities(pairs, w)) for w in a.weights]
    except ConfigError as e:                 # a weights file missing or not one: one line, not a traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.average:
        scored.append((f"average of {len(a.weights)}", averaged([p for _, p in scored[1:]])))
    for name, probs in scored:
        for th in a.at:
            for veto in [None, *a.veto]:
                label = f"{name} at {th}" + ("" if veto is None else f", veto below {veto}")
                print(f"{label}: {simulate(rows, probs, th, veto)}")
                if a.by_category:
                    for cat, fig in by_category(rows, probs, th, veto).items():
                        print(f"    {cat}: {fig}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
