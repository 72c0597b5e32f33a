"""The topic model's probabilities of many texts at once, with numpy (optional).

``TopicModel.probs`` reads one text at a time in pure Python. Where a block's texts are
known before it is walked (``Learned.prefetch``), their logits are the same linear map
computed for all of them in a few array operations:

  hashed n-grams  each text's bucket counts (words, word pairs, character 4-grams, as
                  ``TopicModel.features`` counts them) scaled to unit length, times the rows
                  of the buckets the model weighs (a compact ``buckets weighed x topics``
                  matrix);
  word vectors    each text's averaged word vector (its content words' unit vectors summed,
                  then scaled to unit length: ``WordVectors.text_vector``) as a row, times the
                  ``64 x topics`` word-vector column block.

The sums are added in another order than the reference's, so the probabilities differ from
it by rounding alone (``tests/test_topic_batch.py`` bounds it at 1e-12, as for the
estimate); decisions taken on them pass ``certain`` like the estimate's (``decide``: the same
tests on all rows at once), and where they are not certain the reference decides. Without
numpy (or with ``USE_NUMPY`` off, or for a block of fewer than ``MIN_BATCH`` texts) every
text goes through ``TopicEstimator`` as before, and numpy is never imported.
"""
from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Sequence

from memwatch_overlay.overlay.detect.topic_estimate import MARGIN
from memwatch_overlay.overlay.detect.wordvec import content_words, wordpiece

if TYPE_CHECKING:
    import numpy as np
    from memwatch_overlay.overlay.detect.learned import TopicModel
else:
    np = None           # numpy (the `fast` extra), imported by load() on first use

USE_NUMPY = True        # the switch: False runs the per-text estimate only, as without numpy
MIN_BATCH = 4096        # fewer texts go through the per-text estimate (loading numpy and the
                        # model's matrices, ~0.1 CPU s, pays off from a few thousand texts)
CHUNK = 16384           # texts computed in one product (bounds the arrays' memory)
_CACHE = 50_000         # words (and word pairs) whose buckets / unit vectors are kept
_tried = False


def load() -> bool:
    """Whether batched probabilities can be computed: numpy installed (imported here, the
    first time a batch is asked for: comparing a few facts never loads it) and USE_NUMPY."""
    global np, _tried
    if not USE_NUMPY:
        return False
    if np is None and not _tried:
        _tried = True
        try:
            import numpy
        except ImportError:
            return False
        np = numpy
    return np is not None


