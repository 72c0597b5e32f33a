#!/usr/bin/env python3
"""Fit the learned layer (overlay/detect/learned.py) and report it with grouped cross-validation.

Usage (needs the `train` extra: scikit-learn, numpy):
    python tools/train_detector.py CASES.jsonl [CASES2.jsonl ...] [--embeddings] [--folds 5]
        [--write] [--oof-dir DIR]

1. Topic model: multinomial logistic regression over hashed n-grams of the self-written corpus
   (tools/slot_corpus.py). Its accuracy is reported with 5-fold cross-validation grouped by
   template, so a sentence is never scored by a model that saw its template.
2. Pair model: one example per (case, memory) of every cases file, label "contradicted";
   features from Detector.pair_features (rules verdict, topic agreement, cues, value
   difference, cosine in --embeddings mode). Reported with GroupKFold by the cases' `group`:
   out-of-fold predictions, each fold's threshold chosen by an inner grouped CV on that fold's
   training part only (nested), so no threshold is picked by looking at the scored cases.
   Figures per cases file and pooled, per category and subtype. A pair counts as flagged when
   the rules flag it or the pair model's probability reaches the threshold (what Detector does).
3. --write fits on everything (threshold: the median of the outer folds' thresholds) and writes
   rules/topic_model.json and the mode's file: rules/pair_model.json (rules mode) or
   rules/pair_model_embeddings.json (--embeddings, with rules/topic_prototypes.json).

The cases files are arguments; nothing from them is copied into the project.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from memwatch_overlay.overlay.detect.detector import Detector, FactView  # noqa: E402
from memwatch_overlay.overlay.detect.learned import Learned, load_cues, topic_features  # noqa: E402
from memwatch_overlay.overlay.detect.wordvec import load_word_vectors  # noqa: E402
import aspect_corpus  # noqa: E402
import manner_corpus  # noqa: E402
import pair_corpus  # noqa: E402
import slot_corpus  # noqa: E402
import topic_corpus  # noqa: E402
from eval_contradictions import case_views, load_cases  # noqa: E402

BUCKETS = 1 << 15
T0 = 1_800_000_000.0
DAY = 86400.0
TOPIC_FILE = ROOT / "rules" / "topic_model.json"
PROTO_FILE = ROOT / "rules" / "topic_prototypes.json"
CUE_PROTO_FILE = ROOT / "rules" / "cue_prototypes.json"
ASPECT_FILE = ROOT / "rules" / "aspect_model.json"
ASPECT_C = 4.0
MANNER_FILE = ROOT / "rules" / "manner_model.json"
MANNER_C = 4.0
MANNER_PRUNE = 0.2      # 13 classes: weights under 0.1 dropped (at 0.01, 1.4 MB of JSON and ~25 MB in memory; the same CV)
PROTO_SCALE = 20.0
PAIR_FILES = {"rules": ROOT / "rules" / "pair_model.json",
              "embeddings": ROOT / "rules" / "pair_model_embeddings.json"}


# ---------------------------------------------------------------- topic model

def _matrix(rows: list[dict[int, float]], n_cols: int):
    from scipy.sparse import csr_matrix
    data, ind, ptr = [], [], [0]
    for r in rows:
        for k, v in r.items():
            ind.append(k)
            data.append(v)
        ptr.append(len(ind))
    return csr_matrix((data, ind, ptr), shape=(len(rows), n_cols))


def near_copies(cases_by_file: dict[str, list[dict]]) -> set[str]:
    """Corpus templates that share most of their words with some text of the cases files.

    A template whose content words (fillers and function words left out) mostly appear in one
    memory or new text of the cases may have been written after reading that case. The topic
    model used for cross-validation is fitted without them, so a case is never scored by a
    topic model that saw a near-copy of it (generic ones such as "Drives to work" go too)."""
    import re
    unfilled = {t: re.sub(r"\{\w+\}", " ", t) for temps in slot_corpus.T.values() for t in temps}
    hits = near_copy_sentences(cases_by_file, list(unfilled.values()))
    return {t for t, words in unfilled.items() if words in hits}


STATIC_TOPICS = False   # --static-topics: the text's static word vector is a topic-model feature
TOPIC_C = 8.0           # --topic-C: inverse L2 strength of the topic model
TOPIC_BALANCED = False  # --balanced-topics: every slot weighs the same in the fit, however many templates it has
NATURAL_WEIGHT = 1.0    # --natural-weight: how much a sentence of tools/topic_corpus.jsonl weighs against a template fill


def train_topics(seed: int = 7, prune: float = 0.02, static: bool | None = None,
                 exclude: frozenset[str] = frozenset(), casual: int = 0,
                 cv: bool = True) -> tuple[dict, float]:
    """Fit the topic model; ``static``: the text's static word vector (rules/word_vectors.bin)
    is a feature beside the hashed n-grams; ``exclude``: templates left out; ``casual``: how
    many fills of each template are also seen in a chat wrapper; ``cv``: report the accuracy
    by 5-fold cross-validation grouped by template (nan otherwise)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold
    import numpy as np
    wv = load_word_vectors() if (STATIC_TOPICS if static is None else static) else None
    dims = wv.dims if wv is not None else 0
    rows, labels, groups, weights_of = [], [], [], []
    # the templates use_casual(natural=True) took from tools/topic_corpus.jsonl weigh NATURAL_WEIGHT
    natural = topic_corpus.texts() if NATURAL_WEIGHT != 1.0 else frozenset()
    tid = 0
    for slot, temps in slot_corpus.T.items():
        for t in temps:
            if t in exclude:
                continue
            tid += 1
            filled = _fills(t, seed)
            rng = random.Random(f"{seed}:casual:{t}")
            # `casual` of the fills again inside a chat opener and tail (slot_corpus.casual_variant)
            for text in filled + [_casual(x, rng) for x in filled[:casual]]:
                rows.append(topic_features(text, BUCKETS, wv))
                labels.append(slot)
                groups.append(tid)
                weights_of.append(NATURAL_WEIGHT if t in natural else 1.0)
    X = _matrix(rows, BUCKETS + dims)
    y = np.array(labels)
    sw = np.array(weights_of) if natural else None     # (None: every sentence weighs 1, the fit as before)
    cw = "balanced" if TOPIC_BALANCED else None
    hits = 0
    for tr, te in (GroupKFold(5).split(X, y, groups) if cv else ()):
        m = LogisticRegression(C=TOPIC_C, max_iter=300, class_weight=cw).fit(
            X[tr], y[tr], sample_weight=None if sw is None else sw[tr])
        hits += int((m.predict(X[te]) == y[te]).sum())
    acc = hits / len(y) if cv else float("nan")
    m = LogisticRegression(C=TOPIC_C, max_iter=400, class_weight=cw).fit(X, y, sample_weight=sw)
    classes = [str(c) for c in m.classes_]
    weights: dict[str, list] = {}
    W = m.coef_
    for h in np.nonzero(np.abs(W).max(axis=0) >= prune)[0]:
        col = W[:, h]
        weights[str(int(h))] = _flat_weights(col, np.nonzero(np.abs(col) >= prune)[0])
    data = {"version": 2, "buckets": BUCKETS, "dense_dims": dims, "classes": classes,
            "bias": [round(float(b), 4) for b in m.intercept_], "weights": weights,
            "trained_on": f"tools/slot_corpus.py: {len(y)} sentences, {tid} templates, {len(classes)} slots",
            "cv_accuracy_by_template": round(acc, 3)}
    return data, acc


