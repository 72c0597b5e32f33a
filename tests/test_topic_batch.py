"""A block's topics estimated in one batch (overlay/detect/topic_batch.py, numpy): within
rounding of the reference probabilities, the reference's decisions, the same findings as the
per-text estimate (what runs without numpy), and each distinct text computed once."""
from __future__ import annotations

import random

import pytest

from memwatch_overlay.overlay.detect import topic_batch
from memwatch_overlay.overlay.detect.learned import TOP_K, TOPIC_MIN, WANT_K, WANT_MIN, TopicModel, load_learned
from memwatch_overlay.overlay.detect.topic_estimate import MARGIN, TopicEstimator, certain
from memwatch_overlay.overlay.engine.audit import audit

from test_detect_blocks import _write
from test_learned import _case_texts
from test_sync_contradictions import AS_OF
from test_topic_estimate import KEYED, _reference, _sets, _texts

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.numpy

ODD = ["", " ", "  two  spaces ", "\t", "Ünïcödé straße in Köln", "東京に引っ越した", "emoji 🎉 party",
       "ahora trabajo en Globant", "e-mail: a.b+c@x.co", "@handle_99", "+44 7700 900123", "a a a a a",
       "acme acmes acmeacme", "it's   it's", "...", "x" * 300, "word " * 60]


def _all_texts() -> list[str]:
    return _texts() + ODD + [f"{k}: {v.format(i)}" for i in range(200) for k, v in KEYED[:2]]


@pytest.fixture
def learned():
    """The shipped learned layer with empty topic caches and no batch yet (emptied after)."""
    m = load_learned()
    m._topic_cache.clear()
    m._info.clear()
    m._batch = None
    yield m
    m._topic_cache.clear()
    m._info.clear()


@pytest.mark.parametrize("chunk", [topic_batch.CHUNK, 7])
def test_the_batched_probabilities_are_the_reference_up_to_rounding(monkeypatch, chunk):
    monkeypatch.setattr(topic_batch, "CHUNK", chunk)
    assert topic_batch.load()
    topics = load_learned().topics
    texts = _all_texts()
    batch = topic_batch.TopicBatch(topics)
    for p in (batch.probs(texts), batch.probs(texts[::-1])[::-1]):   # the second reads kept words
        assert p.shape == (len(texts), len(topics.classes))
        worst = max(max(abs(x - y) for x, y in zip(row, _reference(topics, t))) for row, t in zip(p.tolist(), texts))
        assert worst < 1e-12


def test_a_batch_outgrowing_the_word_caches_keeps_every_word(monkeypatch):
    """Caches far smaller than a batch's words: each batch still reads every word it needs
    (a cache cleared in the middle of a batch lost words it had already counted)."""
    monkeypatch.setattr(topic_batch, "_CACHE", 5)
    assert topic_batch.load()
    topics = load_learned().topics
    texts = _all_texts()
    batch = topic_batch.TopicBatch(topics)
    for part in (texts[:40], texts[20:80], texts):          # overlapping: some words kept, some new
        worst = max(max(abs(x - y) for x, y in zip(row, _reference(topics, t)))
                    for row, t in zip(batch.probs(part).tolist(), part))
        assert worst < 1e-12


def test_a_model_without_word_vectors_is_batched_too():
    import json
    from memwatch_overlay.overlay.detect.learned import _rules_file
    assert topic_batch.load()
    data = json.loads(_rules_file("topic_model.json").read_text(encoding="utf-8"))
    topics = TopicModel({**data, "dense_dims": 0}, load_learned().wordvec)
    texts = _all_texts()
    for row, t in zip(topic_batch.TopicBatch(topics).probs(texts).tolist(), texts):
        assert max(abs(x - y) for x, y in zip(row, _reference(topics, t))) < 1e-12


def test_the_batched_decisions_are_the_reference_decisions(monkeypatch, learned):
    monkeypatch.setattr(topic_batch, "MIN_BATCH", 1)
    texts = _all_texts()
    learned.prefetch(texts)
    assert set(texts) <= set(learned._topic_cache)
    for t in texts:
        p, top, tops, wants = learned._topic_cache[t]
        ref = _reference(learned.topics, t)
        assert (top, tops, wants) == _sets(learned, ref), t
        assert max(abs(x - y) for x, y in zip(p, ref)) < 1e-12


