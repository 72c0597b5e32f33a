"""The learned layer: a slot/topic model, two text classifiers and a pair model, scored in
pure Python.

Small linear models fitted by ``tools/train_detector.py`` (scikit-learn, only at training
time) and shipped as JSON next to the slot pack:

  topic model  ``rules/topic_model.json``: multinomial logistic regression over hashed word,
               word-pair and character n-grams; gives each text a distribution over ~35 slots
               (employer, city, pets, diet, ...) plus "other". Trained on a self-written corpus of
               slot-labelled sentences (``tools/slot_corpus.py``), so it knows that "first payslip
               from Grab" and "Works at Google" talk about the same slot without a shared word.
  aspect model ``rules/aspect_model.json``: does an older memory hold a lasting state or
               record a one-off episode ("Had coffee with Ana near the office")? The topic
               model's form, two classes (``tools/aspect_corpus.jsonl``).
  manner model ``rules/manner_model.json``: how a newer text speaks of a state (ended,
               switched, began, resolved; a plan, someone else's news, a question ...): the
               same form, 13 classes (``tools/manner_corpus.jsonl``).
  pair model   logistic regression over features of one (older, newer) pair: what the rules
               said, slot agreement, value difference, change / ending / hedge / other-person /
               question / past-habit / temporary / addition cues (``rules/pair_cues.toml``)
               and, in the embeddings mode, cosine similarity and prototype readings. One
               weight set per mode, each in its own file with its own threshold chosen by
               nested grouped cross-validation: ``rules/pair_model.json`` (mode ``rules``) and
               ``rules/pair_model_embeddings.json`` (mode ``embeddings``).

A pair the rules left undecided is flagged when the pair model's probability reaches the
mode's threshold. Nothing here is per-case: every weight comes from fitting.

Example:
    >>> m = load_learned()
    >>> m.topics.top("my first payslip from Grab today")
    'employer'
"""
from __future__ import annotations

import functools
import json
import math
import re
from array import array
import tomllib
import zlib
from dataclasses import dataclass
from importlib import resources
from itertools import repeat
from operator import itemgetter, mul
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from memwatch_overlay.overlay.detect import topic_batch
from memwatch_overlay.overlay.detect.topic_estimate import MARGIN, TopicEstimator, certain
from memwatch_overlay.overlay.detect.wordvec import WordVectors, load_word_vectors

_WORD = re.compile(r"[@\w][\w@.+'-]*")
_CAP = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+)")
_VALUEISH = re.compile(r"@\w+|\b[\w.+-]+@[\w-]+\.\w+|\+?\d[\d\s-]{5,}\d|\b\d+(?:[.,]\d+)?\b")
_NUMWORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
             "eight": 8, "nine": 9, "ten": 10, "first": 1, "second": 2, "third": 3, "fourth": 4}
_STOP = frozenset("""a an the and or but so to of in on at for with from by as is are was were be
been am i me my we our you your he she his her they their it its this that these those has have
had do does did not no just now very really so too also got get user s t of up out about into over
then than there here what when who how all any some more most much one""".split())
TOP_K = 2            # a pair is related when the two likeliest topics of each text meet
TOPIC_MIN = 0.25     # ... counting only topics at least this likely
WANT_K = 4           # the newer text of a pair looks wider: any of its four likeliest topics
WANT_MIN = 0.1       # ... at least this likely may meet one the older text offers (tops)
# (a topic model may carry its own four values, fitted with it: its "gate" entry, train_detector)
WORD_DOTS_MAX = 65536  # word-pair dot products kept (Learned._word_dots; ~200 bytes each)
SIM_GATE = 0.3       # ... or, in the embeddings mode, when the texts are at least this similar
DENSE_SCALE = 1.0    # weight of a text's static word vector among the topic model's features
TOPIC_CACHE = 65536  # texts whose topics are kept (a block of 20,000 keyed memories reads 40,000)
OUTDATING_MANNERS = ("ended", "switched", "began", "resolved")   # the manner model's classes that outdate
CUES = ("change", "ending", "start", "hedge", "question", "other_person", "past_habit",
        "temporary", "addition", "still", "negation")


def tokens(text: str) -> list[str]:
    return [w.lower().strip(".'-") for w in _WORD.findall(text or "")]


def hashed(text: str, buckets: int) -> dict[int, float]:
    """Hashed features of one text: words, word pairs and character 4-grams of words."""
    ws = tokens(text)
    feats: dict[int, float] = {}

    def add(s: str) -> None:
        h = zlib.crc32(s.encode("utf-8")) % buckets
        feats[h] = feats.get(h, 0.0) + 1.0

    for i, w in enumerate(ws):
        add("w:" + w)
        if i:
            add("b:" + ws[i - 1] + "_" + w)
        p = f" {w} "
        for j in range(max(1, len(p) - 3)):
            add("c:" + p[j:j + 4])
    n = math.sqrt(sum(v * v for v in feats.values())) or 1.0
    return {k: v / n for k, v in feats.items()}