def _flat_weights(col, classes) -> list:
    """A feature's weights as a model file (version 2) holds them: [class, weight, ...]."""
    return [x for c in classes for x in (int(c), round(float(col[c]), 3))]


def train_text_classifier(data, label: str, C: float, what: str, prune: float = 0.02) -> tuple[dict, float]:
    """Fit a text classifier in the topic model's form (hashed n-grams and the static word
    vector; `TopicModel` scores it) on rows with ``text``, ``label`` and ``author``. Its
    accuracy is measured leaving one author out at a time (a style it has not seen)."""
    from sklearn.linear_model import LogisticRegression
    import numpy as np
    wv = load_word_vectors()
    X = _matrix([topic_features(r["text"], BUCKETS, wv) for r in data], BUCKETS + wv.dims)
    y = np.array([r[label] for r in data])
    authors = np.array([r["author"] for r in data])
    hits = 0
    for a in sorted(set(authors)):
        tr, te = authors != a, authors == a
        m = LogisticRegression(C=C, max_iter=1000).fit(X[tr], y[tr])
        hits += int((m.predict(X[te]) == y[te]).sum())
    acc = hits / len(y)
    m = LogisticRegression(C=C, max_iter=1000).fit(X, y)
    classes = [str(c) for c in m.classes_]
    if len(classes) == 2:
        # sklearn keeps one weight vector w for the second class; the softmax of (-w/2, +w/2)
        # is the same sigmoid, in the topic model's per-class form
        W = np.vstack([-m.coef_[0] / 2.0, m.coef_[0] / 2.0])
        bias = [-float(m.intercept_[0]) / 2.0, float(m.intercept_[0]) / 2.0]
    else:
        W, bias = m.coef_, [float(b) for b in m.intercept_]
    weights: dict[str, list] = {}
    for h in np.nonzero(np.abs(W).max(axis=0) >= prune / 2.0)[0]:
        col = W[:, h]
        weights[str(int(h))] = _flat_weights(col, [c for c in range(len(classes))
                                                   if abs(col[c]) >= prune / 2.0 or len(classes) == 2])
    out = {"version": 2, "buckets": BUCKETS, "dense_dims": wv.dims, "classes": classes,
           "bias": [round(b, 4) for b in bias], "weights": weights,
           "trained_on": f"{what}: {len(y)} texts, {len(set(authors))} authors",
           "accuracy_leaving_one_author_out": round(acc, 3)}
    return out, acc


def train_aspect() -> tuple[dict, float]:
    """The aspect model: does an older memory hold a state or record an episode
    (tools/aspect_corpus.py)."""
    return train_text_classifier(aspect_corpus.rows(), "aspect", ASPECT_C, "tools/aspect_corpus.py")


def train_manner() -> tuple[dict, float]:
    """The manner model: how a newer text speaks of a state (tools/manner_corpus.py)."""
    return train_text_classifier(manner_corpus.rows(), "manner", MANNER_C, "tools/manner_corpus.py",
                                 prune=MANNER_PRUNE)


