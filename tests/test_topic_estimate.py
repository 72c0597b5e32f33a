"""The candidate index's cheap topic estimate (overlay/detect/topic_estimate.py): within
rounding of the reference probabilities, deciding only what the reference decides, and
leaving the reference to the texts that meet in a pair."""
from __future__ import annotations

import pytest

from memwatch_overlay.overlay.detect.learned import (TOP_K, TOPIC_MIN, WANT_K, WANT_MIN, TopicModel,
                                                      load_learned)
from memwatch_overlay.overlay.detect.topic_estimate import MARGIN, TopicEstimator, certain
from memwatch_overlay.overlay.engine.audit import audit

from test_detect_blocks import _write
from test_learned import _case_texts
from test_sync_contradictions import AS_OF

KEYED = [("employer", "Works at Acme {}"), ("city", "Lives in City {}"), ("email", "mail{}@example.com"),
         ("food", "Loves dish {}"), ("language", "Speaks language {}"), ("pet", "Has a dog named {}")]


def _texts() -> list[str]:
    out = [t for o, k, n in _case_texts() for t in (f"{k}: {o}", o, n)]
    out += ["", "a", " ", "zzqx", "naïve café in Zürich", "x-ray of my left arm, 2024", "I'm   Bob", "...",
            "'", "Note: moved to Leeds", "job title: Senior engineer at Grab", "trailing space "]
    for i in range(60):                 # keyed memories read as the index reads them: key + text, then text
        key, value = KEYED[i % len(KEYED)]
        out += [f"{key}: {value.format(i)}", value.format(i)]
    return out


def _reference(topics: TopicModel, text: str) -> tuple[float, ...]:
    return topics.probs.__wrapped__(topics, text)


def _sets(learned, p):
    """(top, tops, wants) decided on the distribution `p`, the wanted topics with the
    neighbouring slots of the likeliest ones (`[topics] near`), as the model decides them."""
    order = sorted(range(len(p)), key=lambda i: -p[i])
    classes = learned.topics.classes
    tops = frozenset(classes[i] for i in order[:TOP_K] if p[i] >= TOPIC_MIN) - {"other"}
    wants = frozenset(classes[i] for i in order[:WANT_K] if p[i] >= WANT_MIN) - {"other"}
    if learned.near and tops:
        wants = wants.union(*(learned.near.get(t, ()) for t in tops))
    return classes[order[0]], tops, wants


def test_the_estimate_is_the_reference_up_to_rounding():
    topics = load_learned().topics
    est = TopicEstimator(topics)
    texts = _texts()
    worst = 0.0
    for t in texts + texts:             # the second pass reads kept beginnings and word rows
        a, b = est.probs(t), _reference(topics, t)
        assert len(a) == len(b)
        worst = max(worst, max(abs(x - y) for x, y in zip(a, b)))
    assert worst < 1e-12                # MARGIN (1e-9) is a thousand times this bound
    assert est._heads                   # shared beginnings were kept and joined


def test_a_model_without_word_vectors_is_estimated_too():
    import json
    from memwatch_overlay.overlay.detect.learned import _rules_file
    data = json.loads(_rules_file("topic_model.json").read_text(encoding="utf-8"))
    topics = TopicModel({**data, "dense_dims": 0}, load_learned().wordvec)
    est = TopicEstimator(topics)
    for t in _texts():
        assert max(abs(x - y) for x, y in zip(est.probs(t), _reference(topics, t))) < 1e-12


def test_the_index_topics_are_the_reference_decisions():
    m = load_learned()
    for t in _texts():
        _, top, tops, wants = m._topics(t)
        assert (top, tops, wants) == _sets(m, _reference(m.topics, t)), t
        assert m.topics_of(t) == tops and m.wants_of(t) == wants and m.wants_of(t, False) == tops