def _bucket(s: str, buckets: int) -> int:
    return zlib.crc32(s.encode("utf-8")) % buckets


_BUCKET_CACHE = 50_000     # words (and word pairs) whose buckets a topic model keeps


def _accumulate(bias: list[float], weighted: list[tuple[tuple[float, ...], float]]) -> list[float]:
    """``z[c] = bias[c] + w1[c] * x1 + w2[c] * x2 + ...`` for every class, added in the order of
    ``weighted`` as the plain loop ``z[c] += w[c] * x`` adds them (Python evaluates ``a + b + c``
    as ``(a + b) + c``), eight features per pass over the classes: the word-vector columns weigh
    every class. A class a feature does not weigh gets ``+ 0.0 * x``, which leaves its sum as it
    was: the same floats, bit for bit (tests/test_learned.py)."""
    z, i, n = bias, 0, len(weighted)
    while i + 8 <= n:
        (r1, x1), (r2, x2), (r3, x3), (r4, x4), (r5, x5), (r6, x6), (r7, x7), (r8, x8) = weighted[i:i + 8]
        z = [a + b1 * x1 + b2 * x2 + b3 * x3 + b4 * x4 + b5 * x5 + b6 * x6 + b7 * x7 + b8 * x8
             for a, b1, b2, b3, b4, b5, b6, b7, b8 in zip(z, r1, r2, r3, r4, r5, r6, r7, r8)]
        i += 8
    for r, x in weighted[i:]:
        z = [a + b * x for a, b in zip(z, r)]
    return list(z)


def topic_features(text: str, buckets: int, wv: WordVectors | None) -> dict[int, float]:
    """The topic model's inputs: hashed n-grams (columns < buckets) and, when the model was
    fitted with them, the text's static word vector (columns buckets .. buckets + dims)."""
    feats = hashed(text, buckets)
    if wv is not None:
        v = wv.text_vector(text)
        if v is not None:
            for k, x in enumerate(v):
                feats[buckets + k] = DENSE_SCALE * x
    return feats


class TopicModel:
    """Slot distribution of a text (multinomial logistic regression over hashed n-grams and,
    when fitted with them, the static word vector of the text)."""

    def __init__(self, data: dict, wordvec: WordVectors | None = None):
        self.classes: list[str] = data["classes"]
        self.buckets: int = data["buckets"]
        self.bias: list[float] = data["bias"]
        # each feature's weights as the file holds them, one flat [class, weight, class,
        # weight, ...] list (version 2; weights_of() pairs them): a list of pairs per weight
        # (version 1) made parsing the file and turning the pairs into tuples most of a
        # detector's start
        raw = data["weights"]
        if data.get("version", 1) < 2:
            raw = {k: [x for pair in v for x in pair] for k, v in raw.items()}
        self.w: dict[int, list] = {int(k): v for k, v in raw.items()}
        self.wordvec = wordvec if data.get("dense_dims") else None
        self._rows: dict[int, tuple[float, ...]] = {}     # a feature's weights, one per class
        # what hashed() computes per word and per word pair, kept: most n-grams recur
        self._word_buckets: dict[str, tuple[int, ...]] = {}
        self._pair_buckets: dict[str, int] = {}

    def features(self, text: str) -> dict[int, float]:
        """``topic_features(text, self.buckets, self.wordvec)``: the same buckets in the same
        order, with each word's and word pair's buckets computed once per model (bounded caches)."""
        ws = tokens(text)
        words, pairs, buckets = self._word_buckets, self._pair_buckets, self.buckets
        if len(words) > _BUCKET_CACHE:
            words.clear()
        if len(pairs) > _BUCKET_CACHE:
            pairs.clear()
        feats: dict[int, float] = {}
        get = feats.get
        prev = None
        for w in ws:
            hs = words.get(w)
            if hs is None:
                p = f" {w} "
                hs = words[w] = (_bucket("w:" + w, buckets),
                                 *(_bucket("c:" + p[j:j + 4], buckets) for j in range(max(1, len(p) - 3))))
            h = hs[0]
            feats[h] = get(h, 0.0) + 1.0
            if prev is not None:
                b = prev + "_" + w
                h = pairs.get(b)
                if h is None:
                    h = pairs[b] = _bucket("b:" + b, buckets)
                feats[h] = get(h, 0.0) + 1.0
            for h in hs[1:]:
                feats[h] = get(h, 0.0) + 1.0
            prev = w
        n = math.sqrt(sum(v * v for v in feats.values())) or 1.0
        feats = {k: v / n for k, v in feats.items()}
        if self.wordvec is not None:
            v = self.wordvec.text_vector(text)
            if v is not None:
                for k, x in enumerate(v):
                    feats[buckets + k] = DENSE_SCALE * x
        return feats

    def weights_of(self, h: int) -> Iterable[tuple[int, float]]:
        """(class, weight) of each class feature ``h`` weighs (none when it weighs none)."""
        v = self.w.get(h)
        return zip(v[::2], v[1::2]) if v else ()

    @functools.lru_cache(maxsize=8192)
    def probs(self, text: str) -> tuple[float, ...]:
        z = _accumulate(self.bias, self._weighted(self.features(text)))
        m = max(z)
        e = [math.exp(v - m) for v in z]
        s = sum(e)
        return tuple(v / s for v in e)

    def _weighted(self, feats: dict[int, float]) -> list[tuple[tuple[float, ...], float]]:
        """(the weights of every class, value) of each feature the model weighs, in feature order."""
        rows, out = self._rows, []
        for h, x in feats.items():
            row = rows.get(h)
            if row is None:
                if h not in self.w:
                    continue
                full = [0.0] * len(self.bias)
                for c, wt in self.weights_of(h):
                    full[c] = wt
                row = rows[h] = tuple(full)
            out.append((row, x))
        return out

    def top(self, text: str) -> str:
        p = self.probs(text)
        return self.classes[max(range(len(p)), key=p.__getitem__)]