def _fills(template: str, seed: int, n: int = 4) -> list[str]:
    import random
    rng = random.Random(f"{seed}:{template}")
    out: list[str] = []
    for _ in range(n * 3):
        s = template
        for k, vals in slot_corpus.FILL.items():
            while "{" + k + "}" in s:
                s = s.replace("{" + k + "}", rng.choice(vals), 1)
        if s not in out:
            out.append(s)
        if len(out) >= n:
            break
    return out


def _casual(text: str, rng) -> str:
    """``text`` inside a chat opener and tail, when the corpus has them."""
    wrap = getattr(slot_corpus, "casual_variant", None)
    return wrap(text, rng) if wrap else text


def build_prototypes(topic: dict, embedder, seed: int = 7, exclude: frozenset[str] = frozenset()) -> dict:
    """One mean, normalised sentence vector per topic, over the corpus sentences (``exclude``:
    templates left out, as train_topics leaves them out)."""
    import numpy as np
    by: dict[str, list[str]] = defaultdict(list)
    for slot, temps in slot_corpus.T.items():
        for t in temps:
            if t not in exclude:
                by[slot] += _fills(t, seed)
    vecs = []
    for c in topic["classes"]:
        m = embedder.embed(by[c]).mean(axis=0)
        vecs.append([round(float(x), 4) for x in m / (np.linalg.norm(m) or 1.0)])
    return {"version": 1, "model": embedder.model_name, "scale": PROTO_SCALE, "classes": topic["classes"],
            "vectors": vecs}


def cue_sentences() -> list[str]:
    """Every sentence of tools/cue_corpus.py (examples and both sides of the minimal pairs)."""
    import cue_corpus
    out = [t for cl in (cue_corpus.NEWER, cue_corpus.OLDER) for ts in cl.values() for t in ts]
    return out + [t for pairs in cue_corpus.SHIFTS.values() for p in pairs for t in p]


