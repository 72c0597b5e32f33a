#!/usr/bin/env python3
"""Run the contradiction detector over a labelled cases file and score it.

Usage:
    python benchmarks/eval_contradictions.py CASES.jsonl --out PRED.jsonl
        [--embeddings] [--no-learned] [--model PATH_OR_NAME] [--threshold X] [--judge-url URL]
        [--judge-model NAME] [--pack slots.toml] [--exclude-subtype S ...] [--show-errors]
        [--no-pair-encoder] [--pair-encoder-weights FILE] [--gated]

Modes: the default is rules + the learned pair model (overlay/detect/learned.py, rules-only
weights); --embeddings adds the offline sentence embeddings (the learned model's embeddings
weights, the semantic layer and MiniLM fine-tuned as a cross-encoder, overlay/detect/pair_encoder.py,
as `[embeddings] enabled = true` does; --no-pair-encoder leaves the encoder out, as
`[embeddings] pair_encoder = false`); --no-learned gives the slot-pack rules alone.

Each case becomes one newer fact (``new_text``) and its older facts (``memories``, learned
``age_days`` before it), all of one subject. Predictions are written one line per case:
``{"id", "contradicted": [memory_index, ...], "update": {"key", "new_value"} | null}``,
the format the eval set's own scorer reads. Printed: micro-averaged precision / recall / F1 of
the "contradicted" verdict per memory, the same per memory category and per subtype, the
hard-negative false-alarm rate, which detector layer found the true and false positives, and
the cost per 1,000 (memory, new text) pairs (embedding included).

The learned weights were fitted on the two dev sets: on those sets these figures are
in-sample. The honest figures for them are the grouped cross-validated ones printed by
``tools/train_detector.py``; on any other cases file these figures are out-of-sample.
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


def case_views(case: dict) -> tuple[FactView, list[FactView]]:
    """(newer, olders): a case's new text and its memories as the detector sees them, all of one
    subject, each memory learned ``age_days`` before the new text (refs "new", "m0", "m1" ...)."""
    cat = case.get("category") or "general"
    olders = [FactView(ref=f"m{i}", subject="case", key=m.get("key"), text=m["text"],
                       category=m.get("category") or cat,
                       learned_at=T0 - float(m.get("age_days") or 0) * DAY)
              for i, m in enumerate(case["memories"])]
    newer = FactView(ref="new", subject="case", key=None, text=case["new_text"], category=cat,
                     learned_at=T0)
    return newer, olders


def predict(detector: Detector, case: dict) -> dict:
    """Run the detector on one case; return the prediction line."""
    newer, olders = case_views(case)
    found = detector.compare(newer, olders)
    flagged = sorted(int(c.older[1:]) for c in found)
    update = None
    keyed = [c for c in found if c.update and case["memories"][int(c.older[1:])].get("key")]
    if keyed:
        best = max(keyed, key=lambda c: c.confidence)
        update = {"key": best.update["key"], "new_value": best.update["new_value"]}
    return {"id": case["id"], "contradicted": flagged, "update": update,
            "evidence": {c.older: f"{c.kind} {c.confidence}: {c.evidence}" for c in found}}


def score(cases: list[dict], preds: dict[str, dict], by=None) -> dict:
    """Micro P/R/F1 over memories and the hard-negative false-alarm rate.

    ``by(case, memory_index)`` -> a group name restricts the counts to one group at a time
    and returns ``{group: figures}`` instead.
    """
    if by is not None:
        groups: dict[str, list] = {}
        for c in cases:
            for i in range(len(c["memories"])):
                g = by(c, i)
                if g is not None:
                    groups.setdefault(g, []).append((c, i))
        return {g: _score_memories(ms, preds) for g, ms in sorted(groups.items())}
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


def _score_memories(ms: list, preds: dict[str, dict]) -> dict:
    tp = fp = fn = 0
    for c, i in ms:
        flagged = i in set(preds.get(c["id"], {}).get("contradicted") or [])
        gold = any(e["memory_index"] == i and e["verdict"] == "contradicted" for e in c["expected"])
        tp += flagged and gold
        fp += flagged and not gold
        fn += gold and not flagged
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"memories": len(ms), "tp": tp, "fp": fp, "fn": fn, "precision": round(p, 3),
            "recall": round(r, 3), "f1": round(f, 3)}


def _category(c: dict, i: int) -> str:
    return c["memories"][i].get("category") or c.get("category") or "general"


def _subtype(c: dict, i: int) -> str | None:
    return c.get("subtype") or None


def _row(name: str, s: dict) -> str:
    return (f"  {name:<16} {s['memories']:>4} mem  tp={s['tp']:<3} fp={s['fp']:<3} fn={s['fn']:<3} "
            f"P={s['precision']:.3f} R={s['recall']:.3f} F1={s['f1']:.3f}")


def build_detector(a) -> Detector:
    embedder = judge = encoder = None
    if a.embeddings:
        from memwatch_overlay.overlay.detect.embeddings import Embedder
        embedder = Embedder(a.model)
        if not a.no_pair_encoder:
            from memwatch_overlay.overlay.detect.pair_encoder import PairEncoder
            encoder = PairEncoder(weights=a.pair_encoder_weights, threshold=a.pair_encoder_threshold,
                                  veto=a.pair_encoder_veto)
    if a.judge_url:
        from memwatch_overlay.overlay.detect.judge import Judge
        judge = Judge(a.judge_url, model=a.judge_model)
    kw = {}
    if a.threshold is not None:
        kw["semantic_threshold"] = a.threshold
    det = Detector(a.pack, embedder=embedder, judge=judge, learned=not a.no_learned, pair_encoder=encoder, **kw)
    det.encoder_gate = a.gated
    return det


def parser() -> argparse.ArgumentParser:
    """The command line (tools/pair_model_curve.py builds its detector from the same options)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases")
    ap.add_argument("--out", required=True, help="where to write the predictions (JSONL)")
    ap.add_argument("--embeddings", action="store_true", help="add the semantic layer")
    ap.add_argument("--no-pair-encoder", action="store_true",
                    help="with --embeddings: leave out the pair encoder (the fine-tuned cross-encoder)")
    ap.add_argument("--pair-encoder-weights", default=None, help="pair encoder weights instead of the shipped ones")
    ap.add_argument("--pair-encoder-threshold", type=float, default=None,
                    help="flag pairs the encoder reads at or above this (default: the weights file's)")
    ap.add_argument("--pair-encoder-veto", type=float, default=None,
                    help="drop the rules' and the pair model's flags the encoder reads below this "
                         "(default: the weights file's; 0: no veto)")
    ap.add_argument("--gated", action="store_true",
                    help="the pair encoder reads only the open pairs the learned gate relates "
                         "(`[embeddings] pair_encoder_gate = true`), not every open pair")
    ap.add_argument("--no-learned", action="store_true", help="the slot-pack rules alone (no pair model)")
    ap.add_argument("--model", default=None, help="embedding model directory or name")
    ap.add_argument("--threshold", type=float, default=None, help="semantic similarity threshold")
    ap.add_argument("--judge-url", default=None, help="OpenAI-compatible base URL for the judge")
    ap.add_argument("--judge-model", default="llama3.1", help="model name sent to the judge")
    ap.add_argument("--pack", default=None, help="a slot pack TOML instead of the default")
    ap.add_argument("--exclude-subtype", action="append", default=[],
                    help="leave out cases of this subtype when scoring (repeatable)")
    ap.add_argument("--show-errors", action="store_true", help="print false positives/negatives")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)

    cases = load_cases(a.cases)
    detector = build_detector(a)
    def view(text: str) -> FactView:
        return FactView("x", "case", None, text, "", 0.0)
    texts = ({t for c in cases for t in detector.embedding_texts(view(c["new_text"]))}   # + its clauses
             | {detector.embedding_text(view(m["text"])) for c in cases for m in c["memories"]})
    embed_s = 0.0
    if detector.embedder is not None:     # one batch for every text: far faster than per case
        detector.embedder.embed(["warm-up"])          # model loading is not per-pair cost
        t = time.perf_counter()
        detector.embedder.embed(sorted(texts))
        embed_s = time.perf_counter() - t
    t = time.perf_counter()
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
    mode = ("rules" + ("" if a.no_learned else " + learned") + (" + embeddings" if a.embeddings else "")
            + (" + judge" if a.judge_url else ""))
    pairs = sum(len(c["memories"]) for c in cases)
    if detector.pair_encoder is not None:
        mode += f" + pair encoder ({detector.pair_encoder.scored} pairs encoded)"
    print(f"{mode}: {s['cases']} cases, {pairs} pairs, {detector.comparisons} comparisons; "
          f"detection {elapsed:.2f}s = {1000 * elapsed / max(1, pairs):.2f} s per 1,000 pairs"
          + (f"; embedding {len(texts)} texts {embed_s:.2f}s = {1000 * embed_s / max(1, pairs):.2f} s "
             f"per 1,000 pairs" if detector.embedder is not None else ""))
    print(f"P={s['precision']:.3f} R={s['recall']:.3f} F1={s['f1']:.3f} "
          f"(tp={s['tp']} fp={s['fp']} fn={s['fn']}); hard-negative false alarms "
          f"{s['hard_negative_alarms']}/{s['hard_negatives']}")
    print("per memory category:")
    for g, x in score(scored, preds, by=_category).items():
        print(_row(g, x))
    print("per subtype (memories of cases with a contradiction):")
    for g, x in score(scored, preds, by=_subtype).items():
        print(_row(g, x))
    kinds: dict[str, list[int]] = {}
    for c in scored:
        gold = {e["memory_index"] for e in c["expected"] if e["verdict"] == "contradicted"}
        for ref, ev in preds[c["id"]]["evidence"].items():
            layer = ("learned" if "learned pair model" in ev else "pair encoder" if "pair encoder" in ev
                     else ev.split()[0])
            k = kinds.setdefault(layer, [0, 0])
            k[0 if int(ref[1:]) in gold else 1] += 1
    print("found by layer: " + ", ".join(f"{k} {v[0]} right / {v[1]} wrong" for k, v in sorted(kinds.items())))
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