@dataclass(frozen=True)
class TextInfo:
    """What the pair model needs from one text, computed once per text."""

    probs: tuple[float, ...]
    top: str
    tops: frozenset[str]        # the two likeliest topics, "other" left out (offered as older)
    cues: frozenset[str]
    content: frozenset[str]
    values: frozenset[str]
    vec: tuple[float, ...] | None = None                     # static word vector of the text
    words: tuple[tuple[str, tuple[float, ...]], ...] = ()   # its content words' vectors
    wants: frozenset[str] = frozenset()  # topics looked for as the newer text (WANT_K, WANT_MIN)


class _ReadLater:
    """An attribute of Learned that ``load_later`` may give as a function, called on the
    attribute's first read; setting it drops that function."""

    def __set_name__(self, owner, name: str) -> None:
        self.name, self.slot = name, "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        loader = obj._later.pop(self.name, None)
        if loader is not None:
            setattr(obj, self.slot, loader())
        return getattr(obj, self.slot)

    def __set__(self, obj, value) -> None:
        obj._later.pop(self.name, None)
        setattr(obj, self.slot, value)


class Learned:
    """The topic model, the cue lexicons and the pair model weights of each mode."""

    prototypes = _ReadLater()
    cue_protos = _ReadLater()

    def __init__(self, topic: dict, pair: dict, cues: dict, groups: dict | None = None,
                 prototypes: dict | None = None, wordvec: WordVectors | None = None,
                 aspect: dict | None = None, manner: dict | None = None):
        self.wordvec = wordvec
        self.topics = TopicModel(topic, wordvec)
        # does an older text hold a lasting state or record a one-off event ("Had coffee with
        # Ana near the office in Leeds" stays true whatever changes later)? A two-class model
        # of the same form as the topic model (rules/aspect_model.json); None: not installed
        self.aspect = TopicModel(aspect, wordvec) if aspect else None
        self._episode = self.aspect.classes.index("episode") if self.aspect else -1
        # how does a newer text speak of a state: ended, switched, began, resolved; or a plan,
        # someone else's news, a restatement ... (rules/manner_model.json); None: not installed
        self.manner = TopicModel(manner, wordvec) if manner else None
        self._outdating = tuple(i for i, c in enumerate(self.manner.classes) if c in OUTDATING_MANNERS) \
            if self.manner else ()
        gate = topic.get("gate", {})
        self.top_k, self.topic_min = int(gate.get("top_k", TOP_K)), float(gate.get("topic_min", TOPIC_MIN))
        self.want_k, self.want_min = int(gate.get("want_k", WANT_K)), float(gate.get("want_min", WANT_MIN))
        # prototypes / cue_protos as load_learned() leaves them: read from their files on
        # first use (only the embeddings mode reads them; parsing them was a fifth of a
        # detector's start)
        self._later: dict[str, Callable[[], Any]] = {}
        # embeddings mode: one mean sentence vector per topic (same order as the topic model)
        self.prototypes = prototypes
        # embeddings mode: example vectors of how a text speaks of a state (semantic_features.py)
        self.cue_protos = None
        self._proto_matrix = None
        self._emb: dict[str, tuple[float, ...]] = {}
        groups = groups or {}
        self.single = frozenset(i for i, c in enumerate(self.topics.classes) if c in groups.get("single", ()))
        self.multi = frozenset(i for i, c in enumerate(self.topics.classes) if c in groups.get("multi", ()))
        # neighbouring slots (pair_cues.toml [topics] near): a newer text looking wide whose
        # likeliest topics include one of them also looks for the others (a finished degree
        # meets "Works at ..."); the pair model then weighs the pair
        self.near: dict[str, frozenset[str]] = {}
        for group in groups.get("near", ()):
            for c in group:
                self.near[c] = self.near.get(c, frozenset()) | frozenset(group)
        self._near_sets: dict[tuple[frozenset[str], frozenset[str]], frozenset[str]] = {}
        self.modes: dict[str, dict] = pair["modes"]
        self.cue_rx = {k: re.compile("|".join(f"(?:{r})" for r in v), re.I | re.M)
                       for k, v in cues.items()}
        self._info: dict[str, TextInfo] = {}
        self._topic_cache: dict[str, tuple[Sequence[float], str, frozenset[str], frozenset[str]]] = {}
        self._sets: dict[tuple[int, ...], frozenset[str]] = {}
        self._ending: dict[str, bool] = {}
        self.estimator = TopicEstimator(self.topics)
        self._batch: topic_batch.TopicBatch | None = None     # made on first use (numpy)
        self._masks: dict[tuple[int, int, int], tuple[str, frozenset[str], frozenset[str]]] = {}
        # the probabilities of the multi- and single-valued topics, picked out of a distribution
        self._multi_of = _picker(sorted(self.multi))
        self._single_of = _picker(sorted(self.single))
        # the same in the sets' own iteration order: features() adds them up in that order
        self._multi_sum_of = _picker(list(self.multi))
        self._single_sum_of = _picker(list(self.single))
        # dot products of two static word vectors, by (older word, newer word): a block's
        # pairs meet the same words again and again (_static_features)
        self._word_dots: dict[tuple[str, str], float] = {}

    def load_later(self, **loaders: Callable[[], Any]) -> None:
        """``prototypes`` / ``cue_protos`` given as functions called on their first use."""
        unknown = set(loaders) - {"prototypes", "cue_protos"}
        if unknown:
            raise TypeError(f"load_later: no such attribute {sorted(unknown)}")
        self._later.update(loaders)

    def _topics(self, text: str) -> tuple[Sequence[float], str, frozenset[str], frozenset[str]]:
        """(distribution, top topic, likeliest topics, wanted topics) of a text: all the
        candidate index needs (``topics_of``, ``wants_of``); the rest of ``info`` is read only
        for texts that meet in a pair.

        The distribution is the cheap estimate (topic_estimate.py, equal to the reference
        ``TopicModel.probs`` up to rounding); the topics are the reference's own: decided on
        the estimate where it is ``certain``, on the reference where it is not."""
        got = self._topic_cache.get(text)
        if got is None:
            if len(self._topic_cache) > TOPIC_CACHE:
                self._topic_cache.clear()
            got = self._topic_cache[text] = self._decided(text, self.estimator.probs(text))
        return got

    def prefetch(self, texts: Iterable[str]) -> None:
        """Estimate the topics of these texts (a block's, before it is walked) in one batched
        product (topic_batch.py, numpy) instead of one text at a time; ``_topics`` then finds
        them cached. The decisions are taken as ``_topics`` takes them (``_decided``: on
        the batch's probabilities where ``certain``, else on the reference), so they are the
        same. Without numpy, or for a few texts, nothing is done here."""
        cache = self._topic_cache
        todo = list(dict.fromkeys(t for t in texts if t not in cache))[:TOPIC_CACHE]
        if len(todo) < topic_batch.MIN_BATCH or not topic_batch.load():
            return
        if len(cache) + len(todo) > TOPIC_CACHE:
            cache.clear()
        if self._batch is None:
            self._batch = topic_batch.TopicBatch(self.topics)
        p = self._batch.probs(todo)
        if len(self.topics.classes) > 62:          # the decisions' bit masks hold 62 classes
            for text, row in zip(todo, p.tolist()):
                cache[text] = self._decided(text, row)
            return
        top, sure, (tops_mask, wants_mask) = self._batch.decide(
            p, ((self.top_k, self.topic_min), (self.want_k, self.want_min)))
        width = p.shape[1] * 8
        raw = memoryview(p.tobytes())
        decisions = self._masks
        for i, (text, ok, key) in enumerate(zip(todo, sure.tolist(),
                                                zip(top.tolist(), tops_mask.tolist(), wants_mask.tolist()))):
            if not ok:          # not certain: the reference decides, as in _decided
                cache[text] = self._decided(text, p[i].tolist())
                continue
            got = decisions.get(key)
            if got is None:
                got = decisions[key] = self._masked(*key)
            row = array("d")
            row.frombytes(raw[i * width:(i + 1) * width])
            cache[text] = (row, *got)

    def _masked(self, top: int, tops_mask: int, wants_mask: int) -> tuple[str, frozenset[str], frozenset[str]]:
        """(top topic, likeliest topics, wanted topics) from a class index and two bit masks
        (bit c: class c), as ``_decided`` names them."""
        n = len(self.topics.classes)
        return self._decision(top, tuple(c for c in range(n) if tops_mask >> c & 1),
                              tuple(c for c in range(n) if wants_mask >> c & 1))

    def _decision(self, top: int, tops: tuple[int, ...], wants: tuple[int, ...]
                  ) -> tuple[str, frozenset[str], frozenset[str]]:
        """(top topic, likeliest topics, wanted topics) named from class indexes, the wanted
        ones widened by their neighbouring slots (``near``) when there are likeliest ones."""
        named_tops, named_wants = self._named(tops), self._named(wants)
        if self.near and named_tops:
            named_wants = self._with_near(named_wants, named_tops)
        return self.topics.classes[top], named_tops, named_wants

    def _decided(self, text: str, p: Sequence[float]) -> tuple[Sequence[float], str, frozenset[str], frozenset[str]]:
        """``_topics`` of a text from estimated probabilities ``p``: decided on them where
        ``certain``, else on the reference."""
        # likeliest first; ties keep class order, as sorted(key=lambda i: -p[i]) leaves them
        order = sorted(range(len(p)), key=p.__getitem__, reverse=True)
        if not certain(p, order, ((self.top_k, self.topic_min), (self.want_k, self.want_min))):
            p = self.topics.probs(text)
            order = sorted(range(len(p)), key=p.__getitem__, reverse=True)
        decision = self._decision(order[0], tuple(i for i in order[:self.top_k] if p[i] >= self.topic_min),
                                  tuple(i for i in order[:self.want_k] if p[i] >= self.want_min))
        # kept as C doubles (the same floats): 34 float objects would take 3x the memory
        return (array("d", p), *decision)

    def _named(self, idx: tuple[int, ...]) -> frozenset[str]:
        """The topics of these class indexes, "other" left out (one set object per distinct set)."""
        got = self._sets.get(idx)
        if got is None:
            got = self._sets[idx] = frozenset(self.topics.classes[i] for i in idx) - {"other"}
        return got

    def _with_near(self, wants: frozenset[str], tops: frozenset[str]) -> frozenset[str]:
        """``wants`` and the neighbouring slots of ``tops`` (a text's likeliest topics: a
        text with no likely slot, small talk, gets no neighbours), one set object per
        distinct set."""
        got = self._near_sets.get((wants, tops))
        if got is None:
            got = self._near_sets[(wants, tops)] = wants.union(*(self.near.get(t, ()) for t in tops))
        return got

    def info(self, text: str) -> TextInfo:
        ti = self._info.get(text)
        if ti is None:
            if len(self._info) > 4096:     # an entry holds its words' vectors (~2 KB each)
                self._info.clear()
            _, top, tops, wants = self._topics(text)
            p = self.topics.probs(text)          # the pair features read the reference
            cues = frozenset(k for k, rx in self.cue_rx.items() if rx.search(text))
            ws = tokens(text)
            content = frozenset(_stem(w) for w in ws if w not in _STOP and len(w) > 2)
            vals = {m.lower() for m in _CAP.findall(text) if m.lower() not in _STOP}
            vals |= {re.sub(r"\D", "", v) if v[0].isdigit() or v[0] == "+" else v.lower()
                     for v in _VALUEISH.findall(text)}
            vals |= {str(_NUMWORDS[w]) for w in ws if w in _NUMWORDS}
            wv = self.wordvec
            ti = self._info[text] = TextInfo(
                p, top, tops, cues, content, frozenset(vals),
                wv.text_vector(text) if wv else None, tuple(wv.word_vectors(text)) if wv else (),
                wants)
        return ti

    @staticmethod
    def old_text(text: str, key: str | None) -> str:
        """What the topic model reads of an older fact: its key (when it means something) and text."""
        return f"{key.replace('_', ' ')}: {text}" if key else text

    def topics_of(self, text: str, key: str | None = None) -> frozenset[str]:
        """The likeliest topics of a fact: the candidate-index terms it offers as the older fact."""
        return self._topics(self.old_text(text, key))[2]

    def wants_of(self, text: str, wide: bool = True) -> frozenset[str]:
        """The topics a fact looks for as the newer fact (its text alone, as ``related`` reads
        the newer text). ``wide`` (the rules read no slot in it: what it is about is only the
        topic model's guess): its WANT_K likeliest at least WANT_MIN likely, so a casual text
        whose slot is only the third guess still meets the older facts on that slot; else
        the topics it offers."""
        got = self._topics(text)
        return got[3] if wide else got[2]

    @staticmethod
    def related(feats: dict[str, float]) -> bool:
        """The gate: only pairs where a topic the newer text wants (``wants_of``: wide or
        not, as the features were built) is one the older text offers (``topics_of``), or
        the newer names the older's person, place or thing (``lex_link``: Detector.linked,
        "since Harold passed" after "Husband is Harold", whatever the topic model reads), or
        similar enough, and not an addition to a multi-valued topic, are scored.

        In the rules mode a wanted topic the older text offers, or a name, is the only way
        in: these are the candidate-index terms of the block walk (blocks.py), so the walk
        meets the pairs this gate lets through (the newest few holders of each). The static word vectors weigh a pair (features) but never open the gate: a
        similarity threshold would relate pairs the index never proposes, which an audit
        would then miss while comparing every pair found them."""
        near = (feats.get("t_want", 0.0) > 0
                or feats.get("lex_link", 0.0) > 0
                or max(feats.get("sim", 0.0), feats.get("s_csim", 0.0)) >= SIM_GATE
                or feats.get("e_same", 0.0) > 0)
        # on a multi-valued topic (languages, foods, hobbies) a new value is an addition unless
        # the newer text ends something
        additive = (feats.get("t_multi", 0.0) > feats.get("t_single", 0.0)
                    and feats.get("e_multi", 0.0) >= feats.get("e_single", 0.0)
                    and "n_ending" not in feats)
        return near and not additive

    def may_relate(self, new_text: str, old_text: str, old_key: str | None, wide: bool = True,
                   linked: bool = False) -> bool:
        """``related(features(...))`` of a rules-mode pair (no similarity, no embeddings),
        without building the features: most pairs a block meets fail the gate, and the
        features cost a pass over every topic. Keep it in step with ``related``
        (tests/test_learned.py compares the two on many pairs).

        Reads only what the candidate index read (``_topics``; ``linked``: the newer text
        names the older's person, place or thing) and the newer text's ending cue: a pair turned away reads nothing more
        of either text. The sums over the multi-
        and single-valued topics are compared on the estimated distributions unless they come
        within MARGIN of each other, and then on the reference ones."""
        pn, _, n_tops, n_wants = self._topics(new_text)
        old = self.old_text(old_text, old_key)
        po, _, o_tops, _ = self._topics(old)
        if not linked and not (n_wants if wide else n_tops) & o_tops:
            return False
        if self._ends(new_text):
            return True
        multi = sum(map(min, self._multi_of(pn), self._multi_of(po)))
        single = sum(map(min, self._single_of(pn), self._single_of(po)))
        if abs(multi - single) <= MARGIN:
            pairs_min = list(map(min, self.topics.probs(new_text), self.topics.probs(old)))
            multi, single = sum(pairs_min[i] for i in self.multi), sum(pairs_min[i] for i in self.single)
        return not multi > single

    def _ends(self, text: str) -> bool:
        """``"ending" in info(text).cues``, without the rest of ``info``."""
        ti = self._info.get(text)
        if ti is not None:
            return "ending" in ti.cues
        got = self._ending.get(text)
        if got is None:
            if len(self._ending) > TOPIC_CACHE:
                self._ending.clear()
            rx = self.cue_rx.get("ending")
            got = self._ending[text] = bool(rx is not None and rx.search(text))
        return got

    def emb_probs(self, text: str, vector) -> tuple[float, ...] | None:
        """Topic distribution of an embedded text: softmax over its cosine to each prototype
        (cached by text)."""
        if self.prototypes is None or vector is None:
            return None
        got = self._emb.get(text)
        if got is None:
            if self._proto_matrix is None:
                import numpy as np          # the embeddings mode has it (sentence-transformers)
                self._proto_matrix = np.asarray(self.prototypes["vectors"], dtype="float32")
            z = (self._proto_matrix @ vector) * float(self.prototypes["scale"])
            z = [float(x) for x in z]
            m = max(z)
            e = [math.exp(v - m) for v in z]
            t = sum(e)
            got = tuple(v / t for v in e)
            if len(self._emb) > 16384:
                self._emb.clear()
            self._emb[text] = got
        return got

    def features(self, new_text: str, old_text: str, old_key: str | None,
                 rule: str, rule_conf: float, confirmed: bool,
                 sim: float | None = None, emb: tuple | None = None,
                 names: frozenset[str] = frozenset(), wide: bool = True,
                 linked: bool = False) -> dict[str, float]:
        """The pair features (names -> values) the pair model weighs. ``names``: words naming
        the subject ("tomasz"), never a value ("Tomasz's side project" names no new value)."""
        n = self.info(new_text)
        old = self.old_text(old_text, old_key)
        o = self.info(old)
        f: dict[str, float] = {"r_" + rule: 1.0, "r_conf": rule_conf,
                               "r_confirmed": float(confirmed)}
        other = self.topics.classes.index("other") if "other" in self.topics.classes else -1
        dot = sum(map(mul, n.probs, o.probs))
        pairs_min = list(map(min, n.probs, o.probs))
        # every sum adds the same terms in the same order as a loop over the indexes would
        mn = sum(pairs_min[:other] + pairs_min[other + 1:]) if other >= 0 else sum(pairs_min)
        same = n.top == o.top and n.top != "other"
        single = sum(self._single_sum_of(pairs_min))
        multi = sum(self._multi_sum_of(pairs_min))
        f.update(t_single=single, t_multi=multi, t_top2=float(bool(n.tops & o.tops)),
                 t_want=float(bool((n.wants if wide else n.tops) & o.tops)))
        f.update(t_dot=dot, t_min=mn, t_same=float(same),
                 t_new_other=n.probs[other] if other >= 0 else 0.0,
                 t_old_other=o.probs[other] if other >= 0 else 0.0)
        for c in n.cues:
            f["n_" + c] = 1.0
            f[f"n_{c}*t_min"] = mn
            f[f"n_{c}*t_single"] = single
            f[f"n_{c}*t_multi"] = multi
        for c in o.cues:
            f["o_" + c] = 1.0
        shared = n.content & o.content
        union = n.content | o.content
        f["lex_jacc"] = len(shared) / len(union) if union else 0.0
        f["lex_shared"] = min(len(shared), 3) / 3.0
        f["lex_none"] = float(not shared)
        if linked:              # a name of the older text in the newer (Detector.linked, rules mode)
            f["lex_link"] = 1.0
            if not f["t_want"]:  # ... and no topic in common: the name is the only link
                f["lex_link_only"] = 1.0
                f["lex_link_only*t_min"] = mn
        n_values, o_values = without_names(n.values, names), without_names(o.values, names)
        nv, ov = n_values - o_values, o_values - n_values
        f["val_new"] = float(bool(nv))
        f["val_same"] = float(bool(n_values & o_values))
        f["val_diff"] = float(bool(nv) and bool(ov))
        f["val_diff*t_min"] = mn * f["val_diff"]
        f["val_new*t_min"] = mn * f["val_new"]
        f["val_diff*t_single"] = single * f["val_diff"]
        f["val_new*t_single"] = single * f["val_new"]
        f["val_new*t_multi"] = multi * f["val_new"]
        f["old_key"] = float(bool(old_key))
        if self.aspect is not None:
            ep = self.episode(old)
            f["o_episode"] = ep
            f["o_episode*t_single"], f["o_episode*t_min"] = ep * single, ep * mn
            f["o_episode*val_new"], f["o_episode*val_diff"] = ep * f["val_new"], ep * f["val_diff"]
            for c in ("change", "ending", "start"):
                if c in n.cues:
                    f[f"o_episode*n_{c}"] = ep
        if self.manner is not None:
            pm = self.manner.probs(new_text)
            for c, x in zip(self.manner.classes, pm):
                f["m_" + c] = x
            out = sum(pm[i] for i in self._outdating)
            f["m_out"], f["m_out*t_single"], f["m_out*t_min"] = out, out * single, out * mn
            f["m_out*val_new"], f["m_out*t_multi"] = out * f["val_new"], out * multi
            if self.aspect is not None:
                f["m_out*o_episode"] = out * f["o_episode"]
        if n.vec is not None and o.vec is not None and sim is None:
            # (the embeddings mode weighs MiniLM itself: the static vectors distilled from it
            # added nothing there but noise, measured with the mode's grouped CV)
            if len(self._word_dots) > WORD_DOTS_MAX:
                self._word_dots.clear()
            f.update(_static_features(n, o, mn, single, self._word_dots))
        if sim is not None:
            f["sim"] = sim
            f["sim2"] = sim * sim
            for c in ("change", "ending", "start", "hedge", "other_person", "still"):
                if c in n.cues:
                    f[f"sim*n_{c}"] = sim
            f["sim*val_diff"] = sim * f["val_diff"]
            f["sim*t_min"] = sim * mn
        if emb is not None and emb[0] is not None and emb[1] is not None:
            en, eo = emb
            classes = self.topics.classes
            emn = [min(a, b) for a, b in zip(en, eo)]
            e_single = sum(emn[i] for i in self.single)
            e_multi = sum(emn[i] for i in self.multi)
            ni = max(range(len(en)), key=en.__getitem__)
            oi = max(range(len(eo)), key=eo.__getitem__)
            f.update(e_min=sum(x for i, x in enumerate(emn) if classes[i] != "other"),
                     e_single=e_single, e_multi=e_multi,
                     e_same=float(ni == oi and classes[ni] != "other"),
                     e_new_other=en[classes.index("other")] if "other" in classes else 0.0)
            for c in ("change", "ending", "start", "hedge", "other_person", "still", "addition"):
                if c in n.cues:
                    f[f"n_{c}*e_single"] = e_single
                    f[f"n_{c}*e_multi"] = e_multi
            f["val_diff*e_single"] = e_single * f["val_diff"]
            f["val_new*e_single"] = e_single * f["val_new"]
        return f

    def episode(self, text: str) -> float:
        """How likely a text records a one-off event rather than a lasting state (0 without
        the aspect model)."""
        return self.aspect.probs(text)[self._episode] if self.aspect is not None else 0.0

    def score(self, mode: str, feats: dict[str, float]) -> float:
        m = self.modes[mode]
        w = m["weights"]
        z = m["bias"] + sum(map(mul, map(w.get, feats, repeat(0.0)), feats.values()))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def threshold(self, mode: str) -> float:
        return float(self.modes[mode]["threshold"])


