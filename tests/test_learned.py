"""The learned layer (overlay/detect/learned.py): shipped weights, pure-Python scoring, guards."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from memwatch_overlay.overlay.detect.blocks import BlockIndex
from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.learned import load_learned

ROOT = Path(__file__).resolve().parents[1]
DAY = 86400.0


def fact(ref, text, key=None, days_ago=0.0):
    return FactView(ref=ref, subject="u1", key=key, text=text, category="general",
                    learned_at=1_800_000_000.0 - days_ago * DAY)


@pytest.fixture(scope="module")
def detector():
    return Detector()


@pytest.fixture(scope="module")
def rules():
    return Detector(learned=False)


def test_weights_ship_as_package_data_and_load():
    m = load_learned()
    assert m is not None and {"rules", "embeddings"} <= set(m.modes)
    assert 0 < m.threshold("rules") < 1 and 0 < m.threshold("embeddings") < 1
    assert "other" in m.topics.classes and len(m.topics.classes) > 30
    assert '"*.json"' in (ROOT / "pyproject.toml").read_text()


def test_rules_mode_scores_without_numpy_or_sklearn():
    code = ("import sys\n"
            "from memwatch_overlay.overlay.detect.detector import Detector, FactView\n"
            "d = Detector()\n"
            "o = FactView('o', 'u', 'city', 'Lives in Leeds', 'location', 0.0)\n"
            "n = FactView('n', 'u', None, 'first week in Bristol, the new flat has no signal', 'location', 1e6)\n"
            "print(len(d.compare(n, [o])), d.learned is not None)\n"
            "print(sorted(m for m in ('numpy', 'sklearn', 'scipy', 'torch') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout.split("\n")
    assert out[0] == "1 True" and out[1] == "[]"


@pytest.mark.parametrize("text,slot", [
    ("just got my Canva badge and a desk by the window", "employer"),
    ("the rent in our Lyon flat is so much lower", "city"),
    ("adopted a kitten called Biscuit", "pets"),
    ("submitted my dissertation, graduation in June", "study"),
])
def test_topic_model_reads_the_slot_of_unseen_phrasings(text, slot):
    assert slot in load_learned().info(text).tops


def test_learned_layer_finds_an_implicit_move_the_rules_miss(detector, rules):
    old = fact("old", "Lives in Leeds", key="city", days_ago=200)
    new = fact("new", "first week in Bristol, the new flat has no signal")
    assert rules.compare(new, [old]) == []
    [c] = detector.compare(new, [old])
    assert c.kind == "semantic" and c.update["action"] == "EXPIRE" and c.update["key"] == "city"
    assert "learned pair model" in c.evidence and 0 < c.confidence <= 0.85


@pytest.mark.parametrize("new", [
    "my sister is settling into Bristol, her new flat has no signal",   # another person
    "might move to Bristol next year, the flats there are cheaper",      # a plan
    "should I move to Bristol?",                                         # a question
    "visiting Bristol for the weekend",                                  # a temporary stay
    "still in Leeds, still loving it",                                   # a restatement
])
def test_guards_hold_for_the_learned_layer(detector, new):
    old = fact("old", "Lives in Leeds", key="city", days_ago=200)
    assert detector.compare(fact("new", new), [old]) == []


def test_a_restatement_the_rules_read_is_never_flagged(detector):
    old = fact("old", "Lives in Berlin", key="city", days_ago=300)
    new = fact("new", "still living in Berlin, still loving it")
    assert detector.compare(new, [old]) == [] and detector.confirmed == ["old"]


def test_block_index_offers_topics_so_implicit_pairs_meet():
    views = {0: fact("a", "Lives in Leeds", days_ago=200),
             1: fact("b", "Plays chess on Sundays", days_ago=100),
             2: fact("c", "first week in Bristol, the new flat has no signal")}
    det = Detector()
    index = BlockIndex(det, views)
    assert 0 in index.candidates(2) and 1 not in index.candidates(2)
    assert ("topic", "city") in det.learned_terms(views[0])[0]      # offered as the older fact
    assert 0 not in BlockIndex(Detector(learned=False), views).candidates(2)


def test_eval_script_prints_breakdowns_and_cost(tmp_path):
    cases = [
        {"id": "t1", "category": "location", "subtype": "value_change", "hard_negative": False,
         "memories": [{"key": "city", "text": "Lives in Leeds", "category": "location", "age_days": 200},
                      {"key": None, "text": "Plays chess on Sundays", "category": "preference", "age_days": 50}],
         "new_text": "first week in Bristol, the new flat has no signal",
         "expected": [{"memory_index": 0, "verdict": "contradicted"},
                      {"memory_index": 1, "verdict": "unrelated"}], "group": "t:1"},
        {"id": "t2", "category": "location", "subtype": None, "hard_negative": True,
         "memories": [{"key": "city", "text": "Lives in Leeds", "category": "location", "age_days": 200}],
         "new_text": "visiting Bristol for the weekend",
         "expected": [{"memory_index": 0, "verdict": "unrelated"}], "group": "t:2"},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "eval_contradictions.py"), str(path),
                          "--out", str(tmp_path / "pred.jsonl")], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert "P=1.000 R=1.000" in out and "hard-negative false alarms 0/1" in out
    assert "per memory category:" in out and "location" in out and "value_change" in out
    assert "s per 1,000 pairs" in out and "learned 1 right / 0 wrong" in out
    preds = [json.loads(x) for x in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert preds[0]["contradicted"] == [0] and preds[1]["contradicted"] == []
    alone = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "eval_contradictions.py"), str(path),
                            "--out", str(tmp_path / "p2.jsonl"), "--no-learned"], capture_output=True,
                           text=True, check=True, cwd=ROOT).stdout
    assert alone.startswith("rules:") and "R=0.000" in alone


@pytest.mark.parametrize("with_embeddings", [False, True])
def test_a_new_value_of_a_multi_valued_topic_is_an_addition(with_embeddings):
    """A second language (food, hobby) joins the first unless the newer text ends it."""
    embedder = None
    if with_embeddings:
        from memwatch_overlay.overlay.detect.embeddings import Embedder
        embedder = Embedder()
    d = Detector(embedder=embedder)
    old = fact("old", "Amara speaks French fluently.", days_ago=100)
    assert d.compare(fact("new", "Amara has started learning Portuguese."), [old]) == []
    city = fact("c", "Lives in Leeds", key="city", days_ago=200)
    assert [c.older for c in d.compare(fact("n", "first week in Bristol, the new flat has no signal"),
                                       [city])] == ["c"]


def test_the_pair_model_never_weighs_a_pair_the_store_keys_settle(detector, monkeypatch):
    """Two facts under one store key of a slot where several values hold at once (bench_detect's
    keyed store: "Speaks language 847" after "Speaks language 1496") are an addition: the pair
    model is not asked about them (it was, 29,508 times on that store, flagging none), nor about
    two keys that name different things; the same texts without keys still reach it."""
    asked = []
    real = Detector._learned
    monkeypatch.setattr(Detector, "_learned", lambda self, *a: asked.append(a[1].ref) or real(self, *a))
    assert detector.compare(fact("n1", "Speaks Italian", key="language"),
                            [fact("o1", "Speaks Portuguese", key="language", days_ago=30)]) == []
    assert asked == []
    # nor about two keys that name different things ("city" / "pet")
    detector.compare(fact("n4", "the commute is killing me lately", key="city"),
                     [fact("o4", "Works at Acme", key="pet", days_ago=30)])
    assert asked == []
    detector.compare(fact("n2", "Speaks Italian"), [fact("o2", "Speaks Portuguese", days_ago=30)])
    assert asked == ["o2"]


def _case_texts():
    from contradiction_cases import PARAPHRASES
    return [(o, k, n) for o, k, n, _ in PARAPHRASES]


def test_topic_model_features_are_the_hashed_ngrams_bucket_for_bucket():
    import json
    from memwatch_overlay.overlay.detect.learned import TopicModel, _rules_file, topic_features
    from memwatch_overlay.overlay.detect.wordvec import load_word_vectors
    data = json.loads(_rules_file("topic_model.json").read_text(encoding="utf-8"))
    wv = load_word_vectors()
    # a model of hashed n-grams alone and one fitted with --static-topics (dense columns too,
    # as the shipped one is)
    models = [TopicModel({**data, "dense_dims": 0}, wv), TopicModel({**data, "dense_dims": wv.dims}, wv)]
    assert models[0].wordvec is None and models[1].wordvec is wv
    assert TopicModel(data, wv).wordvec is wv
    texts = [t for o, k, n in _case_texts() for t in (o, n, f"{k}: {o}")]
    texts += ["", "a", "I'm   Bob", "naïve café in Zürich", "x-ray of my left arm, 2024"]
    for topics in models:
        for t in texts + texts:             # the second pass reads the cached buckets
            assert list(topics.features(t).items()) == list(topic_features(t, topics.buckets, topics.wordvec).items())


def test_topic_probabilities_are_the_plain_weighted_sums_bit_for_bit():
    import math
    from memwatch_overlay.overlay.detect.learned import topic_features
    topics = load_learned().topics

    def reference(text):
        z = list(topics.bias)
        for h, x in topic_features(text, topics.buckets, topics.wordvec).items():
            for c, wt in topics.weights_of(h):
                z[c] += wt * x
        m = max(z)
        e = [math.exp(v - m) for v in z]
        s = sum(e)
        return tuple(v / s for v in e)
    texts = [t for o, k, n in _case_texts() for t in (o, n, f"{k}: {o}")]
    texts += ["", "a", "zzqx", "naïve café in Zürich", "x-ray of my left arm, 2024"]
    for t in texts:
        assert topics.probs.__wrapped__(topics, t) == reference(t), t


def test_the_cheap_rules_mode_gate_agrees_with_the_features_gate():
    m = load_learned()
    cases = _case_texts()
    olds = {(o, k) for o, k, _ in cases}
    news = {n for _, _, n in cases}
    seen = {True: 0, False: 0}
    widened = 0
    for old, key in olds:
        for new in news:
            for wide in (True, False):
                feats = m.features(new, old, key, "none", 0.0, False, wide=wide)
                expected = m.related(feats)
                assert m.may_relate(new, old, key, wide) == expected, (old, key, new, wide)
                seen[expected] += 1
            # the wide gate (the newer text's four likeliest topics) lets through a superset
            narrow = m.may_relate(new, old, key, False)
            assert narrow <= m.may_relate(new, old, key, True)
            widened += m.may_relate(new, old, key, True) and not narrow
    assert seen[True] > 50 and seen[False] > 50      # both sides of the gate are exercised
    assert widened > 10                              # and the wider wants change something


def test_a_shared_name_opens_the_gate_and_the_cheap_gate_agrees():
    """A name of the older fact in the newer one (Detector.linked) lets the pair model weigh
    a pair whatever the topics say ("since Harold passed" after "Husband is Harold"); a
    shared common word does not; the cheap gate agrees with the features' gate either way."""
    det = Detector()
    m = det.learned
    pairs = [("Husband is Harold", None, "It's been a hard few months since Harold passed. The garden helps.", True),
             ("I live in Shoreditch", None, "Walthamstow is so much quieter than Shoreditch was", True),
             ("Priya thinks remote work is overrated for junior staff.", None,
              "Priya just joined Stripe as a staff engineer.", False),
             ("Note 3: the sky was clear tonight", None, "Note 4: the cat sat on the mat", False)]
    for old, key, new, linked in pairs:
        o, n = fact("o", old, key), fact("n", new)
        assert det.linked(n, o) is linked, (old, new)
        for wide in (True, False):
            feats = m.features(new, old, key, "none", 0.0, False, wide=wide, linked=linked)
            assert m.may_relate(new, old, key, wide, linked) == m.related(feats), (old, new, wide)
            if linked:
                assert m.related(feats) or feats.get("t_multi", 0) > feats.get("t_single", 0)
    old, new = pairs[1][0], pairs[1][2]
    assert not m.may_relate(new, old, None, True, False)        # the topics alone turn it away
    assert m.may_relate(new, old, None, True, True)