@pytest.mark.parametrize("p, expected", [
    ((0.6, 0.3, 0.05, 0.03, 0.02), True),
    ((0.6, 0.25 + MARGIN / 2, 0.1, 0.03, 0.02), False),     # at a threshold
    ((0.6, 0.2, 0.1 - MARGIN / 2, 0.06, 0.04), False),
    ((0.45, 0.45, 0.05, 0.03, 0.02), False),                # the likeliest tie
    ((0.5, 0.3, 0.15, 0.0250000001, 0.0249999999), True),   # a tie below the wanted threshold
    ((0.4, 0.2, 0.2, 0.12, 0.08), True),                    # a tie across the 2nd, below its threshold
    ((0.4, 0.15, 0.15, 0.15, 0.15), False),                 # a tie across the 4th where it holds
])
def test_certain_only_away_from_every_boundary(p, expected):
    order = sorted(range(len(p)), key=lambda i: -p[i])
    assert certain(p, order, ((TOP_K, TOPIC_MIN), (WANT_K, WANT_MIN))) is expected


def test_an_uncertain_estimate_is_decided_on_the_reference(monkeypatch):
    m = load_learned()
    text = "my first payslip from Grab today, zz-uncertain"
    ref = _reference(m.topics, text)
    order = sorted(range(len(ref)), key=lambda i: -ref[i])
    fake = list(ref)            # an estimate whose two likeliest topics tie: not certain
    fake[order[1]] = fake[order[0]]
    monkeypatch.setattr(m.estimator, "probs", lambda t: tuple(fake) if t == text else ref)
    m._topic_cache.pop(text, None)
    try:
        p, top, tops, wants = m._topics(text)
        assert tuple(p) == ref and (top, tops, wants) == _sets(m, ref)
    finally:
        m._topic_cache.pop(text, None)


def test_the_reference_is_read_only_for_texts_that_pass_the_gate(tmp_path, monkeypatch):
    """An audit indexes every text by the estimate; the reference probabilities are computed
    for the texts whose pairs the gate lets through (the pair features read them), not for
    every text the index reads."""
    rows = []
    for i in range(300):
        key, value = KEYED[i % len(KEYED)]
        rows.append(("u1", "general", key, value.format(i), f"2026-{1 + i % 9:02d}-{1 + i % 27:02d} 10:00:00"))
    rows += [("u1", "general", None, t, "2026-10-01 10:00:00") for t in
             ("First week in Bristol, the new flat has no signal", "First week at Canva done, exhausted")]
    store = _write(tmp_path / "bot.db", rows)
    m = load_learned()
    m._topic_cache.clear()
    m._info.clear()
    reference, indexed, gated = set(), set(), set()
    probs, topics, features = TopicModel.probs, type(m)._topics, type(m).features

    def counted_probs(self, text):
        reference.add(text)
        return probs.__wrapped__(self, text)

    def counted_topics(self, text):
        indexed.add(text)
        return topics(self, text)

    def counted_features(self, new_text, old_text, old_key, *a, **k):
        gated.update((new_text, self.old_text(old_text, old_key)))
        return features(self, new_text, old_text, old_key, *a, **k)
    monkeypatch.setattr(TopicModel, "probs", counted_probs)
    monkeypatch.setattr(type(m), "_topics", counted_topics)
    monkeypatch.setattr(type(m), "features", counted_features)
    result = audit(str(store), None, as_of=AS_OF, overlay_path=str(tmp_path / "o.db"))
    assert result.summary["total"] == 302
    result.close()
    assert len(indexed) >= 600                  # both readings of every keyed memory
    assert gated and reference <= gated
    assert len(reference) < len(indexed) / 10


def _pair_collisions(est: TopicEstimator, head: str) -> tuple[str | None, str | None]:
    """A word ending ``head`` + " " + word whose word pair across the space falls in a bucket
    the head's own n-grams hold, and one where it falls in one of the word's own."""
    from memwatch_overlay.overlay.detect.learned import _bucket
    held = est._partial(head).counts
    last = est._tokens(head)[-1]
    in_head = in_tail = None
    for i in range(200_000):
        w = f"q{i}"
        h = _bucket(f"b:{last}_{w}", est.model.buckets)
        if in_head is None and h in held:
            in_head = w
        if in_tail is None and h in est._partial(w).counts:
            in_tail = w
        if in_head and in_tail:
            break
    return in_head, in_tail


