"""The topic model's probabilities estimated cheaply, and when the estimate may decide.

``TopicModel.probs`` is the reference: the plain weighted sum of every feature, added one
feature at a time as the model was fitted. Most of its cost is the 64 word-vector columns,
which weigh every one of the ~34 topics: over 2,000 multiply-adds per text. Those columns
are linear in the text's averaged word vector ``v = s / |s|`` (``s`` the sum of its content
words' unit vectors), so

    sum_k W[k] * v[k]  =  (sum over its words w of  W u_w) / |s|

and ``W u_w``, one topic vector per word, is itself ``(sum over w's WordPiece pieces of W
piece) / |sum of the pieces|``: each piece is projected once (a store of 10,000 keyed
memories, every one with its own number, meets 859 distinct pieces). The hashed n-grams
regroup the same way: ``sum_h W[h] * c_h / n`` is the sum of each word's n-gram rows (kept
per word) and of its word pair's row, divided by ``n``. Sums being sums, a beginning several
texts share is summed once and a text's last word added to it (``probs``).

The estimate adds the same terms in another order, so it differs from the reference by
rounding alone (at most 3e-15 on the benchmark's and the tests' texts;
``tests/test_topic_estimate.py`` bounds it at 1e-12). ``certain`` says when a decision taken on the estimate (the likeliest topic, the
topics at least so likely among the likeliest k) is the reference's own: no probability
within ``MARGIN`` (1e-9, a thousand times the bound) of a threshold, nor of its neighbour at
a rank that matters. Where it is not certain, the caller decides on the reference.

Example:
    >>> from memwatch_overlay.overlay.detect.learned import load_learned
    >>> m = load_learned().topics
    >>> est = TopicEstimator(m).probs("my first payslip from Grab today")
    >>> max(abs(a - b) for a, b in zip(est, m.probs("my first payslip from Grab today"))) < 1e-12
    True
"""
from __future__ import annotations

import math
from operator import mul
from typing import TYPE_CHECKING, NamedTuple, Sequence

from memwatch_overlay.overlay.detect.wordvec import content_words, wordpiece

if TYPE_CHECKING:
    from memwatch_overlay.overlay.detect.learned import TopicModel

MARGIN = 1e-9           # how close to a decision's boundary the estimate may come and still decide
_CACHE = 16384          # words (and word pairs, pieces) whose rows an estimator keeps
_WORDS = 4096           # words whose vectors it keeps (~3 KB each)
_HEADS = 1024           # shared beginnings whose sums it keeps (a few KB each)