def test_the_batched_certainty_is_certain_row_by_row():
    """``TopicBatch.decide`` on rows at, near and away from every boundary, ties among them:
    the same verdicts as ``certain`` and the same likeliest topics as a sort."""
    assert topic_batch.load()
    rnd = random.Random(7)
    rows = [(0.6, 0.3, 0.05, 0.03, 0.02), (0.6, 0.25 + MARGIN / 2, 0.1, 0.03, 0.02),
            (0.6, 0.2, 0.1 - MARGIN / 2, 0.06, 0.04), (0.45, 0.45, 0.05, 0.03, 0.02),
            (0.5, 0.3, 0.15, 0.0250000001, 0.0249999999), (0.4, 0.2, 0.2, 0.12, 0.08),
            (0.4, 0.15, 0.15, 0.15, 0.15), (0.25, 0.25, 0.25, 0.25, 0.0), (0.7, 0.1, 0.1, 0.1, 0.0)]
    for _ in range(2000):
        w = [rnd.choice((rnd.random(), 0.1, 0.25, 0.5)) for _ in range(5)]
        rows.append(tuple(x / sum(w) for x in w))
    p = np.asarray(rows, dtype=np.float64)
    thresholds = ((TOP_K, TOPIC_MIN), (WANT_K, WANT_MIN))
    batch = topic_batch.TopicBatch(load_learned().topics)
    top, sure, (tops, wants) = batch.decide(p, thresholds)
    for i, row in enumerate(p.tolist()):
        order = sorted(range(len(row)), key=row.__getitem__, reverse=True)
        assert bool(sure[i]) is certain(row, order, thresholds), row
        assert top[i] == order[0]
        assert tops[i] == sum(1 << c for c in order[:TOP_K] if row[c] >= TOPIC_MIN)
        assert wants[i] == sum(1 << c for c in order[:WANT_K] if row[c] >= WANT_MIN)


def _one_user_store(tmp_path):
    """One user's memories: keyed values that change (several the same text), and the
    paraphrase cases' older memories (with their keys) and newer texts, all in one block."""
    rows = []
    for i in range(240):
        key, value = KEYED[i % len(KEYED)]
        rows.append(("u1", "general", key, value.format(i % 150), f"2025-{1 + i % 12:02d}-{1 + i % 27:02d} 10:00:00"))
    for j, (old, key, new) in enumerate(_case_texts()):
        rows.append(("u1", "general", key, old, f"2024-{1 + j % 12:02d}-{1 + j % 27:02d} 09:00:00"))
        rows.append(("u1", "general", None, new, f"2026-{1 + j % 10:02d}-{1 + j % 27:02d} 11:00:00"))
    return _write(tmp_path / "bot.db", rows), len(rows)


def _findings(store, overlay) -> list[tuple]:
    result = audit(str(store), None, as_of=AS_OF, overlay_path=str(overlay))
    try:
        return sorted((c["older"], c["newer"], c["kind"], c["confidence"], c["evidence"],
                       repr(sorted((c.get("update") or {}).items()))) for c in result.contradictions())
    finally:
        result.close()


def test_the_batch_and_the_per_text_estimate_find_the_same(tmp_path, monkeypatch, learned):
    monkeypatch.setattr(topic_batch, "MIN_BATCH", 100)      # a block of ~1,200 texts is batched
    store, n = _one_user_store(tmp_path)
    estimated: list[str] = []
    probs = TopicEstimator.probs
    monkeypatch.setattr(TopicEstimator, "probs", lambda self, t: estimated.append(t) or probs(self, t))
    monkeypatch.setattr(topic_batch, "USE_NUMPY", False)        # as without numpy
    without = _findings(store, tmp_path / "o1.db")
    assert len(estimated) > n                                    # the per-text estimate decided
    learned._topic_cache.clear()
    learned._info.clear()
    estimated.clear()
    monkeypatch.setattr(topic_batch, "USE_NUMPY", True)
    batched = _findings(store, tmp_path / "o2.db")
    assert estimated == [] and learned._batch is not None and learned._batch.texts > n
    assert batched == without and len(batched) > 20