def test_the_newer_fact_looks_wide_only_where_the_rules_read_no_slot():
    """The index's topic wants are what the gate reads: the wider set for a text the rules
    read no slot in, its offered topics where they read one."""
    det = Detector()
    casual = fact("n1", "onboarding at the new place done, exhausted")
    slotted = fact("n2", "Please use t.nowak@example.net from now on, I closed the old address.")
    assert not det.read(casual).slots and det.read(slotted).slots
    for f, wide in ((casual, True), (slotted, False)):
        offers, wants = det.learned_terms(f)
        topic_wants = {t for t in wants if t[0] == "topic"}
        assert topic_wants == {("topic", t) for t in det.learned.wants_of(f.text, wide)}
        assert {t for t in det.offers_and_wants(f)[1] if t[0] == "topic"} == topic_wants
        # the other wants are its salient words, looking for an older fact naming them
        assert wants - topic_wants == {("link", a[:5]) for a in det.read(f).anchors}
    # the e-mail text's second guess is employer: looking wide, it would meet "works at Google"
    assert det.learned.wants_of(slotted.text, True) != det.learned.wants_of(slotted.text, False)


def test_pair_feature_sums_are_the_plain_generator_sums():
    m = load_learned()
    cases = _case_texts()
    other = m.topics.classes.index("other")
    checked = 0
    for old, key, _ in cases[:40]:
        for _, _, new in cases[::3]:
            f = m.features(new, old, key, "none", 0.0, False)
            n, o = m.info(new), m.info(m.old_text(old, key))
            assert f["t_dot"] == sum(a * b for a, b in zip(n.probs, o.probs))
            assert f["t_min"] == sum(min(a, b) for i, (a, b) in enumerate(zip(n.probs, o.probs)) if i != other)
            pm = [min(a, b) for a, b in zip(n.probs, o.probs)]
            assert f["t_single"] == sum(pm[i] for i in m.single) and f["t_multi"] == sum(pm[i] for i in m.multi)
            if n.vec is not None and o.vec is not None:
                assert f["w_sim"] == sum(a * b for a, b in zip(n.vec, o.vec))
                near = 0.0
                for w, v in o.words:
                    if w not in {x for x, _ in n.words}:
                        near = max(near, max((sum(a * b for a, b in zip(v, u)) for _, u in n.words), default=0.0))
                assert f["w_near"] == near
                checked += 1
            mode = m.modes["rules"]
            z = mode["bias"] + sum(mode["weights"].get(k, 0.0) * v for k, v in f.items())
            assert m.score("rules", f) == 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
    assert checked > 100
    # the word-pair dot products behind w_near / w_cover are computed once per pair of words
    # (a block meets the same words again and again): scoring the same pairs again adds none
    held = len(m._word_dots)
    assert held > 0
    for old, key, _ in cases[:40]:
        for _, _, new in cases[::3]:
            m.features(new, old, key, "none", 0.0, False)
    assert len(m._word_dots) == held