class TopicEstimator:
    """``model.probs`` up to rounding, from per-word and per-piece rows kept as they are met."""

    def __init__(self, model: TopicModel):
        from memwatch_overlay.overlay.detect.learned import DENSE_SCALE, _bucket, tokens
        self._bucket, self._tokens, self._scale = _bucket, tokens, DENSE_SCALE
        self.model = model
        self.size = len(model.bias)
        self._zero = (0.0,) * self.size
        self._words: dict[str, tuple[tuple[int, ...], tuple[float, ...] | None]] = {}
        self._pairs: dict[str, tuple[int, tuple[float, ...] | None]] = {}
        self._pieces: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self._dense: dict[str, tuple[tuple[float, ...], tuple[float, ...]] | None] = {}
        self._heads: dict[str, _Sums] = {}
        self._seen: dict[str, None] = {}
        self._tail: tuple[str | None, _Sums] = (None, _Sums({}, 0, self._zero, None, None, None, 0.0, self._zero))
        wv = model.wordvec
        self.wordvec = wv
        if wv is not None:
            # the word-vector columns by topic: cols[c][k] = weight of dimension k for topic c
            rows = [self._row(model.buckets + k) or self._zero for k in range(wv.dims)]
            self._cols = [tuple(r[c] for r in rows) for c in range(self.size)]

    def _row(self, h: int) -> tuple[float, ...] | None:
        """The weights of feature ``h`` for every topic (None when it weighs none)."""
        if h not in self.model.w:
            return None
        full = [0.0] * self.size
        for c, wt in self.model.weights_of(h):
            full[c] = wt
        return tuple(full)

    def _word(self, w: str) -> tuple[tuple[int, ...], tuple[float, ...] | None]:
        """A word's buckets (its own, then its character 4-grams, as TopicModel.features
        counts them) and the sum of their rows."""
        got = self._words.get(w)
        if got is None:
            if len(self._words) > _CACHE:
                self._words.clear()
            b, buckets = self._bucket, self.model.buckets
            p = f" {w} "
            hs = (b("w:" + w, buckets), *(b("c:" + p[j:j + 4], buckets) for j in range(max(1, len(p) - 3))))
            acc, weighs = [0.0] * self.size, False
            for h in hs:
                for c, wt in self.model.weights_of(h):
                    acc[c] += wt
                    weighs = True
            got = self._words[w] = (hs, tuple(acc) if weighs else None)
        return got

    def _pair(self, pair: str) -> tuple[int, tuple[float, ...] | None]:
        got = self._pairs.get(pair)
        if got is None:
            if len(self._pairs) > _CACHE:
                self._pairs.clear()
            h = self._bucket("b:" + pair, self.model.buckets)
            got = self._pairs[pair] = (h, self._row(h))
        return got

    def _piece(self, i: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """One WordPiece vector (as floats) and its projection through the word-vector columns."""
        got = self._pieces.get(i)
        if got is None:
            if len(self._pieces) > _CACHE:
                self._pieces.clear()
            v = tuple(map(float, self.wordvec._piece(i)))
            got = self._pieces[i] = (v, tuple([sum(map(mul, col, v)) for col in self._cols]))
        return got

    def _word_vector(self, w: str) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """A word's unit vector (as WordVectors.word_vector makes it, up to rounding) and
        ``W u_w``, that vector through the word-vector columns; None for an unknown word."""
        if w in self._dense:
            return self._dense[w]
        if len(self._dense) > _WORDS:
            self._dense.clear()
        ids = wordpiece(w, self.wordvec.ids)
        got = None
        if ids:
            acc: Sequence[float]
            proj: Sequence[float]
            acc, proj = self._piece(ids[0])
            for i in ids[1:]:
                v, t = self._piece(i)
                acc = [a + x for a, x in zip(acc, v)]
                proj = [a + x for a, x in zip(proj, t)]
            n = math.sqrt(sum(map(mul, acc, acc)))
            if n:
                inv = 1.0 / n
                got = (tuple([x * inv for x in acc]), tuple([x * inv for x in proj]))
        self._dense[w] = got
        return got

    def probs(self, text: str) -> tuple[float, ...]:
        """The topic distribution of ``text``, equal to ``model.probs(text)`` up to rounding.

        A text is the sums of its words' rows, so a beginning that texts share ("employer:
        Works at Acme" before each keyed memory's own value) is summed once: from the second
        ASCII text that shares all but its last word, those sums are kept and only the last
        word is added (split at a space, the n-grams and word vectors of the two parts are
        those of the whole: no token spans a space)."""
        if not text.isascii():
            return self._finish(self._partial(text))
        i = text.rfind(" ")
        if i <= 0:
            return self._finish(self._last(text))
        head = text[:i]
        hp = self._heads.get(head)
        if hp is None:
            if head not in self._seen:          # a head met once is not kept
                if len(self._seen) > _CACHE:
                    self._seen.clear()
                self._seen[head] = None
                return self._finish(self._partial(text))
            if len(self._heads) > _HEADS:
                self._heads.clear()
            hp = self._heads[head] = self._partial(head)
        return self._joined(hp, self._last(text[i + 1:]))

    def _last(self, tail: str) -> _Sums:
        """``_partial(tail)``, kept for the next call: a keyed memory's two readings (its key
        and text, its text alone) end with the same words."""
        got = self._tail           # read once: the pair stays whole if another thread replaces it
        if got[0] != tail:
            got = self._tail = (tail, self._partial(tail))
        return got[1]

    def _partial(self, text: str) -> _Sums:
        """The unnormalized sums of one text (see ``_Sums``)."""
        counts: dict[int, int] = {}
        get = counts.get
        hashed: Sequence[float] = self._zero
        first = prev = None
        for w in self._tokens(text):
            hs, row = self._word(w)
            for h in hs:
                counts[h] = get(h, 0) + 1
            if row is not None:
                hashed = [a + b for a, b in zip(hashed, row)]
            if prev is not None:
                h, row = self._pair(prev + "_" + w)
                counts[h] = get(h, 0) + 1
                if row is not None:
                    hashed = [a + b for a, b in zip(hashed, row)]
            else:
                first = w
            prev = w
        s: Sequence[float] | None = None
        proj: Sequence[float] = self._zero
        if self.wordvec is not None:
            for w in content_words(text):
                got = self._word_vector(w)
                if got is not None:
                    s = got[0] if s is None else [a + x for a, x in zip(s, got[0])]
                    proj = [a + x for a, x in zip(proj, got[1])]
        c = list(counts.values())
        return _Sums(counts, sum(map(mul, c, c)), hashed, first, prev, s,
                     sum(map(mul, s, s)) if s is not None else 0.0, proj)

    def _finish(self, t: _Sums) -> tuple[float, ...]:
        """Normalize the sums as TopicModel.features does (the n-gram counts to unit length,
        the word vectors' mean to a unit vector) and take the softmax."""
        inv = 1.0 / (math.sqrt(t.sq) or 1.0)
        if t.ss > 0.0:
            k = self._scale / math.sqrt(t.ss)
            z = [b + x * inv + y * k for b, x, y in zip(self.model.bias, t.hashed, t.proj)]
        else:
            z = [b + x * inv for b, x in zip(self.model.bias, t.hashed)]
        return _softmax(z)

    def _joined(self, a: _Sums, b: _Sums) -> tuple[float, ...]:
        """``_finish`` of the sums of text ``a``, a space, then text ``b`` (what ``_partial``
        gives of the whole), without building them: the squared norms grow by what ``b``
        adds (``|x + y|^2 = |x|^2 + 2 x.y + |y|^2``)."""
        get = a.counts.get
        sq = a.sq + sum((2 * get(h, 0) + c) * c for h, c in b.counts.items())
        pair_row = None
        if a.last is not None and b.first is not None:       # the word pair across the space
            h, pair_row = self._pair(a.last + "_" + b.first)
            # its count goes from what a and b hold of bucket h (n) to n + 1: |x|^2 grows by 2n + 1
            sq += 2 * (get(h, 0) + b.counts.get(h, 0)) + 1
        inv = 1.0 / (math.sqrt(sq) or 1.0)
        if a.s is None or b.s is None:
            ss = a.ss + b.ss
        else:
            ss = a.ss + 2.0 * sum(map(mul, a.s, b.s)) + b.ss
        k = self._scale / math.sqrt(ss) if ss > 0.0 else 0.0
        bias = self.model.bias
        if pair_row is None:
            z = [c + (x + y) * inv + (u + v) * k
                 for c, x, y, u, v in zip(bias, a.hashed, b.hashed, a.proj, b.proj)]
        else:
            z = [c + (x + y + r) * inv + (u + v) * k
                 for c, x, y, r, u, v in zip(bias, a.hashed, b.hashed, pair_row, a.proj, b.proj)]
        return _softmax(z)


def _softmax(z: list[float]) -> tuple[float, ...]:
    m = max(z) if z else 0.0
    exp = math.exp
    e = [exp(v - m) for v in z]
    total = sum(e)
    return tuple([v / total for v in e])


class _Sums(NamedTuple):
    """What a text adds to the topic model's sums before they are normalized: its n-gram
    counts by bucket (and the sum of their squares) and their rows' sum, its first and last
    word (a word pair spans a join), the sum of its content words' unit vectors (and its
    squared norm) and of their projected rows."""

    counts: dict[int, int]
    sq: int
    hashed: Sequence[float]
    first: str | None
    last: str | None
    s: Sequence[float] | None
    ss: float
    proj: Sequence[float]


def certain(p: Sequence[float], order: Sequence[int], thresholds: Sequence[tuple[int, float]]) -> bool:
    """Whether probabilities within ``MARGIN`` of ``p`` (sorted likeliest first by ``order``)
    give the same likeliest class and, for each ``(k, at_least)``, the same classes at least
    ``at_least`` likely among the ``k`` likeliest: no such probability within MARGIN of
    ``at_least``, and no tie within 2 * MARGIN across the rank-k boundary where it matters
    (the k-th could hold). Ties among the likeliest are not certain either."""
    if len(order) > 1 and p[order[0]] - p[order[1]] <= 2 * MARGIN:
        return False
    for k, at_least in thresholds:
        for i in order[:k]:
            if -MARGIN <= p[i] - at_least <= MARGIN:
                return False
        if len(order) > k and p[order[k - 1]] > at_least - MARGIN and p[order[k - 1]] - p[order[k]] <= 2 * MARGIN:
            return False
    return True