def near_copy_sentences(cases_by_file: dict[str, list[dict]], sentences: list[str]) -> set[str]:
    """The sentences that share most of their content words with a text of the cases files
    (near_copies applies the same test to the corpus templates, fillers left out)."""
    import re
    word = re.compile(r"[a-zà-ÿ0-9']+")
    stop = set("a an the i my me to of in and is it for on at was with so now no just i'm are user has have".split())
    texts = [{w for w in word.findall(t.lower()) if w not in stop}
             for cs in cases_by_file.values() for c in cs
             for t in [c["new_text"]] + [m["text"] for m in c["memories"]]]
    out = set()
    for t in sentences:
        tw = {w for w in word.findall(t.lower()) if w not in stop}
        need = max(2, -(-3 * len(tw) // 4))
        if len(tw) >= 2 and any(len(tw & x) >= need for x in texts):
            out.add(t)
    return out


def build_cue_prototypes(embedder, exclude: frozenset[str] = frozenset()) -> dict:
    """The example vectors of tools/cue_corpus.py per class (semantic_features.CuePrototypes);
    ``exclude``: sentences left out (a minimal pair goes when either side is excluded)."""
    import numpy as np
    import cue_corpus
    from memwatch_overlay.overlay.detect.semantic_features import K_NEAREST, encode_matrix
    groups = {}
    for role, classes in (("newer", cue_corpus.NEWER), ("older", cue_corpus.OLDER)):
        groups[role] = {c: encode_matrix(embedder.embed([t for t in texts if t not in exclude]))
                        for c, texts in classes.items()}
    groups["shifts"] = {}
    n = sum(len(t) for cl in (cue_corpus.NEWER, cue_corpus.OLDER) for t in cl.values())
    for c, pairs in cue_corpus.SHIFTS.items():
        pairs = [p for p in pairs if p[0] not in exclude and p[1] not in exclude]
        n += 2 * len(pairs)
        d = (embedder.embed([b for _, b in pairs]) - embedder.embed([a for a, _ in pairs])).mean(axis=0)
        groups["shifts"][c] = encode_matrix([d / (np.linalg.norm(d) or 1.0)])
    return {"version": 1, "model": embedder.model_name, "dim": embedder.dim, "k": K_NEAREST,
            "trained_on": f"tools/cue_corpus.py: {n} sentences", **groups}


# ---------------------------------------------------------------- pair examples

def pair_examples(cases_by_file: dict[str, list[dict]], learned: Learned, embedder=None):
    det = Detector(learned=learned, embedder=embedder)
    out = []   # (file, case, memory_index, features, label, rule_flag)
    for name, cases in cases_by_file.items():
        for c in cases:
            newer, olders = case_views(c)
            feats = det.pair_features(newer, olders)
            ent = det.read(newer).entity
            gold = {e["memory_index"] for e in c["expected"] if e["verdict"] == "contradicted"}
            for i, f in enumerate(feats):
                oe = det.read(olders[i]).entity
                skip = bool(ent and oe and ent != oe)
                rule = f.get("r_value", 0) or f.get("r_cue", 0)
                out.append((name, c, i, f, int(i in gold), bool(rule) and not skip, skip))
    return out


# The minimal pairs of tools/cue_corpus.py are labelled pairs too (the embeddings mode trains on
# them): these classes outdate the older fact, the others do not.
SHIFT_OUTDATES = {"ended": 1, "switched": 1, "began": 1, "resolved": 1, "corrected": 1,
                  "same": 0, "hedged": 0, "someone_else": 0, "temporary": 0, "events": 0}


def own_examples(learned: Learned, embedder=None, shifts: bool = False, exclude: frozenset[str] = frozenset(),
                 pairs: bool = False, base_rate: float | None = None):
    """The project's own labelled pairs (tests/contradiction_cases.py, with ``shifts`` the
    minimal pairs of tools/cue_corpus.py, with ``pairs`` those of tools/pair_corpus.jsonl):
    training only, never scored. Each is (features, label, rule flag, confirmed, weight).

    ``base_rate``: the share of contradicted pairs among the cases' pairs. The corpus holds as
    many pairs that outdate the memory as pairs that do not, where a store's related pairs
    are mostly restatements and small talk; its positive pairs are weighed down so that the
    corpus says what tells the two apart without moving the model's prior to one in two
    (unweighted, the rules-mode model flagged "I prefer window seats" <- "I just joined Stripe"
    at 0.71 where the model before the corpus said 0.05)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from contradiction_cases import PARAPHRASES
    det = Detector(learned=learned, embedder=embedder)
    out = []
    labelled = [(*p, 1.0) for p in PARAPHRASES]     # (old, key, new, label, weight)
    if pairs:
        extra = pair_corpus.pairs(exclude)
        n_pos = sum(p[3] for p in extra)
        w_pos = 1.0
        if base_rate is not None and n_pos:
            w_pos = base_rate / (1.0 - base_rate) * (len(extra) - n_pos) / n_pos
        labelled += [(*p, w_pos if p[3] else 1.0) for p in extra]
    if shifts:
        import cue_corpus
        flat = [(c, a, b) for c, pairs in cue_corpus.SHIFTS.items() for a, b in pairs
                if c in SHIFT_OUTDATES and a not in exclude and b not in exclude]
        # each minimal pair, and its newer text against another pair's older fact (a cue about
        # something else outdates nothing)
        labelled += ([(a, None, b, SHIFT_OUTDATES[c], 1.0) for c, a, b in flat]
                     + [(flat[i][1], None, flat[(i + 37) % len(flat)][2], 0, 1.0) for i in range(len(flat))])
    if embedder is not None:
        embedder.embed(sorted({det.embedding_text(FactView("x", "case", None, p[0], "", 0.0)) for p in labelled}
                              | {t for p in labelled
                                 for t in det.embedding_texts(FactView("x", "case", None, p[2], "", 0.0))}))
    for old, key, new, label, weight in labelled:
        o = FactView("old", "case", key, old, "general", T0 - 300 * DAY)
        n = FactView("new", "case", None, new, "general", T0)
        f = det.pair_features(n, [o])[0]
        rule = bool(f.get("r_value", 0) or f.get("r_cue", 0))
        out.append((f, int(label), rule, not_weighed(f), weight))
    return out


def not_weighed(feats: dict) -> bool:
    """A pair the detector never lets the pair model weigh (Detector.compare): the rules read
    a restatement, an ending of another value of the older fact's slot, or two facts about
    different slots."""
    return bool(feats.get("r_confirmed") or feats.get("r_ends_other") or feats.get("r_elsewhere"))


def _fit(feats: list[dict], y: list[int], C: float, weights: list[float] | None = None):
    """The pair model: logistic regression over the features (``weights``: per example, 1 when None)."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    v = DictVectorizer()
    X = v.fit_transform(feats)
    m = LogisticRegression(C=C, max_iter=2000).fit(X, y, sample_weight=weights)
    return v, m


def _prob(model, feats):
    v, m = model
    return m.predict_proba(v.transform(feats))[:, 1]


def _pick_threshold(probs, y, rule, min_p: float = 0.9) -> float:
    """The lowest threshold at which the pairs the model adds to the rules' (p >= t, not
    flagged by the rules) are right at least ``min_p`` of the time, and stay so above it;
    0.95 when no threshold is that precise."""
    best = 0.95
    for t in [x / 100 for x in range(95, 29, -1)]:
        tp = sum(1 for p, g, r in zip(probs, y, rule) if not r and p >= t and g)
        n = sum(1 for p, g, r in zip(probs, y, rule) if not r and p >= t)
        if n and tp / n < min_p:
            break
        best = t
    return best


def _pick_threshold_counted(probs, y, rule, min_p: float = 0.9, min_added: int = 5) -> float:
    """The lowest threshold at which the pairs the model adds to the rules' (at least
    ``min_added`` of them) are right at least ``min_p`` of the time; 0.95 when none is.
    Unlike _pick_threshold a single wrong pair near the top does not end the scan (the
    embeddings mode's inner folds hold few pairs above 0.8)."""
    best = 0.95
    for t in [x / 100 for x in range(95, 29, -1)]:
        tp = sum(1 for p, g, r in zip(probs, y, rule) if not r and p >= t and g)
        n = sum(1 for p, g, r in zip(probs, y, rule) if not r and p >= t)
        if n >= min_added and tp / n >= min_p:
            best = t
    return best


def cross_validate(ex, folds: int, C: float, min_p: float, own=(), picker=None):
    from sklearn.model_selection import GroupKFold
    idx = [i for i, e in enumerate(ex) if not e[6]]
    groups = [ex[i][1]["group"] for i in idx]
    feats = [ex[i][3] for i in idx]
    y = [ex[i][4] for i in idx]
    rule = [ex[i][5] for i in idx]
    conf = [not_weighed(ex[i][3]) for i in idx]
    own_f = [o[0] for o in own]
    own_y = [o[1] for o in own]
    own_w = [o[4] for o in own]
    oof = {}
    ths = []
    for tr, te in GroupKFold(folds).split(feats, y, groups):
        # nested: the threshold from an inner grouped CV on the training part only
        inner_p, inner_y, inner_r = [], [], []
        tg = [groups[i] for i in tr]
        for itr, ite in GroupKFold(4).split(tr, groups=tg):
            a = [tr[i] for i in itr]
            b = [tr[i] for i in ite]
            mdl = _fit([feats[i] for i in a] + own_f, [y[i] for i in a] + own_y, C, [1.0] * len(a) + own_w)
            inner_p += [0.0 if conf[i] or not Learned.related(feats[i]) else p
                        for i, p in zip(b, _prob(mdl, [feats[i] for i in b]))]
            inner_y += [y[i] for i in b]
            inner_r += [rule[i] for i in b]
        t = (picker or _pick_threshold)(inner_p, inner_y, inner_r, min_p)
        ths.append(t)
        mdl = _fit([feats[i] for i in tr] + own_f, [y[i] for i in tr] + own_y, C, [1.0] * len(tr) + own_w)
        for i, p in zip(te, _prob(mdl, [feats[i] for i in te])):
            p = 0.0 if conf[i] or not Learned.related(feats[i]) else p   # as Detector._learned
            oof[idx[i]] = (rule[i] or p >= t, p, t)
    return oof, ths


def report(ex, oof, title: str) -> dict:
    """Per file and pooled: P/R/F1, hard-negative alarms, per category and subtype."""
    out = {}
    files = sorted({e[0] for e in ex})
    for scope in files + ["pooled"]:
        rows = [(e, oof.get(i, (False, 0, 0))[0]) for i, e in enumerate(ex)
                if scope == "pooled" or e[0] == scope]
        tot = defaultdict(lambda: [0, 0, 0])
        hn, hn_alarm = set(), set()
        for e, flag in rows:
            c = e[1]
            keys = ["all", "cat:" + (c["memories"][e[2]].get("category") or c.get("category") or "?")]
            if c.get("subtype"):
                keys.append("sub:" + c["subtype"])
            for k in keys:
                tot[k][0] += bool(flag and e[4])
                tot[k][1] += bool(flag and not e[4])
                tot[k][2] += bool(not flag and e[4])
            if c.get("hard_negative"):
                hn.add(c["id"])
                if flag:
                    hn_alarm.add(c["id"])
        res = {}
        for k, (tp, fp, fn) in sorted(tot.items()):
            p = tp / (tp + fp) if tp + fp else 0.0
            r = tp / (tp + fn) if tp + fn else 0.0
            f = 2 * p * r / (p + r) if p + r else 0.0
            res[k] = {"tp": tp, "fp": fp, "fn": fn, "P": round(p, 3), "R": round(r, 3), "F1": round(f, 3)}
        res["hard_negative_alarms"] = f"{len(hn_alarm)}/{len(hn)}"
        out[scope] = res
        a = res["all"]
        print(f"{title} {Path(scope).name:<28} P={a['P']:.3f} R={a['R']:.3f} F1={a['F1']:.3f} "
              f"tp={a['tp']} fp={a['fp']} fn={a['fn']} hard-neg alarms {res['hard_negative_alarms']}")
    return out


def diagnose(ex, oof, title: str, learned: Learned) -> dict:
    """Where the contradicted pairs are lost, per file, category and subtype (counts only):
    ``rules`` flagged by the rules; ``model`` added by the pair model; ``below`` let through
    by the gate but under the threshold; ``gate_new`` turned away by the gate while the
    newer text wants no topic even looking wide (the topic model saw no slot in it);
    ``gate_old`` the older fact offers none; ``gate_cross`` turned away with topics on both
    sides but none shared (a cross-slot pair: study -> employer); ``gate_additive`` turned away as an addition to a multi-valued
    topic; ``confirmed`` read as a restatement (or the ending of another value) by the rules; ``skipped`` other entities."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for i, e in enumerate(ex):
        if not e[4]:
            continue
        c, f = e[1], e[3]
        flag, p, t = oof.get(i, (False, 0.0, 0.0))
        if e[6]:
            why = "skipped"
        elif e[5]:
            why = "rules"
        elif flag:
            why = "model"
        elif not_weighed(f):
            why = "confirmed"
        elif Learned.related(f):
            why = "below"
        elif f.get("t_want", 0.0) > 0:
            why = "gate_additive"
        elif not learned.wants_of(c["new_text"], True):
            why = "gate_new"
        elif not learned.topics_of(c["memories"][e[2]]["text"], c["memories"][e[2]].get("key")):
            why = "gate_old"
        else:
            why = "gate_cross"
        cat = c["memories"][e[2]].get("category") or c.get("category") or "?"
        for k in (Path(e[0]).name, f"{Path(e[0]).name} cat:{cat}",
                  f"{Path(e[0]).name} sub:{c.get('subtype') or '?'}", "pooled"):
            out[k][why] += 1
    order = ("rules", "model", "below", "gate_new", "gate_old", "gate_cross", "gate_additive", "confirmed", "skipped")
    print(f"{title}: where the contradicted pairs go ({', '.join(order)})")
    for k in sorted(out):
        print(f"  {k:<44} " + " ".join(f"{w}={out[k].get(w, 0)}" for w in order))
    return {k: dict(v) for k, v in out.items()}


def write_oof(ex, oof, folder: Path, tag: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    by_file = defaultdict(lambda: defaultdict(list))
    for i, e in enumerate(ex):
        by_file[e[0]][e[1]["id"]]
        if oof.get(i, (False,))[0]:
            by_file[e[0]][e[1]["id"]].append(e[2])
    for name, preds in by_file.items():
        with open(folder / f"oof-{tag}-{Path(name).stem}.jsonl", "w", encoding="utf-8") as f:
            for cid, flagged in preds.items():
                f.write(json.dumps({"id": cid, "contradicted": sorted(flagged), "update": None}) + "\n")


def _load_vectors(embedder, path: Path) -> None:
    """Vectors of an earlier run (same model) into the embedder's memory cache."""
    import numpy as np
    if not path.exists():
        return
    data = np.load(path, allow_pickle=False)
    if str(data["model"]) != embedder.model_name:
        return
    for t, v in zip(data["texts"], data["vectors"]):
        embedder.remember(str(t), v)


def _save_vectors(embedder, path: Path) -> None:
    import numpy as np
    texts = list(embedder._memory)
    if texts:
        np.savez(path, model=embedder.model_name, texts=np.array(texts),
                 vectors=np.vstack([embedder._memory[t] for t in texts]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--embeddings", action="store_true", help="fit the embeddings mode (cosine features)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--C", type=float, default=2.0, help="inverse L2 strength of the pair model")
    ap.add_argument("--min-precision", type=float, default=0.8,
                    help="inner-CV threshold: the lowest at which the model's additions keep this precision")
    ap.add_argument("--write", action="store_true", help="write the fitted weights into rules/")
    ap.add_argument("--oof-dir", default=None, help="write out-of-fold predictions (score.py format) here")
    ap.add_argument("--report-json", default=None)
    ap.add_argument("--vector-file", default=None,
                    help="--embeddings: keep the sentence vectors in this .npz between runs (encoding dominates)")
    ap.add_argument("--no-cue-prototypes", action="store_true",
                    help="--embeddings: leave out the cue prototype features (an ablation)")
    ap.add_argument("--no-shift-pairs", action="store_true",
                    help="--embeddings: do not train on tools/cue_corpus.py's minimal pairs (an ablation)")
    ap.add_argument("--shift-pairs", action="store_true",
                    help="rules mode: train on tools/cue_corpus.py's minimal pairs too (the embeddings mode does)")
    ap.add_argument("--pair-topics", action="store_true",
                    help="fit the topic model on the texts of tools/pair_corpus.jsonl too (pair_corpus.sentences_by_topic)")
    ap.add_argument("--natural-topics", action="store_true",
                    help="fit the topic model on tools/topic_corpus.jsonl's sentences too (four authors' memories "
                         "and chat messages, labelled by topic)")
    ap.add_argument("--natural-weight", type=float, default=NATURAL_WEIGHT,
                    help="--natural-topics: the weight of one of its sentences in the topic model's fit "
                         "(a template fill weighs 1)")
    ap.add_argument("--pair-corpus", action="store_true",
                    help="train the pair model on tools/pair_corpus.jsonl's labelled pairs too (the shipped rules mode is; "
                         "the embeddings mode is not)")
    ap.add_argument("--corpus-unweighted", action="store_true",
                    help="--pair-corpus: weigh its pairs that outdate the memory as much as the others (an ablation: "
                         "by default they are weighed down to the cases' share of contradicted pairs)")
    ap.add_argument("--aspect", action="store_true",
                    help="fit the aspect model (tools/aspect_corpus.jsonl): the pair model weighs "
                         "how likely the older text records a one-off event")
    ap.add_argument("--manner", action="store_true",
                    help="fit the manner model (tools/manner_corpus.jsonl): the pair model weighs "
                         "how the newer text speaks of a state (ended, switched, a plan, someone else ...)")
    ap.add_argument("--reuse-topics", action="store_true", help="keep rules/topic_model.json as it is")
    ap.add_argument("--keep-near-copies", action="store_true",
                    help="cross-validate with the full topic model (see near_copies: optimistic)")
    ap.add_argument("--base-corpus", action="store_true",
                    help="fit the topic model without the casual block of tools/casual_corpus.py (a baseline)")
    ap.add_argument("--no-near", action="store_true",
                    help="leave out rules/pair_cues.toml's neighbouring slots (an ablation: the gate as before)")
    ap.add_argument("--generated", action="store_true",
                    help="fit the topic model with the generated block of tools/generated_corpus.py too")
    ap.add_argument("--casual-fills", type=int, default=0,
                    help="how many fills of each template are also seen inside a chat opener and tail")
    ap.add_argument("--curve", default=None,
                    help="comma-separated inner-CV precision targets: print the CV P/R at each (trade-off curve)")
    ap.add_argument("--topic-C", type=float, default=TOPIC_C, help="inverse L2 strength of the topic model")
    ap.add_argument("--balanced-topics", action="store_true",
                    help="weigh every slot the same in the topic model's fit, however many templates it has")
    ap.add_argument("--gate", default=None,
                    help="TOP_K,TOPIC_MIN,WANT_K,WANT_MIN written into the topic model (learned.py's gate: "
                         "the topics an older fact offers, and those a newer one looks for); default: learned.py's")
    ap.add_argument("--casual-prototypes", action="store_true",
                    help="--embeddings: build the topic prototypes from the casual block of the corpus too")
    ap.add_argument("--diagnose", action="store_true",
                    help="print where the contradicted pairs are lost in CV (rules, model, gate...)")
    ap.add_argument("--static-topics", action="store_true",
                    help="static word vectors as topic-model features too: sharper topics, but texts such as "
                         "'Note 3 on employment' then take a topic and meet more facts in the block index")
    a = ap.parse_args(argv)
    globals()["STATIC_TOPICS"] = a.static_topics
    slot_corpus.use_casual(not a.base_corpus, generated=a.generated, pairs=a.pair_topics, natural=a.natural_topics)
    globals().update(TOPIC_C=a.topic_C, TOPIC_BALANCED=a.balanced_topics, NATURAL_WEIGHT=a.natural_weight)

    cases = {p: load_cases(p) for p in a.cases}
    reused = a.reuse_topics and TOPIC_FILE.exists()
    if reused and a.gate:
        ap.error("--gate is written into the topic model: it cannot be combined with --reuse-topics")
    if reused:
        topic = json.loads(TOPIC_FILE.read_text())
        acc = topic["cv_accuracy_by_template"]
    else:
        topic, acc = train_topics(casual=a.casual_fills)
    if a.gate:
        k, m, wk, wm = a.gate.split(",")
        topic["gate"] = {"top_k": int(k), "topic_min": float(m), "want_k": int(wk), "want_min": float(wm)}
    print(f"topic model: {topic['trained_on']}; accuracy {acc:.3f} (5-fold CV grouped by template)"
          + (f"; gate {topic['gate']}" if "gate" in topic else ""))
    skip = frozenset() if a.keep_near_copies else frozenset(near_copies(cases))
    topic_cv = train_topics(exclude=skip, casual=a.casual_fills, cv=False)[0] if skip else topic
    if "gate" in topic:
        topic_cv["gate"] = topic["gate"]
    print(f"cross-validation uses a topic model without the {len(skip)} corpus templates that "
          f"near-copy a text of the cases files")
    embedder = protos = protos_cv = cue_protos = cue_protos_cv = None
    shifts = (a.embeddings or a.shift_pairs) and not a.no_shift_pairs
    pairs = a.pair_corpus
    cue_skip: frozenset[str] = frozenset()
    if a.embeddings:
        from memwatch_overlay.overlay.detect.embeddings import Embedder
        embedder = Embedder()
        if a.vector_file:
            _load_vectors(embedder, Path(a.vector_file))
        # the topic prototypes are the means of the memory-style corpus: the casual block's chat
        # sentences (and its large "no slot" class) blur them (--casual-prototypes keeps them)
        import casual_corpus
        casual = frozenset() if a.casual_prototypes else frozenset(
            t for ts in casual_corpus.T_MORE.values() for t in ts)
        protos = build_prototypes(topic, embedder, exclude=casual)
        protos_cv = build_prototypes(topic, embedder, exclude=skip | casual)
        if not a.keep_near_copies:
            cue_skip = frozenset(near_copy_sentences(cases, cue_sentences()))
            print(f"... and without the {len(cue_skip)} sentences of tools/cue_corpus.py that near-copy one")
        if not a.no_cue_prototypes:
            cue_protos = build_cue_prototypes(embedder)
            cue_protos_cv = build_cue_prototypes(embedder, exclude=cue_skip) if cue_skip else cue_protos
    wordvec = load_word_vectors()
    aspect = None
    if a.aspect:
        aspect, aspect_acc = train_aspect()
        print(f"aspect model: {aspect['trained_on']}; accuracy {aspect_acc:.3f} leaving one author out")
    manner = None
    if a.manner:
        manner, manner_acc = train_manner()
        print(f"manner model: {manner['trained_on']}; accuracy {manner_acc:.3f} leaving one author out")
    cue_lexicons, topic_groups = load_cues()
    if a.no_near:
        topic_groups = {k: v for k, v in topic_groups.items() if k != "near"}
    learned = Learned(topic, {"modes": {}}, cue_lexicons, topic_groups, prototypes=protos, wordvec=wordvec,
                      aspect=aspect, manner=manner)
    learned_cv = Learned(topic_cv, {"modes": {}}, cue_lexicons, topic_groups, prototypes=protos_cv, wordvec=wordvec,
                         aspect=aspect, manner=manner)
    if cue_protos is not None:
        from memwatch_overlay.overlay.detect.semantic_features import CuePrototypes
        learned.cue_protos = CuePrototypes(cue_protos)
        learned_cv.cue_protos = CuePrototypes(cue_protos_cv)
    if embedder is not None:
        det = Detector(learned=learned, embedder=embedder)

        def view(text: str) -> FactView:
            return FactView("x", "case", None, text, "", 0.0)
        embedder.embed(sorted({t for cs in cases.values() for c in cs for t in det.embedding_texts(view(c["new_text"]))}
                              | {det.embedding_text(view(m["text"])) for cs in cases.values() for c in cs
                                 for m in c["memories"]}))
    ex = pair_examples(cases, learned_cv, embedder)
    mode = "embeddings" if a.embeddings else "rules"
    print(f"{len(ex)} pairs, {sum(e[4] for e in ex)} contradicted; mode {mode}")
    rules_only = {i: (e[5] and not e[6], 0, 0) for i, e in enumerate(ex)}
    rep = {"rules_alone": report(ex, rules_only, "rules alone      ")}
    if not a.keep_near_copies:     # the own pairs trained on leave out near-copies of a case text too
        # (the embeddings mode has left out the cue corpus's above, for its cue prototypes)
        cue_skip |= frozenset(near_copy_sentences(cases, (cue_sentences() if shifts and not a.embeddings else [])
                                                  + (pair_corpus.sentences() if pairs else [])))
    if pairs:
        n_pairs = len(pair_corpus.rows())
        print(f"tools/pair_corpus.jsonl: {n_pairs} pairs, "
              f"{n_pairs - len(pair_corpus.pairs(cue_skip))} left out of CV as near-copies of a case text")
    scored = [e for e in ex if not e[6]]
    base_rate = None if a.corpus_unweighted else sum(e[4] for e in scored) / len(scored)
    own = own_examples(learned_cv, embedder, shifts=shifts, exclude=cue_skip, pairs=pairs, base_rate=base_rate)
    if embedder is not None and a.vector_file:
        _save_vectors(embedder, Path(a.vector_file))
    print(f"{len(own)} own labelled pairs (tests/contradiction_cases.py"
          + (", tools/cue_corpus.py" if shifts else "") + (", tools/pair_corpus.jsonl" if pairs else "")
          + ") added to every training fold")
    for mp in ([float(x) for x in a.curve.split(",")] if a.curve else []):
        c_oof, c_ths = cross_validate(ex, a.folds, a.C, mp, own,
                                      picker=_pick_threshold_counted if a.embeddings else None)
        print(f"curve --min-precision {mp}: thresholds {c_ths}")
        rep[f"curve_{mp}"] = report(ex, c_oof, f"curve {mp:<5} OOF")
    oof, ths = cross_validate(ex, a.folds, a.C, a.min_precision, own,
                              picker=_pick_threshold_counted if a.embeddings else None)
    print(f"outer-fold thresholds (nested grouped CV): {ths}")
    rep["cv"] = report(ex, oof, f"{a.folds}-fold grouped OOF")
    if a.diagnose:
        rep["diagnosis"] = diagnose(ex, oof, f"{a.folds}-fold grouped OOF", learned_cv)
    if a.oof_dir:
        write_oof(ex, oof, Path(a.oof_dir), mode)
    if a.report_json:
        Path(a.report_json).write_text(json.dumps(rep, indent=1))
    if a.write:
        if skip or cue_skip:    # the shipped weights are fitted on the features of the shipped models
            ex = pair_examples(cases, learned, embedder)
            own = own_examples(learned, embedder, shifts=shifts, pairs=pairs, base_rate=base_rate)
        keep = [e for e in ex if not e[6]]
        v, m = _fit([e[3] for e in keep] + [o[0] for o in own], [e[4] for e in keep] + [o[1] for o in own], a.C,
                    [1.0] * len(keep) + [o[4] for o in own])
        weights = {name: round(float(w), 4) for name, w in zip(v.feature_names_, m.coef_[0]) if abs(w) >= 1e-4}
        pair_file = PAIR_FILES[mode]
        pair = json.loads(pair_file.read_text()) if pair_file.exists() else {"version": 1, "modes": {}}
        pair["modes"][mode] = {"bias": round(float(m.intercept_[0]), 4), "weights": weights,
                               "threshold": statistics.median(ths), "C": a.C,
                               "trained_on": [Path(p).name for p in a.cases] + ["tools/slot_corpus.py"]
                               + (["tools/cue_corpus.py"] if shifts else [])
                               + (["tools/pair_corpus.jsonl"] if pairs else [])
                               + (["tools/aspect_corpus.jsonl"] if aspect else [])
                               + (["tools/manner_corpus.jsonl"] if manner else []),
                               "pairs": len(keep)}
        if not reused:
            TOPIC_FILE.write_text(json.dumps(topic, separators=(",", ":")) + "\n")
        if aspect is not None:
            ASPECT_FILE.write_text(json.dumps(aspect, separators=(",", ":")) + "\n")
        if manner is not None:
            MANNER_FILE.write_text(json.dumps(manner, separators=(",", ":")) + "\n")
        if protos is not None:
            PROTO_FILE.write_text(json.dumps(protos, separators=(",", ":")) + "\n")
        if cue_protos is not None:
            CUE_PROTO_FILE.write_text(json.dumps(cue_protos, indent=0) + "\n")
        pair_file.write_text(json.dumps(pair, indent=1, sort_keys=True) + "\n")
        print(f"wrote {pair_file.relative_to(ROOT)} [{mode}]" + ("" if reused else " and "
              f"{TOPIC_FILE.relative_to(ROOT)}") + (f" and {PROTO_FILE.relative_to(ROOT)}" if protos else "")
              + (f" and {CUE_PROTO_FILE.relative_to(ROOT)}" if cue_protos else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