class TopicBatch:
    """``model.probs`` of a list of texts, up to rounding, in one pass of array operations."""

    def __init__(self, model: TopicModel):
        from memwatch_overlay.overlay.detect.learned import DENSE_SCALE, tokens
        self.model, self._tokens, self._scale = model, tokens, DENSE_SCALE
        self.size = len(model.bias)
        self.buckets = model.buckets
        self.bias = np.asarray(model.bias, dtype=np.float64)
        weighed = sorted(h for h in model.w if h < model.buckets)
        # bucket -> row of the compact matrix (0: a zero row, for the buckets nothing weighs)
        self._row_of = np.zeros(model.buckets, dtype=np.int64)
        w = np.zeros((len(weighed) + 1, self.size), dtype=np.float64)
        self._row_of[weighed] = np.arange(1, len(weighed) + 1)
        flat = [model.w[h] for h in weighed]         # [class, weight, class, weight, ...] each
        w[np.repeat(np.arange(1, len(weighed) + 1), [len(s) // 2 for s in flat]),
          [c for s in flat for c in s[::2]]] = [x for s in flat for x in s[1::2]]
        self._w, self._wt = w, np.ascontiguousarray(w.T)     # by bucket; by topic (to gather columns)
        wv = model.wordvec
        self.wordvec = wv
        if wv is not None:
            self._dense = np.zeros((wv.dims, self.size), dtype=np.float64)
            for k in range(wv.dims):
                for c, wt in model.weights_of(model.buckets + k):
                    self._dense[k, c] = wt
            # the int8 piece vectors, read in place
            self._pieces_t = np.ascontiguousarray(np.frombuffer(wv._vecs, dtype=np.int8).reshape(-1, wv.dims).T)
        self._words: dict[str, tuple[int, ...]] = {}
        self._pairs: dict[str, int] = {}
        self._units: dict[str, np.ndarray] = {}  # word -> its unit vector (zeros if unknown)
        self._zero = np.zeros(wv.dims if wv is not None else 0, dtype=np.float64)
        self.texts = 0                            # texts computed so far (tests count them)

    def _word(self, w: str) -> tuple[int, ...]:
        """A word's buckets: its own, then its character 4-grams (TopicModel.features)."""
        got = self._words.get(w)
        if got is None:
            if len(self._words) > _CACHE:
                self._words.clear()
            b = self.buckets
            p = f" {w} "
            got = self._words[w] = (
                zlib.crc32(("w:" + w).encode("utf-8")) % b,
                *(zlib.crc32(("c:" + p[j:j + 4]).encode("utf-8")) % b for j in range(max(1, len(p) - 3))))
        return got

    def _pair(self, pair: str) -> int:
        got = self._pairs.get(pair)
        if got is None:
            if len(self._pairs) > _CACHE:
                self._pairs.clear()
            got = self._pairs[pair] = zlib.crc32(("b:" + pair).encode("utf-8")) % self.buckets
        return got

    def probs(self, texts: Sequence[str]) -> np.ndarray:
        """The topic distribution of each text (a row each), equal to ``model.probs`` up to
        rounding."""
        n = len(texts)
        if n > CHUNK:
            return np.concatenate([self.probs(texts[i:i + CHUNK]) for i in range(0, n, CHUNK)])
        if not n:
            return np.zeros((0, self.size), dtype=np.float64)
        self.texts += n
        parsed = _Parsed(self, texts)
        z = self._hashed(parsed, n)
        if self.wordvec is not None:
            z += self._dense_part(parsed, n)
        z += self.bias
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        e /= e.sum(axis=1, keepdims=True)
        return e

    def decide(self, p: np.ndarray, thresholds: Sequence[tuple[int, float]]):
        """For each row of ``p``: its classes likeliest first (ties in class order, as
        ``sorted(..., reverse=True)`` leaves them), whether ``certain`` holds of it, and for
        each ``(k, at_least)`` the classes at least so likely among its k likeliest, as a
        bit mask (bit c: class c). The same tests as ``certain``, on all rows at once."""
        order = np.argsort(-p, axis=1, kind="stable")
        ps = np.take_along_axis(p, order, axis=1)
        size = p.shape[1]
        unsure = np.zeros(len(p), dtype=bool)
        if size > 1:
            unsure |= ps[:, 0] - ps[:, 1] <= 2 * MARGIN
        masks = []
        bit = np.left_shift(np.int64(1), order.astype(np.int64))
        for k, at_least in thresholds:
            d = ps[:, :k] - at_least
            unsure |= ((d >= -MARGIN) & (d <= MARGIN)).any(axis=1)
            if size > k:
                unsure |= (ps[:, k - 1] > at_least - MARGIN) & (ps[:, k - 1] - ps[:, k] <= 2 * MARGIN)
            masks.append((bit[:, :k] * (ps[:, :k] >= at_least)).sum(axis=1))
        return order[:, 0], ~unsure, masks

    def _hashed(self, parsed: _Parsed, n: int) -> np.ndarray:
        """The n-gram part of the logits. Its numerator is the sum of the rows of each word's
        buckets and of each word pair's bucket, taken a word at a time (each distinct word's
        rows summed once); its denominator, the length of the text's counts by bucket, is
        counted over all the buckets of the text (two words may share one)."""
        if not parsed.occ:
            return np.zeros((n, self.size), dtype=np.float64)
        # each distinct word's buckets, flat, and the sum of the rows of those the model weighs
        word = self._word
        hs = [word(w) for w in parsed.words]
        lens = np.fromiter(map(len, hs), dtype=np.int64, count=len(hs))
        flat = np.fromiter((h for t in hs for h in t), dtype=np.int64, count=int(lens.sum()))
        starts = np.cumsum(lens) - lens
        rows = self._row_of[flat]
        weighed = rows > 0
        rows_w_t = _segment_sums(np.repeat(np.arange(len(hs), dtype=np.int64), lens)[weighed],
                                 self._wt, rows[weighed], len(hs)).T
        occ = np.asarray(parsed.occ, dtype=np.int64)
        pairs = np.asarray(parsed.pairs, dtype=np.int64)
        text_w = _segments(parsed.w_ends)
        text_p = _segments(parsed.p_ends)
        # the length of each text's counts by bucket: every bucket of every word occurrence
        # (its word's run of `flat`) and of every word pair, counted by (text, bucket)
        per = lens[occ]
        ends = np.cumsum(per)
        at = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(starts[occ] - (ends - per), per)
        keys = np.concatenate((np.repeat(text_w, per) * self.buckets + flat[at], text_p * self.buckets + pairs))
        keys, cnt = np.unique(keys, return_counts=True)
        c = cnt.astype(np.float64)
        norm = np.sqrt(np.bincount(keys // self.buckets, weights=c * c, minlength=n))
        norm[norm == 0.0] = 1.0
        # the numerator: word rows by occurrence and pair rows, summed per text
        z = _segment_sums(text_w, rows_w_t, occ, n)
        if len(pairs):
            z += _segment_sums(text_p, self._wt, self._row_of[pairs], n)
        z /= norm[:, None]
        return z

    def _dense_part(self, parsed: _Parsed, n: int) -> np.ndarray:
        """The word-vector part of the logits: each text's unit mean word vector times the
        word-vector columns (DENSE_SCALE weighs it, as in TopicModel.features). A word the
        vocabulary cannot split is a zero row: it adds nothing, as it is skipped there."""
        if not parsed.docc:
            return np.zeros((n, self.size), dtype=np.float64)
        units = self._units
        new = [w for w in parsed.dwords if w not in units]
        if len(units) + len(new) > _CACHE:        # make room first: every word of the batch stays
            units.clear()
            new = list(parsed.dwords)
        if new:
            self._unit_vectors(new)
        u = np.asarray([units[w] for w in parsed.dwords], dtype=np.float64)
        s = _segment_sums(_segments(parsed.d_ends), np.ascontiguousarray(u.T), np.asarray(parsed.docc, dtype=np.int64), n)
        norm = np.sqrt(np.einsum("ij,ij->i", s, s))
        norm[norm == 0.0] = np.inf                  # no known word: no word-vector features
        # einsum's own loop, not BLAS: OpenBLAS splits a product this size over its worker
        # threads, which then spin-wait after it (about 10% more CPU for the same wall time)
        return np.einsum("ij,jk->ik", s * (self._scale / norm)[:, None], self._dense)

    def _unit_vectors(self, words: list[str]) -> None:
        """The unit vector (the mean of its WordPiece vectors, scaled: ``word_vector``) of
        each of these words, kept in ``_units`` (zeros for a word the vocabulary cannot split)."""
        units = self._units
        flat: list[int] = []
        ends: list[int] = []
        known: list[str] = []
        vocab = self.wordvec.ids
        for w in words:
            ids = wordpiece(w, vocab)
            units[w] = self._zero
            if ids:
                flat.extend(ids)
                ends.append(len(flat))
                known.append(w)
        if not known:
            return
        acc = _segment_sums(_segments(ends), self._pieces_t, np.asarray(flat, dtype=np.int64), len(ends))
        norm = np.sqrt(np.einsum("ij,ij->i", acc, acc))
        for w, a, nm in zip(known, acc, norm):
            if nm > 0.0:
                units[w] = a / nm


def _segments(ends: list[int]) -> np.ndarray:
    """The segment (text) of each item, from where each segment ends."""
    e = np.asarray(ends, dtype=np.int64)
    return np.repeat(np.arange(len(e), dtype=np.int64), np.diff(e, prepend=0))


def _segment_sums(seg: np.ndarray, table: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    """Row ``i`` of the result: the sum of the columns ``idx[k]`` of ``table`` (one row per
    column of the result, e.g. the weights by topic) over the items ``k`` of segment ``i``
    (``seg[k]``), added in item order, one column of the result at a time (a gather of one
    row is all it holds at once; ``np.add.reduceat`` over rows is slower)."""
    out = np.empty((len(table), n), dtype=np.float64)
    for c, row in enumerate(table):
        out[c] = np.bincount(seg, weights=row.take(idx), minlength=n)
    return out.T


class _Parsed:
    """What the topic model reads of each text of a batch: its words (``tokens``) as indexes
    of the batch's distinct words, its word pairs' buckets, its content words
    (``content_words``) as indexes of the batch's distinct content words, each list flat
    with where each text ends. An ASCII text is its beginning up to the last space, read
    once for all the texts sharing it ("employer: Works at Acme"), then its last word, also
    read once for all the texts ending with it (a fact's text and its key with its text, as
    ``prefetch_topics`` lists them, end alike): no token spans a space, so the parts are
    those of the whole."""

    def __init__(self, batch: TopicBatch, texts: Sequence[str]):
        self.words: dict[str, int] = {}
        self.dwords: dict[str, int] = {}
        self.occ: list[int] = []
        self.pairs: list[int] = []
        self.docc: list[int] = []
        self.w_ends: list[int] = []
        self.p_ends: list[int] = []
        self.d_ends: list[int] = []
        self._batch = batch
        self._dense = batch.wordvec is not None
        heads: dict[str, tuple] = {}
        tails: dict[str, tuple] = {}
        occ, pairs, docc, pair = self.occ, self.pairs, self.docc, batch._pair
        for t in texts:
            i = t.rfind(" ") if t.isascii() else -1
            if i > 0:
                head = t[:i]
                h = heads.get(head)
                if h is None:
                    h = heads[head] = self._part(head)
                last = t[i + 1:]
                tail = tails.get(last)
                if tail is None:
                    tail = tails[last] = self._part(last)
                occ += h[0]
                occ += tail[0]
                pairs += h[1]
                if h[3] is not None and tail[2] is not None:
                    pairs.append(pair(h[3] + "_" + tail[2]))
                pairs += tail[1]
                docc += h[4]
                docc += tail[4]
            else:
                whole = self._part(t)
                occ += whole[0]
                pairs += whole[1]
                docc += whole[4]
            self.w_ends.append(len(occ))
            self.p_ends.append(len(pairs))
            self.d_ends.append(len(docc))

    def _part(self, text: str) -> tuple[list[int], list[int], str | None, str | None, list[int]]:
        """(word indexes, word-pair buckets, first word, last word, content-word indexes)."""
        words, pair = self.words, self._batch._pair
        occ: list[int] = []
        pairs: list[int] = []
        first = prev = None
        for w in self._batch._tokens(text):
            i = words.get(w)
            if i is None:
                i = words[w] = len(words)
            occ.append(i)
            if prev is not None:
                pairs.append(pair(prev + "_" + w))
            else:
                first = w
            prev = w
        docc: list[int] = []
        if self._dense:
            dwords = self.dwords
            for w in content_words(text):
                i = dwords.get(w)
                if i is None:
                    i = dwords[w] = len(dwords)
                docc.append(i)
        return occ, pairs, first, prev, docc