CONTENT_FREE = ["Note 4 on the quarterly numbers",       # notes naming a subject but stating nothing
                "note 9: location", "what a week, finally Friday", "so sleepy this afternoon",
                "must remember to descale the kettle", "cloudy again, as forecast", "hey, how's it going",
                "can you turn this into a bullet list?"]


def test_content_free_texts_take_no_topic():
    """The topic model's "no slot" class (tools/casual_corpus.py): small talk, notes, chores and
    questions to the assistant offer no topic to newer facts, and as newer facts look for hardly
    any, so in the block walk they meet few older facts through the learned layer (the model
    before the class: 4 of these 8 offered a topic, 14 topics wanted among them)."""
    m, det = load_learned(), Detector()
    for text in CONTENT_FREE:
        assert m.topics_of(text) == frozenset(), (text, m.topics.top(text))
        assert det.learned_terms(fact("n", text))[0] == set()
    assert sum(len(m.wants_of(text, True)) for text in CONTENT_FREE) <= 2


def test_a_topic_models_gate_values_travel_with_it():
    """A topic model may carry its own gate (train_detector --gate): top_k, topic_min, want_k,
    want_min; without one, learned.py's defaults hold."""
    from memwatch_overlay.overlay.detect import learned as L
    shipped = load_learned()
    assert (shipped.top_k, shipped.topic_min, shipped.want_k, shipped.want_min) == (
        L.TOP_K, L.TOPIC_MIN, L.WANT_K, L.WANT_MIN) or "gate" in json.loads(
        (ROOT / "rules" / "topic_model.json").read_text())
    topic = json.loads((ROOT / "rules" / "topic_model.json").read_text())
    text = "the commute from Oakland is killing me"
    cues, groups = L.load_cues()
    groups = {k: v for k, v in groups.items() if k != "near"}   # the gate values alone (no neighbours)
    wide = L.Learned(dict(topic, gate={"top_k": 3, "topic_min": 0.0, "want_k": 6, "want_min": 0.0}),
                     {"modes": {}}, cues, groups)
    narrow = L.Learned(dict(topic, gate={"top_k": 1, "topic_min": 0.0, "want_k": 1, "want_min": 0.0}),
                       {"modes": {}}, cues, groups)
    assert len(narrow.topics_of(text)) <= 1 and len(narrow.wants_of(text)) <= 1
    assert len(wide.topics_of(text) | {"other"}) >= 3 and len(wide.wants_of(text) | {"other"}) >= 6
    assert narrow.topics_of(text) <= wide.topics_of(text)