def test_each_distinct_text_is_batched_once_per_block(tmp_path, monkeypatch, learned):
    """Counted, not timed: the block's texts (each fact's key and text as the older fact,
    its text alone as the newer one) go through one batch, each distinct one once; the
    per-text estimate computes none of them."""
    monkeypatch.setattr(topic_batch, "MIN_BATCH", 100)
    store, n = _one_user_store(tmp_path)
    batched: list[str] = []
    probs = topic_batch.TopicBatch.probs
    monkeypatch.setattr(topic_batch.TopicBatch, "probs", lambda self, ts: batched.extend(ts) or probs(self, ts))
    estimated: list[str] = []
    est = TopicEstimator.probs
    monkeypatch.setattr(TopicEstimator, "probs", lambda self, t: estimated.append(t) or est(self, t))
    assert len(_findings(store, tmp_path / "o.db")) > 20
    assert len(batched) == len(set(batched)) and estimated == []
    keyed = {f"{k}: {v.format(i % 150)}" for i in range(240) for k, v in [KEYED[i % len(KEYED)]]}
    assert keyed <= set(batched)
    # a re-audit into a new overlay: every text's topics are kept, nothing is computed again
    batched.clear()
    _findings(store, tmp_path / "o2.db")
    assert batched == [] and estimated == []


def test_a_small_block_goes_text_by_text(tmp_path, monkeypatch, learned):
    """Below MIN_BATCH texts the batch would cost more than it saves (loading numpy and the
    model's matrices): a store of a few hundred memories is estimated text by text."""
    store, _ = _one_user_store(tmp_path)
    made = []
    monkeypatch.setattr(topic_batch, "TopicBatch", lambda model: made.append(model))
    assert len(_findings(store, tmp_path / "o.db")) > 20
    assert made == [] and learned._batch is None