def _picker(idx: list[int]):
    """A function giving the items at ``idx`` of a sequence, as a tuple."""
    if len(idx) == 1:
        return lambda seq: (seq[idx[0]],)
    return itemgetter(*idx) if idx else (lambda seq: ())


def without_names(values: frozenset[str], names: frozenset[str]) -> frozenset[str]:
    """``values`` without the words naming the subject (possessives too: "tomasz's")."""
    if not names:
        return values
    return frozenset(v for v in values if v.split("'")[0] not in names)


def _static_features(n: TextInfo, o: TextInfo, t_min: float, t_single: float,
                     dots: dict[tuple[str, str], float]) -> dict[str, float]:
    """Pair features from the static word vectors: how close the two texts are, how much of the
    older text the newer one covers with the same or related words, and whether a word of the
    older text meets a related but different word (same kind, another value: Boston ->
    Providence, iPhone -> Pixel). ``dots``: word-pair dot products computed before, by
    (older word, newer word); a word's vector depends on the word alone."""
    ws = sum(map(mul, n.vec, o.vec))
    f = {"w_sim": ws, "w_sim2": ws * ws, "w_sim*t_min": ws * t_min, "w_sim*t_single": ws * t_single}
    best, near, exact = [], 0.0, 0
    new_words = {w for w, _ in n.words}
    for w, v in o.words:
        if w in new_words:
            exact += 1
            best.append(1.0)
            continue
        m = 0.0 if not n.words else None
        for w2, u in n.words:
            d = dots.get((w, w2))
            if d is None:
                d = dots[(w, w2)] = sum(map(mul, v, u))
            if m is None or d > m:
                m = d
        best.append(m)
        near = max(near, m)
    if best:
        f["w_cover"] = sum(best) / len(best)
        f["w_exact"] = exact / len(best)
    f["w_near"] = near
    for c in ("change", "ending", "start", "hedge", "other_person", "still", "past_habit", "temporary"):
        if c in n.cues:
            f[f"n_{c}*w_sim"] = ws
            f[f"n_{c}*w_near"] = near
    return f


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def _rules_file(name: str):
    return resources.files("memwatch_overlay.rules").joinpath(name)