def test_a_newer_text_looking_wide_also_looks_for_neighbouring_slots():
    """rules/pair_cues.toml [topics] near: a newer text whose slot is only the topic model's
    guess also looks for older facts on the neighbours of its likeliest topics (a finished
    degree meets a job, a wedding meets a partner); what older facts offer is unchanged, a
    newer text the rules read a slot in looks only for its own topics, and small talk (no
    likely topic) gets no neighbours (test_content_free_texts_take_no_topic)."""
    from memwatch_overlay.overlay.detect import learned as L
    topic = json.loads((ROOT / "rules" / "topic_model.json").read_text())
    cues, groups = L.load_cues()
    assert groups["near"], "the shipped cues name neighbouring slots"
    near = L.Learned(topic, {"modes": {}}, cues, groups)
    plain = L.Learned(topic, {"modes": {}}, cues, {k: v for k, v in groups.items() if k != "near"})
    widened = 0
    for text in ("defended my thesis last week, graduation is in July",
                 "we tied the knot in a tiny chapel", "the new flat is so quiet at night"):
        assert near.topics_of(text) == plain.topics_of(text)
        assert near.wants_of(text, False) == plain.wants_of(text, False)
        assert plain.wants_of(text, True) <= near.wants_of(text, True)
        for t in plain.topics_of(text):
            assert near.near.get(t, frozenset()) <= near.wants_of(text, True)
        widened += len(near.wants_of(text, True) - plain.wants_of(text, True))
    assert widened >= 3
    # the gate reads the widened wants: a pair the plain gate turns away now meets
    new, old = "defended my thesis last week, graduation is in July", "Works at Deloitte"
    assert not plain.may_relate(new, old, "employer") or "employer" in plain.wants_of(new)
    assert near.may_relate(new, old, "employer") == near.related(
        near.features(new, old, "employer", "none", 0.0, False))