def test_comparing_a_few_facts_does_not_load_numpy():
    import subprocess
    import sys
    code = ("import sys\n"
            "from memwatch_overlay.overlay.detect.learned import load_learned\n"
            "m = load_learned()\n"
            "m.prefetch(['employer: Works at Acme %d' % i for i in range(100)])\n"
            "print(len(m._topic_cache), 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "False"]


def test_a_word_ending_many_texts_is_read_once_per_batch(monkeypatch):
    """Counted, not timed: a block's texts come in pairs ending alike (a fact's key with its
    text, and its text alone: "employer: Works at Acme 7", "Works at Acme 7"); each distinct
    beginning and each distinct last word is read once, and the probabilities are the
    reference's up to rounding, as for texts read whole."""
    assert topic_batch.load()
    topics = load_learned().topics
    texts = [t for i in range(300) for k, v in KEYED[:2] for t in (f"{k}: {v.format(i)}", v.format(i))]
    parts: list[str] = []
    part = topic_batch._Parsed._part
    monkeypatch.setattr(topic_batch._Parsed, "_part", lambda self, text: parts.append(text) or part(self, text))
    p = topic_batch.TopicBatch(topics).probs(texts)
    assert len(parts) == len(set(parts)) == 4 + 300          # 4 beginnings, 300 last words
    for row, t in list(zip(p.tolist(), texts))[:40]:
        assert max(abs(x - y) for x, y in zip(row, _reference(topics, t))) <= 1e-12


def _many_users_store(tmp_path):
    """Many users with a few memories each (the paraphrase cases, one case per user: its
    older memory and its newer text, plus a keyed value that changes): every block is far
    below MIN_BATCH texts."""
    rows = []
    for j, (old, key, new) in enumerate(_case_texts()):
        user = f"u{j}"
        k, v = KEYED[j % len(KEYED)]
        rows.append((user, "general", k, v.format(j), f"2024-{1 + j % 12:02d}-{1 + j % 27:02d} 08:00:00"))
        rows.append((user, "general", key, old, f"2024-{1 + j % 12:02d}-{1 + j % 27:02d} 09:00:00"))
        rows.append((user, "general", None, new, f"2026-{1 + j % 10:02d}-{1 + j % 27:02d} 11:00:00"))
        rows.append((user, "general", k, v.format(j + 1000), f"2026-{1 + j % 10:02d}-{1 + j % 27:02d} 12:00:00"))
    return _write(tmp_path / "bot.db", rows), len(rows)


def test_many_small_blocks_are_batched_together(tmp_path, monkeypatch, learned):
    """A store of many users (blocks of four facts): the blocks of a large sync are gathered
    and their topics estimated in batches across blocks (blocks.TOPIC_BATCH_FACTS), not text
    by text; the findings are those of the per-text estimate."""
    from memwatch_overlay.overlay.detect import blocks
    monkeypatch.setattr(topic_batch, "MIN_BATCH", 100)
    monkeypatch.setattr(blocks, "SCAN_MIN_CHANGED", 100)
    monkeypatch.setattr(blocks, "TOPIC_BATCH_FACTS", 200)    # several batches, the last one partial
    store, n = _many_users_store(tmp_path)
    assert n > 3 * blocks.TOPIC_BATCH_FACTS
    estimated: list[str] = []
    probs = TopicEstimator.probs
    monkeypatch.setattr(TopicEstimator, "probs", lambda self, t: estimated.append(t) or probs(self, t))
    batches: list[int] = []
    batched = topic_batch.TopicBatch.probs
    monkeypatch.setattr(topic_batch.TopicBatch, "probs", lambda self, ts: batches.append(len(ts)) or batched(self, ts))
    monkeypatch.setattr(topic_batch, "USE_NUMPY", False)        # as without numpy: text by text
    without = _findings(store, tmp_path / "o1.db")
    assert len(estimated) > n and batches == []
    learned._topic_cache.clear()
    learned._info.clear()
    estimated.clear()
    monkeypatch.setattr(topic_batch, "USE_NUMPY", True)
    with_batches = _findings(store, tmp_path / "o2.db")
    assert with_batches == without and len(with_batches) > 50
    assert len(batches) >= 3 and estimated == []


def test_a_small_sync_is_not_gathered_for_a_batch(tmp_path, monkeypatch, learned):
    """Below SCAN_MIN_CHANGED changed facts (a daemon's incremental sync) the blocks are
    walked as they are read: nothing is held back to fill a batch."""
    from memwatch_overlay.overlay.detect import blocks
    monkeypatch.setattr(topic_batch, "MIN_BATCH", 100)
    monkeypatch.setattr(blocks, "TOPIC_BATCH_FACTS", 200)
    store, n = _many_users_store(tmp_path)
    assert n < blocks.SCAN_MIN_CHANGED
    made = []
    monkeypatch.setattr(topic_batch, "TopicBatch", lambda model: made.append(model))
    assert len(_findings(store, tmp_path / "o.db")) > 50
    assert made == [] and learned._batch is None


def test_a_block_past_the_batch_size_is_batched_by_its_own_walk_only(tmp_path, monkeypatch, learned):
    """A block of TOPIC_BATCH_FACTS facts or more is not gathered for a batch: its own walk
    (BlockIndex.add) batches it. Estimated in both places, a block past the topic cache had
    its first batch dropped by the second (one batch computed for nothing)."""
    from memwatch_overlay.overlay.detect import blocks, learned as learned_module
    monkeypatch.setattr(topic_batch, "MIN_BATCH", 100)
    monkeypatch.setattr(blocks, "SCAN_MIN_CHANGED", 100)
    monkeypatch.setattr(blocks, "TOPIC_BATCH_FACTS", 200)
    store, n = _one_user_store(tmp_path)
    monkeypatch.setattr(learned_module, "TOPIC_CACHE", n // 2)  # a fraction of the block's texts
    batches: list[int] = []
    probs = topic_batch.TopicBatch.probs
    monkeypatch.setattr(topic_batch.TopicBatch, "probs", lambda self, ts: batches.append(len(ts)) or probs(self, ts))
    assert len(_findings(store, tmp_path / "o.db")) > 20
    assert batches == [n // 2]