def _optional_json(name: str) -> dict | None:
    """A shipped model file of rules/, None when it is not installed."""
    try:
        return json.loads(_rules_file(name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def load_cues(path: str | Path | None = None) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The cue lexicons and the single/multi-valued topic groups of rules/pair_cues.toml."""
    src = Path(path) if path else _rules_file("pair_cues.toml")
    data = tomllib.loads(src.read_text(encoding="utf-8"))
    return data["cues"], data.get("topics", {})


# One file per mode, so the two modes are refitted (and edited) independently.
PAIR_MODEL_FILES = {"rules": "pair_model.json", "embeddings": "pair_model_embeddings.json"}


def load_pair_modes(paths: dict[str, str | Path] | None = None) -> dict[str, dict]:
    """mode -> weights, from each mode's file (a mode whose file is missing is left out)."""
    modes: dict[str, dict] = {}
    for mode, name in PAIR_MODEL_FILES.items():
        src = Path(paths[mode]) if paths and mode in paths else _rules_file(name)
        try:
            data = json.loads(src.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        if mode in data.get("modes", {}):
            modes[mode] = data["modes"][mode]
    return modes


@functools.lru_cache(maxsize=4)
def load_learned(topic_path: str | None = None, pair_path: str | None = None,
                 embeddings_pair_path: str | None = None) -> Learned | None:
    """The shipped models (None when the topic model or the rules-mode weights are not installed)."""
    try:
        t = Path(topic_path) if topic_path else _rules_file("topic_model.json")
        topic = json.loads(t.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    paths = {k: v for k, v in (("rules", pair_path), ("embeddings", embeddings_pair_path)) if v}
    modes = load_pair_modes(paths)
    if "rules" not in modes:
        return None
    pair = {"modes": modes}
    learned = Learned(topic, pair, *load_cues(), wordvec=load_word_vectors(),
                      aspect=_optional_json("aspect_model.json"), manner=_optional_json("manner_model.json"))
    learned.load_later(prototypes=lambda: _optional_json("topic_prototypes.json"), cue_protos=_cue_prototypes)
    return learned


def _cue_prototypes():
    """rules/cue_prototypes.json read (None when not installed)."""
    cue = _optional_json("cue_prototypes.json")
    if cue is None:
        return None
    from memwatch_overlay.overlay.detect.semantic_features import CuePrototypes
    return CuePrototypes(cue)