def test_the_embeddings_files_are_read_on_first_use_only():
    """The topic and cue prototypes serve the embeddings mode alone: a rules-mode detector
    never parses them; the first read loads them, and a value set by hand replaces them."""
    from memwatch_overlay.overlay.detect.learned import Learned, _optional_json
    m = Learned(*_shipped_parts())
    calls = []
    m.load_later(prototypes=lambda: calls.append("p") or {"vectors": [[1.0]], "scale": 1.0})
    det = Detector(learned=m)
    det.compare(fact("n", "Just joined Stripe.", days_ago=0), [fact("o", "Works at Google", days_ago=90)])
    assert calls == []                                   # the rules mode never read them
    assert m.prototypes["scale"] == 1.0 and calls == ["p"]                 # the first read loads them
    assert m.prototypes["scale"] == 1.0 and calls == ["p"]                 # once
    m.load_later(prototypes=lambda: calls.append("again"))
    m.prototypes = None                                  # set by hand: the pending read is dropped
    assert m.prototypes is None and calls == ["p"]
    shipped = load_learned()
    assert shipped.prototypes == _optional_json("topic_prototypes.json")
    with pytest.raises(TypeError, match="no such attribute"):
        m.load_later(topics=lambda: None)


def _shipped_parts():
    """What load_learned() builds a Learned from, without the prototypes."""
    from memwatch_overlay.overlay.detect.learned import _optional_json, _rules_file, load_cues, load_pair_modes
    from memwatch_overlay.overlay.detect.wordvec import load_word_vectors
    topic = json.loads(_rules_file("topic_model.json").read_text(encoding="utf-8"))
    return (topic, {"modes": load_pair_modes({})}, *load_cues(), None, load_word_vectors(),
            _optional_json("aspect_model.json"), _optional_json("manner_model.json"))