def test_a_join_counts_the_word_pair_in_a_bucket_either_side_already_holds():
    """``_joined`` grows the squared n-gram norm by the word pair across the space without
    copying the counts: right also when that pair's bucket is one the head's or the tail's
    own n-grams fill (a hash collision), where the count goes from n to n + 1."""
    topics = load_learned().topics
    est = TopicEstimator(topics)
    head = "employer: Works at Acme"
    in_head, in_tail = _pair_collisions(est, head)
    assert in_head and in_tail
    for w in (in_head, in_tail, "5123"):
        text = f"{head} {w}"
        whole = est._partial(text)
        joined = est._joined(est._partial(head), est._partial(w))
        assert max(abs(x - y) for x, y in zip(joined, est._finish(whole))) < 1e-12
        assert max(abs(x - y) for x, y in zip(joined, _reference(topics, text))) < 1e-12


def test_kept_distributions_are_the_decided_floats_as_doubles():
    """The topic cache keeps each distribution as C doubles (a third of a tuple of float
    objects' memory; a 10,000-memory block keeps 20,000): the very floats the topics were
    decided on, the estimate's where it is certain and the reference's where it is not."""
    from array import array
    m = load_learned()
    seen: list[tuple[float, ...]] = []

    def kept(f):
        return lambda text: seen.append(f(text)) or seen[-1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(m.estimator, "probs", kept(m.estimator.probs))
        mp.setattr(m.topics, "probs", kept(m.topics.probs))
        for t in _texts():
            m._topic_cache.pop(t, None)
            seen.clear()
            p = m._topics(t)[0]
            assert isinstance(p, array) and p.typecode == "d"
            assert tuple(p) == seen[-1]     # the last distribution read: the one decided on


def test_a_keyed_memory_meets_its_value_once_for_both_readings(monkeypatch):
    """The index reads a keyed memory twice (key and text as the older fact, text alone as the
    newer one). Its value's last word is summed once for both (``_last``), and each distinct
    word's rows and vector are built once: counted over 300 keyed memories, all values new."""
    from collections import Counter
    from memwatch_overlay.overlay.detect.detector import Detector, FactView
    d = Detector()
    est = d.learned.estimator
    calls: Counter = Counter()
    import memwatch_overlay.overlay.detect.topic_estimate as te
    partial, bucket, wordpiece = est._partial, est._bucket, te.wordpiece
    monkeypatch.setattr(est, "_partial", lambda x: (calls.update([("_partial", x)]), partial(x))[1])
    # a word's rows are built from its own bucket, its vector from its WordPiece ids
    monkeypatch.setattr(est, "_bucket", lambda s, n: (
        s.startswith("w:") and calls.update([("_word", s[2:])]), bucket(s, n))[1])
    monkeypatch.setattr(te, "wordpiece", lambda w, *a: (calls.update([("_word_vector", w)]), wordpiece(w, *a))[1])
    views = [FactView(f"s:t:{i}", "u1", key, value.format(9000 + i), "general", float(i))
             for i, (key, value) in ((i, KEYED[i % len(KEYED)]) for i in range(300))]
    for v in views:
        offers, wants = d.offers_and_wants(v)
        assert any(t[0] == "topic" for t in offers | wants)
    tails = Counter(x for (name, x), n in calls.items() if name == "_partial" for _ in range(n))
    for v in views[2 * len(KEYED):]:    # once a key's beginning is kept (met twice)
        assert tails[v.text.rsplit(" ", 1)[-1]] == 1     # one sum of the value for both readings
    assert max(n for (name, _), n in calls.items() if name in ("_word", "_word_vector")) == 1
    assert sum(n for (name, _), n in calls.items() if name == "_partial") < 1.1 * len(views)
