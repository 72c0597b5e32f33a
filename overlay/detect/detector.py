"""Contradiction detection: does a newer fact outdate an older one about the same subject?

The detector is a cascade, cheapest first:

  value     both facts carry the same store key (``employer``) or the same slot read from
            their text (city, diet, partner ...) and the values differ: the newer wins.
            Equal values are a confirmation (a re-learn), not a contradiction.
  cue       the newer text ends what the older said: a slot's end pattern ("handed in my
            notice at Deloitte", "my uni email was deactivated") or a generic transition cue
            ("no longer", "sold", "smoke-free") whose scope mentions the older fact's salient
            words.
  semantic  the learned pair model (learned.py) on pairs the rules left open; optional
            (``embedder``): same-topic facts by embedding similarity whose slot values differ
            or whose newer text carries a change cue, and (``pair_encoder``) the fine-tuned
            MiniLM cross-encoder reading both texts together (pair_encoder.py).
  judge     optional (``judge``): an LLM critic confirms or rejects semantic candidates.

Rules live in a slot pack (``rules/slots.toml``); nothing here knows English. The detector
is pure: the sync engine gives it one changed fact and the facts of the same block
(subject + category) and persists what comes back; ``comparisons`` counts pairs examined so
tests can check that work stays O(block).

Example:
    >>> d = Detector()
    >>> old = FactView("s:t:1", "u1", None, "Works at Google", "employment", 0.0)
    >>> new = FactView("s:t:2", "u1", None, "I just joined Stripe.", "employment", 86400.0)
    >>> [c.older for c in d.compare(new, [old])]
    ['s:t:1']
"""
from __future__ import annotations

import functools
import re
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Iterable, Mapping, Protocol, Sequence

from memwatch_overlay.rules.config import DEFAULT_MAX_TEXT_CHARS
from memwatch_overlay.overlay.detect import topic_batch
from memwatch_overlay.overlay.detect.learned import SIM_GATE, Learned, load_learned
from memwatch_overlay.overlay.detect.pack import Pack, SlotDef, load_pack
from memwatch_overlay.overlay.detect.pair_encoder import older_input
from memwatch_overlay.overlay.detect.semantic_features import clauses
from memwatch_overlay.overlay.detect.semantic_features import pair_features as semantic_pair_features
from memwatch_overlay.overlay.detect.slots import (
    Extractor,
    Reading,
    Slot,
    digits,
    infer_category,
    named_forms,
    normalize,
    norm_value,
    stem,
    to_number,
)

DEFAULT_SEMANTIC_THRESHOLD = 0.6
_NAME_PARTS = re.compile(r"[\W_]+")
_CAPITALISED = re.compile(r"\b[A-Z][a-z\u00C0-\u024F]+")      # a word that could be a name (_against)
_WORDS = re.compile(r"[\w][\w'-]*")
_MAX_KEY_VALUE_WORDS = 4
_ONE_VALUE = ("single", "number", "progress")     # slot modes where a store key holds one value at a time
_VALUE_TEXT = re.compile(r"[\w][\w .,&'@+/-]*")    # what a key-value memory's value looks like
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\d.])")     # "92kg", "Is 29"
# Slot modes whose older reading may be outdated whatever its kind; in the others only an
# assertion can be (an ending, "handed in my notice", holds no value a newer fact replaces).
_ANY_KIND_OUTDATED = ("polar", "number")
DEFAULT_CACHE_SIZE = 16384      # readings kept: a daemon walks a changed subject's block again
KEY_VALUE_CONFIDENCE = 0.9
OVERTAKEN_CONFIDENCE = 0.7   # a pursuit overtaken by its outcome (_overtaken)
_UNSCORED = object()
_DAY = 86400.0


# (never changed once made, but not frozen=True, for speed: see slots.Slot)
@dataclass(unsafe_hash=True)
class FactView:
    """What the detector sees of one fact."""

    ref: str                 # "source:table:pk", unique
    subject: str | None      # user / namespace / entity
    key: str | None          # the store's key for the fact, if any ("employer")
    text: str
    category: str            # employment|location|contact|...|general
    learned_at: float        # epoch seconds (UTC); newer contradicts older


@dataclass(unsafe_hash=True)
class Contradiction:
    """The newer fact ``newer`` outdates the older fact ``older``."""

    older: str
    newer: str
    kind: str                # "value" | "cue" | "semantic" | "judge" (core/vocab.ContradictionKind)
    confidence: float        # 0..1
    evidence: str            # short human-readable why
    update: dict | None = None   # {"action", "key", "old_value", "new_value"}


class Embedder(Protocol):
    model_name: str

    def similarities(self, text: str, others: list[str]) -> list[float]: ...


class PairScorer(Protocol):
    threshold: float

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


class Judge(Protocol):
    def verdict(self, older: str, newer: str) -> tuple[bool, float, str] | None: ...


_YEAR = re.compile(r"(?:19|20)\d\d")


@dataclass
class _Verdict:
    conflicts: list[Contradiction] = field(default_factory=list)
    confirmed: bool = False
    # the newer fact ends another value of a slot the older one holds ("handed in my notice
    # at Google" after "employer: Shopify"): the rules read that it leaves this one as it is
    ends_other: bool = False
    # each fact holds slots of its own ("moved to Surabaya" / "email is ...") and whatever the
    # newer one ends is one of its own: the rules read two different things, not a change
    elsewhere: bool = False
    # what the rules read as a change here is someone else's news, by their name ("Marco has
    # gone vegan and I'm the only one eating cheese": Detector._against); no layer weighs it
    someone_else: bool = False


class Detector:
    """Compares a newer fact with older facts of its block; see the module docstring."""

    def __init__(self, pack: Pack | str | None = None, embedder: Embedder | None = None,
                 judge: Judge | None = None,
                 semantic_threshold: float = DEFAULT_SEMANTIC_THRESHOLD,
                 min_confidence: float = 0.0, cache_size: int = DEFAULT_CACHE_SIZE,
                 prefilter: bool = True, learned: Learned | bool | None = True,
                 pair_encoder: PairScorer | None = None):
        self.pack = pack if isinstance(pack, Pack) else load_pack(pack)
        # the learned pair model (learned.py): True = the shipped weights, False/None = rules only
        self.learned = load_learned() if learned is True else (learned or None)
        self.extractor = Extractor(self.pack, prefilter=prefilter)   # False: the plain reference
        self.embedder = embedder
        self.judge = judge
        self.pair_encoder = pair_encoder      # pair_encoder.py: the embeddings mode's cross-encoder
        self.encoder_gate = False             # True: it reads only pairs the learned gate relates (_encoder_gate)
        self.semantic_threshold = semantic_threshold
        self.min_confidence = min_confidence
        self.comparisons = 0
        self.confirmed: list[str] = []   # refs the last compare() found restated by the newer fact
        self._cache: OrderedDict[tuple[str, str, str], Reading] = OrderedDict()
        self._terms: OrderedDict[tuple[str, str, str], tuple[frozenset, frozenset]] = OrderedDict()
        self._cache_size = cache_size
        self._texts: dict[str, Reading] = {}     # text -> its reading for no subject in particular
        self._others: dict[tuple, Reading] = {}  # _against(): newer texts read for others' names
        # _gate_key(newer, older) -> the pair model's probability (rules mode)
        self._pair_scores: dict[tuple[str, str, str | None, bool, bool], float | None] = {}   # see _gate_key
        self._wide_of: tuple[FactView | None, bool] = (None, False)
        self._links: dict[tuple[str, str], tuple[frozenset[str], frozenset[str]]] = {}   # _link_forms

    # ------------------------------------------------------------ public API
    def compare(self, newer: FactView, olders: Iterable[FactView],
                readings: Mapping[str, Reading] | None = None) -> list[Contradiction]:
        """Contradictions of ``olders`` by ``newer`` (at most one per older fact).

        ``readings`` (by ref) holds facts already read, as ``read`` would read them: a
        block pass reads every fact of a block once and compares with those readings.
        """
        read = self.read if readings is None else (lambda f: readings[f.ref])
        nr = read(newer)
        out: list[Contradiction] = []
        undecided: list[FactView] = []
        self.confirmed = []
        pairs = []
        for old in olders:
            if old.ref == newer.ref or old.learned_at > newer.learned_at:
                continue
            self.comparisons += 1
            orr = read(old)
            if nr.entity and orr.entity and nr.entity != orr.entity:
                continue                # the texts are about two different named people
            pairs.append((old, self._pair_against(newer, nr, old, orr)))
        sims = self._sims(newer, [o for o, _ in pairs])
        unread: list[tuple[FactView, tuple | None]] = []      # open to the pair encoder: (fact, sim)
        for (old, v), sim in zip(pairs, sims):
            best = _best(v.conflicts)
            # the learned layers weigh open pairs, but not one the store keys settle
            weighed = _open(v) and not self._settled_by_keys(newer, old)
            if weighed and self.learned is not None:
                best = self._learned(newer, old, v, sim)
            if best is not None:
                out.append(best)
            elif v.confirmed:
                self.confirmed.append(old.ref)
            else:
                undecided.append(old)
                if weighed:
                    unread.append((old, sim))
        if out and self.pair_encoder is not None and self.embedder is not None and self.pair_encoder.veto:
            out = self._vetoed(newer, out, {o.ref: o for o, _ in pairs})
        if unread and self.pair_encoder is not None and self.embedder is not None:
            found = self._encoded(newer, unread)
            out.extend(found)
            done = {c.older for c in found}
            undecided = [o for o in undecided if o.ref not in done]
        if len(undecided) > 1 and self.judge is not None and hasattr(self.judge, "prefetch"):
            # one request for the pairs the judge will be asked about below, not one each
            self.judge.prefetch((o.text, newer.text) for o in self._for_judge(newer, nr, undecided, read))
        if undecided and self.embedder is not None:
            out.extend(self._semantic(newer, nr, undecided))
        elif undecided and self.judge is not None:
            out.extend(self._judged(newer, nr, undecided))
        return [c for c in out if c.confidence >= self.min_confidence]

    def _for_judge(self, newer: FactView, nr: Reading, undecided: list[FactView], read) -> list[FactView]:
        """The undecided facts the judge gets asked about (_semantic, _judged): similar
        enough to the newer text with embeddings, else sharing a slot or a salient word."""
        if self.embedder is not None:
            sims = self.embedder.similarities(self.embedding_text(newer),
                                              [self.embedding_text(o) for o in undecided])
            return [o for o, s in zip(undecided, sims) if s >= self.semantic_threshold]
        names = {s.name for s in nr.slots}
        out = []
        for old in undecided:
            orr = read(old)
            if names & {s.name for s in orr.slots} or any(
                    _stem_match(a, b) for a in orr.anchors for b in nr.anchors):
                out.append(old)
        return out
    def pair_features(self, newer: FactView, olders: list[FactView]) -> list[dict[str, float]]:
        """The learned pair model's features for each (older, newer) pair (for training)."""
        nr = self.read(newer)
        vs = [self._pair_against(newer, nr, o, self.read(o)) for o in olders]
        sims = self._sims(newer, olders)
        return [self._features(newer, o, v, s) for o, v, s in zip(olders, vs, sims)]

    def learned_terms(self, fact: FactView) -> tuple[set[tuple], set[tuple]]:
        """Candidate-index terms of the learned layer, (offers, wants): the topics the fact
        offers as the older fact (its likeliest, its key read with its text) and the wider
        set it looks for as the newer one (its text alone); the names it offers
        (``link_words``) and the words it looks for them with (its anchors). A pair meets
        on them exactly when the learned gate (Learned.may_relate / related) lets it through."""
        if self.learned is None:
            return set(), set()
        text = self._capped(fact.text)
        # a name links two facts too (``linked``), by the five-letter forms of the words
        names, anchors = self._link_forms(fact)
        return ({("topic", t) for t in self.learned.topics_of(text, self._own_key(fact))} | {("link", a) for a in names},
                {("topic", t) for t in self.learned.wants_of(text, self._looks_wide(fact))}
                | {("link", a) for a in anchors})

    def prefetch_topics(self, facts: Iterable[FactView]) -> None:
        """Let the learned layer estimate, in one batch, the topics ``learned_terms`` will
        ask for of these facts (a block's, known before its walk): each one's text with its
        key (as the older fact) and its text alone (as the newer one)."""
        if self.learned is None:
            return
        distinct = dict.fromkeys((self._capped(f.text), f.key) for f in facts)
        if 2 * len(distinct) < topic_batch.MIN_BATCH:
            return                  # too few texts to batch (restated memories: often)
        texts = []
        for text, key in distinct:
            texts.append(self.learned.old_text(text, self._meaningful(key)))
            texts.append(text)
        self.learned.prefetch(texts)

    def _looks_wide(self, fact: FactView) -> bool:
        """Whether the learned layer lets ``fact``, as the newer fact, look for its wider set
        of topics (Learned.wants_of): only when the rules read no slot in it. Where they
        read one ("new e-mail is ..."), what it is about is known, and a second guess of the
        topic model (employer) would only meet facts it has nothing to do with."""
        last = self._wide_of
        if last[0] is fact:         # compare() asks once per older fact about the same newer one
            return last[1]
        wide = not self.read(fact).slots
        self._wide_of = (fact, wide)
        return wide

    def confirms(self, newer: FactView, older: FactView) -> bool:
        """True when ``newer`` restates ``older`` (same slot value, or same key and value)."""
        v = self._pair_against(newer, self.read(newer), older, self.read(older))
        return v.confirmed and not v.conflicts

    def extract(self, text: str, category: str | None = None) -> list[Slot]:
        """Slot values read from free text (optionally only one category's slots)."""
        return self.extractor.slots(normalize(text), category=category)

    def category_of(self, text: str) -> str | None:
        """The category the pack reads in ``text``, or None."""
        return infer_category(text, self.pack)

    # Characters of a text the slots read ([limits] max_text_chars; make_detector sets it):
    # a megabyte-long memory is read by its beginning, in bounded time.
    max_text_chars = DEFAULT_MAX_TEXT_CHARS
    # set by make_detector (blocks.py): how a worker process builds the same detector (None:
    # this one cannot be rebuilt there, its blocks are walked here) and `[detector] workers`
    spawn_spec: dict | None = None
    workers: int | None = None

    def _capped(self, text: str | None) -> str:
        """`text` as the learned layer and the slots read it: its first max_text_chars."""
        return (text or "")[:self.max_text_chars]

    def encoder_input(self, new: FactView, old: FactView) -> tuple[str, str]:
        """The two texts the pair encoder reads for (older ``old``, newer ``new``): the older
        with its store key when the key names something, both capped as the slots read them.
        The training and measuring tools build their pairs with this too."""
        return older_input(self._own_key(old), self._capped(old.text)), self._capped(new.text)

    def read(self, fact: FactView) -> Reading:
        """Slots, cues and anchors of one fact (cached by text, subject and key).

        Two things the text alone does not say are added here: a store key that names a
        slot (``key = employer``, ``text = Google``) makes the text that slot's value, and
        the subject's own name (``u_alice``: "Coffee for Alice is always black") is never a
        salient word (anchor) nor in a cue's scope: a name links facts about one person,
        not a cue to the thing it ends. (Other names stay: "Biscuit is no longer with us"
        must still end "adopted a beagle named Biscuit".)
        """
        text = (fact.text or "")[:self.max_text_chars]
        ck = (text, fact.subject or "", fact.key or "")
        r = self._cache.get(ck)
        if r is None:
            r = self._text_reading(text, subject_words(fact.subject))
            keyed = self._key_slot(fact, r)
            if keyed is not None:
                r = replace(r, slots=r.slots + (keyed,))
            self._cache[ck] = r
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(ck)
        return r

    def _text_reading(self, text: str, words: frozenset[str]) -> Reading:
        """The extractor's reading of ``text`` for a subject named ``words``: read once per
        text and shared by every subject whose name it does not mention (the same memory
        of many users is extracted once); read for the subject itself where it does."""
        base = self._texts.get(text)
        if base is None:
            base = self.extractor.read(text)
            if len(self._texts) >= self._cache_size:
                self._texts.clear()
            self._texts[text] = base
        if not words or not _may_name(base.text, words) or not (
                self.extractor.names_a_word(base.text, words) or _names_in(base, words)):
            return base
        return _without_names(self.extractor.read(text, words), words)

    def _pair_against(self, newer: FactView, nr: Reading, old: FactView, orr: Reading) -> _Verdict:
        """``_pair`` with the newer text read against the older fact (``_against``); a change
        the rules read only when someone's named news is taken for the user's is someone else's."""
        if not nr.names_someone:
            return self._pair(newer, nr, old, orr)
        nx = self._against(newer, nr, orr)
        v = self._pair(newer, nx, old, orr)
        if nx is not nr and not v.conflicts and self._pair(newer, nr, old, orr).conflicts:
            v.someone_else = True
        return v

    def _against(self, newer: FactView, nr: Reading, orr: Reading) -> Reading:
        """How ``newer`` reads against an older fact when a clause of it opens with someone's
        name and verb (``Reading.names_someone``): that clause is the person's news ("Helen
        handed in her notice", "Clemence just got hired at Thales") unless the older fact
        names them too ("Husband is Harold" / "Harold passed away in March"; "a beagle named
        Biscuit" / "Biscuit is no longer with us"). Cached by the names the older fact shares."""
        names = self._capitalised(nr.text)
        known = frozenset(w for w in names if w in self._words_of(orr.text)) if names else frozenset()
        ck = (newer.text or "", newer.subject or "", newer.key or "", known)
        r = self._others.get(ck)
        if r is None:
            words = subject_words(newer.subject)
            r = self.extractor.read(self._capped(newer.text), words, names_others=True, known=known)
            if words:
                r = _without_names(r, words)
            keyed = self._key_slot(newer, r)
            if keyed is not None:
                r = replace(r, slots=r.slots + (keyed,))
            if len(self._others) >= self._cache_size:
                self._others.clear()
            self._others[ck] = r
        return r

    @staticmethod
    def _capitalised(text: str) -> frozenset[str]:
        return frozenset(m.group(0).lower() for m in _CAPITALISED.finditer(text))

    @staticmethod
    def _words_of(text: str) -> frozenset[str]:
        return frozenset(w.lower().removesuffix("'s") for w in _WORDS.findall(text))

    def _key_slot(self, fact: FactView, r: Reading) -> Slot | None:
        """The slot a fact's store key names, holding the fact's text as its value, when the
        text does not already say something about that slot (a key-value memory)."""
        sd = self.pack.slot_for_key(fact.key) if fact.key else None
        if sd is None or sd.mode not in _ONE_VALUE or not r.text:
            return None
        if any(s.name == sd.name for s in r.slots):
            return None
        value = norm_value(r.text)
        if not value or len(value.split()) > _MAX_KEY_VALUE_WORDS or not _VALUE_TEXT.fullmatch(value):
            return None             # a sentence (or markup) under a key is read as text
        if any(rx.search(value) for rx in sd.reject):
            return None
        if sd.value == "number":        # "Is 29", "about 70 kg": the one number it holds
            numbers = _NUMBER.findall(value)
            if len(numbers) != 1:
                return None
            value = f"{float(numbers[0]):g}"
        return Slot(name=sd.name, category=sd.category, mode=sd.mode, key="", value=value,
                    raw=r.text.strip(" ."), evidence=r.text)

    def index_terms(self, fact: FactView | Reading) -> set[tuple]:
        """What candidate generation (blocks.py) indexes a fact by: ``("offer", *term)`` for
        what it offers as the older fact, ``("want", *term)`` for what it looks for as the
        newer one. A newer fact is compared with the older facts offering a term it wants.

        The rules only ever relate two facts sharing a slot (city, employer ...), a store
        key, or a word the newer fact's transition cue scopes over (its first five letters,
        as the cue rule matches them). The subject's own name never links two facts (see
        ``read``): a fact about Alice does not meet every other fact naming Alice.
        """
        offers, wants = (self.offers_and_wants(fact) if isinstance(fact, FactView)
                         else self._terms_of(fact, None, frozenset()))
        return {("offer", *t) for t in offers} | {("want", *t) for t in wants}

    def offers_and_wants(self, fact: FactView, learned: bool = True) -> tuple[frozenset[tuple], frozenset[tuple]]:
        """``index_terms`` of a fact split by role, without the role (cached like ``read``).
        ``learned`` False: without the learned layer's terms (topics, names), for a block
        whose store keys settle what it weighs (``keyed_block``)."""
        ck = (fact.text or "", fact.subject or "", fact.key or "", learned)
        got = self._terms.get(ck)
        if got is None:
            offers, wants = self._terms_of(self.read(fact), self._own_key(fact), subject_words(fact.subject))
            if learned:
                topic_offers, topic_wants = self.learned_terms(fact)    # the learned layer: by topic
                offers |= topic_offers
                wants |= topic_wants
            got = self._terms[ck] = (frozenset(offers), frozenset(wants))
            if len(self._terms) > self._cache_size:
                self._terms.popitem(last=False)
        else:
            self._terms.move_to_end(ck)
        return got

    def _terms_of(self, r: Reading, key: str | None, names: frozenset[str]) -> tuple[set[tuple], set[tuple]]:
        """(offers, wants) of a reading (``index_terms`` without the role)."""
        offers: set[tuple] = set()
        wants: set[tuple] = set()
        for s in r.slots:
            if s.mode == "multi":
                # several values hold at once (phones, e-mails): a newer value meets the older
                # ones only when it ends or replaces them (_mode_multi), else only its own value
                if s.kind == "assert" and s.polarity >= 0:
                    offers |= {("slot", s.name), ("val", s.name, s.value)}
                if s.kind == "assert" and s.polarity > 0:
                    wants.add(("val", s.name, s.value))
                if s.kind == "end" or (s.kind == "assert" and s.replacement and not s.addition):
                    wants.add(("slot", s.name))
                continue
            if s.kind == "assert" or s.mode in _ANY_KIND_OUTDATED:
                offers |= _slot_terms(s, offer=True)
            wants |= _slot_terms(s, offer=False)
        # (``read`` leaves the subject's own name out of a reading's anchors and cue scopes,
        # ``_without_names``: ``names`` is not looked for there again; an outcome keeps it)
        ended = {w for c in r.cues for w in c.scope}    # what the fact itself ends: no anchor (_cues)
        for a in r.anchors:
            if not (ended and any(_stem_match(a, w) for w in ended)):
                offers.add(("word", a[:5]))
        for c in r.cues:
            for w in c.scope:
                wants.add(("word", w[:5]))
        # an outcome meets the pursuits its words name (_overtaken)
        wants |= {("word", a[:5]) for a in r.outcome if not any(_name_form(a, n) for n in names)}
        sd = self.pack.slot_for_key(key) if key else None
        if key and (sd is None or sd.mode in _ONE_VALUE):
            k = key.strip().lower()         # the key rule (_key_value) holds one value per key
            offers.add(("key", k))
            wants.add(("key", k))
        return offers, wants

    # ------------------------------------------------------------ one pair
    def _pair(self, new: FactView, nr: Reading, old: FactView, orr: Reading) -> _Verdict:
        v = _Verdict()
        self._key_value(new, nr, old, orr, v)
        if v.conflicts:
            return v
        self._slots(new, nr, old, orr, v)
        if v.conflicts or v.confirmed:
            return v
        self._cues(new, nr, old, orr, v)
        if not v.conflicts:
            self._overtaken(new, nr, old, orr, v)
        if not v.conflicts:
            v.ends_other = self._ends_another_value(nr, orr)
            v.elsewhere = not v.ends_other and self._about_other_slots(new, nr, orr)
        return v

    def _about_other_slots(self, new: FactView, nr: Reading, orr: Reading) -> bool:
        """Whether both readings hold slots, none of them shared, and whatever the newer text
        ends the rules have read as ending something of its own: "Priya moved to Surabaya"
        says nothing of "Priya's email is ...", nor does "my new email is ...; the old address
        was closed" of "works at Google", whatever a pair model would guess. An ending the
        rules do not account for ("the Outback finally died") is left to the pair model. (A
        progress-mode reading, "is {NEW}", is too loose to say what a text is about.)"""
        mine = {s.name for s in nr.slots if s.mode != "progress"}
        theirs = {s.name for s in orr.slots if s.kind == "assert" and s.mode != "progress"}
        if not mine or not theirs or mine & theirs:
            return False
        if nr.cues or any(s.kind == "end" for s in nr.slots if s.mode != "progress"):
            return True                 # its endings are read, and are not of the older slots
        return self.learned is None or "ending" not in self.learned.info(self._capped(new.text)).cues

    def _ends_another_value(self, nr: Reading, orr: Reading) -> bool:
        """Whether the newer reading ends a value of a slot that the older reading holds
        with a different value (what the rules leave standing; the learned layer does not
        weigh such a pair)."""
        for s in nr.slots:
            if s.kind != "end" or not s.value:
                continue
            for o in orr.slots:
                if o.name == s.name and o.value and not _same(self.pack.slot(o.name), s.value, o.value):
                    return True
        return False

    def _key_value(self, new, nr, old, orr, v: _Verdict) -> None:
        if not _same_store_key(new, old) or self.pack.is_generic_key(old.key):
            return
        sd = self.pack.slot_for_key(old.key)
        if sd is not None and sd.mode not in _ONE_VALUE:
            return                      # likes, contacts, counts: several values may hold
        nv, ov = _key_text(sd, nr), _key_text(sd, orr)
        if not nv or not ov:
            return
        if _same(sd, nv, ov):
            v.confirmed = True
            return
        v.conflicts.append(self._make(
            old, new, "value", KEY_VALUE_CONFIDENCE,
            f'{old.key}: "{_short(old.text)}" -> "{_short(new.text)}"',
            "UPDATE", old.key, old.text, new.text))

    def _slots(self, new, nr: Reading, old, orr: Reading, v: _Verdict) -> None:
        gap = max(0.0, (new.learned_at - old.learned_at) / _DAY)
        by_name: dict[str, list[Slot]] = {}
        for s in nr.slots:
            by_name.setdefault(s.name, []).append(s)
        for os_ in orr.slots:
            news = by_name.get(os_.name)
            if not news:
                continue
            sd = self.pack.slot(os_.name)
            handler = getattr(self, f"_mode_{sd.mode}")
            handler(sd, news, os_, new, old, gap, v)

    # -- per mode: each appends conflicts or sets confirmed
    def _mode_single(self, sd, news, os_, new, old, gap, v) -> None:
        if os_.kind != "assert":
            return
        news = [s for s in news if not (s.key and os_.key) or _same_key(s.key, os_.key)]
        positives = [s for s in news if s.kind == "assert" and s.polarity > 0]
        if os_.polarity < 0:
            for s in positives:
                if _same(sd, s.value, os_.value):
                    self._conflict(v, sd, old, new, os_, s.value, "value",
                                   f'{sd.name}: was "not {os_.value}", now "{s.value}"')
            return
        same = [s for s in positives if _same(sd, s.value, os_.value)]
        positives = [s for s in positives if s not in same]
        if same and not (any(s.current for s in positives) and not any(s.current for s in same)):
            v.confirmed = True          # restated; unless another value is the one held "now"
            return
        replacement = positives[0].raw if positives else None
        for s in news:
            if s.kind == "end" and (s.value is None or _same(sd, s.value, os_.value)):
                if _qualifier_ok(s, old):
                    self._conflict(v, sd, old, new, os_, s.new_value or replacement, "cue",
                                   f'{sd.name} "{os_.value}" ended: "{_short(s.evidence)}"')
            elif s.kind == "assert" and s.polarity < 0 and _same(sd, s.value, os_.value):
                self._conflict(v, sd, old, new, os_, replacement, "cue",
                               f'{sd.name}: no longer "{os_.value}"')
        for s in positives:
            if _held_before(s, new, gap):
                continue
            conf = sd.confidence * (0.9 if (s.implied or os_.implied) else 1.0)
            self._conflict(v, sd, old, new, os_, s.raw if sd.value != "term" else s.value,
                           "value", f'{sd.name}: "{os_.value}" -> "{s.value}"', conf)

    def _mode_multi(self, sd, news, os_, new, old, gap, v) -> None:
        if os_.kind != "assert" or os_.polarity < 0:
            return
        for s in news:
            if s.kind == "assert" and s.polarity > 0:
                if _same(sd, s.value, os_.value):
                    v.confirmed = True
                    return
        for s in news:
            if s.kind == "end" and ((s.value is None and _qualifier_ok(s, old))
                                    or (s.value is not None and _same(sd, s.value, os_.value))):
                self._conflict(v, sd, old, new, os_, None, "cue",
                               f'{sd.name} "{os_.raw}" ended: "{_short(s.evidence)}"')
            elif (s.kind == "assert" and s.polarity > 0 and s.replacement and not s.addition):
                self._conflict(v, sd, old, new, os_, s.raw, "value",
                               f'new {sd.name} "{s.raw}" replaces "{os_.raw}"')

    def _mode_polar(self, sd, news, os_, new, old, gap, v) -> None:
        for s in news:
            if s.kind != "assert" or not _same_key(s.key, os_.key):
                continue
            if s.polarity == os_.polarity:
                v.confirmed = True
            else:
                verb = "now" if s.polarity > 0 else "no longer"
                said = (sd.yes if s.polarity > 0 else sd.no).replace("{v}", s.value or "")
                self._conflict(v, sd, old, new, os_, said,
                               "value", f'{sd.name}({os_.key}): {verb} "{s.value}"')

    def _mode_count(self, sd, news, os_, new, old, gap, v) -> None:
        if os_.kind != "assert" or os_.key is None:
            return
        o = to_number(os_.value)
        for s in news:
            if s.key != os_.key or o is None:
                continue
            if s.kind == "assert":
                n = to_number(s.value)
                if n == o:
                    v.confirmed = True
                elif n is not None:
                    self._conflict(v, sd, old, new, os_, f"{n:g}", "value",
                                   f'{os_.key or sd.name}: {o:g} -> {n:g}')
            elif s.kind == "event":
                self._conflict(v, sd, old, new, os_, f"{max(0, o + s.delta):g}", "cue",
                               f'{os_.key or sd.name}: {o:g} then "{_short(s.evidence)}"')

    def _mode_number(self, sd, news, os_, new, old, gap, v) -> None:
        o = to_number(os_.value)
        for s in news:
            n = to_number(s.value)
            if s.kind != "assert" or n is None or o is None:
                continue
            expected = o + sd.per_year * gap / 365.25
            if abs(n - expected) <= sd.tolerance:
                v.confirmed = True
            else:
                self._conflict(v, sd, old, new, os_, f"{n:g} {sd.unit}".strip(), "value",
                               f'{sd.name}: {o:g} -> {n:g}')

    def _mode_progress(self, sd, news, os_, new, old, gap, v) -> None:
        if os_.kind != "assert" or os_.polarity < 0:
            return
        for s in news:
            if s.kind == "end" and s.new_value and _overlap(s.new_value, os_.value):
                self._conflict(v, sd, old, new, os_, s.new_value, "cue",
                               f'{sd.name}: "{os_.value}" completed: "{_short(s.evidence)}"')
            elif s.kind == "end" and not s.new_value and s.value and _overlap(s.value, os_.value):
                self._conflict(v, sd, old, new, os_, None, "cue",
                               f'{sd.name}: "{os_.value}" given up: "{_short(s.evidence)}"')
            elif s.kind == "assert" and _same(sd, s.value, os_.value):
                v.confirmed = True

    def _cues(self, new, nr: Reading, old, orr: Reading, v: _Verdict) -> None:
        if not nr.cues:
            return
        ended_before = set()
        for c in orr.cues:              # the old fact already tells of this ending
            ended_before |= c.scope
        anchors = {a for a in orr.anchors if not any(_stem_match(a, w) for w in ended_before)}
        avoids = None
        for c in nr.cues:
            hit = sorted(a for a in anchors if any(_stem_match(a, w) for w in c.scope))
            if not hit or all(_YEAR.fullmatch(a) for a in hit):
                continue                # a year alone is not what a cue ends ("the school I quit back in 2019")
            if c.absent:                # "sesame-free": the end of having sesame, not of avoiding it
                if avoids is None:
                    avoids = self.extractor.guards.has("avoids", orr.text)
                if avoids:
                    continue            # "sesame-free" restates "allergic to sesame"
            if self.extractor.guards.past(orr.text):
                return                  # the old fact is already past ("Previously at Wealthsimple")
            v.conflicts.append(self._make(
                old, new, "cue", c.confidence,
                f'"{c.cue}" about "{", ".join(hit[:3])}": "{_short(c.evidence)}"',
                "UPDATE" if c.new_value else "EXPIRE", self._own_key(old), old.text, c.new_value))

    def _overtaken(self, new, nr: Reading, old, orr: Reading, v: _Verdict) -> None:
        """A pursuit of the older text (a plan, a search, training, an application) that the
        newer text reports the outcome of, naming what it was after: "Looking for a flat in
        Kreuzberg" -> "keys to the kreuzberg place!". Not when the newer text still pursues
        the same thing ("still looking for a flat in kreuzberg, got two viewings")."""
        if not (orr.pursuits and nr.outcome):
            return
        for scope in orr.pursuits:
            hit = sorted(a for a in nr.outcome if any(_stem_match(a, w) for w in scope))
            if not hit:
                continue
            if any(_stem_match(w, x) for s in nr.pursuits for w in s for x in scope):
                return
            v.conflicts.append(self._make(
                old, new, "cue", OVERTAKEN_CONFIDENCE,
                f'overtaken: "{_short(old.text)}" -> "{_short(new.text)}" (about "{", ".join(hit[:3])}")',
                "EXPIRE", self._own_key(old), old.text, None))
            return

    # ------------------------------------------------------------ learned layer
    def _sims(self, new: FactView, olders: list[FactView]) -> list[tuple | None]:
        """(cosine to the newer text, topic distributions of both by prototype, the semantic
        features of semantic_features.py) of each older text; None without an embedder."""
        if self.embedder is None or self.learned is None or not olders:
            return [None] * len(olders)
        embed = getattr(self.embedder, "embed", None)
        if embed is None or self.learned.prototypes is None:
            sims = self.embedder.similarities(self.embedding_text(new), [self.embedding_text(o) for o in olders])
            return [(float(s), None, None, None) for s in sims]
        new_text = self.embedding_text(new)
        old_texts = [self.embedding_text(o) for o in olders]
        parts = clauses(new_text)
        vecs = embed([new_text] + old_texts + parts)
        en = self.learned.emb_probs(new_text, vecs[0])
        new_parts = [(new_text, vecs[0])] + list(zip(parts, vecs[len(olders) + 1:]))
        out = []
        for i, o in enumerate(olders, 1):
            out.append((float(vecs[i] @ vecs[0]), en, self.learned.emb_probs(old_texts[i - 1], vecs[i]),
                        (new_parts, old_texts[i - 1], vecs[i])))
        return out

    def embedding_text(self, fact: FactView) -> str:
        """What is encoded of a fact: its first max_text_chars, the subject's own name written
        as "the user" (two facts that both name the user are not alike for that: MiniLM weighs
        a shared name heavily, "Tomasz works at Google" ~ "Google Cloud is Tomasz's vendor")."""
        text = self._capped(fact.text)
        names = subject_words(fact.subject)
        return _name_pattern(names).sub(_the_user, text) if names else text

    def embedding_texts(self, fact: FactView) -> list[str]:
        """Every text the semantic layer may encode for a fact, its embedding_text first: as
        a newer fact, that text's clauses (learned layer) and its cue clauses (semantic
        layer). Callers encode them in batches and cache them (eval script, block walks), so
        comparing encodes nothing more."""
        text = self.embedding_text(fact)
        out = [text]
        if self.learned is not None and self.learned.prototypes is not None:
            out += clauses(text)
        out += [c.evidence for c in self.read(fact).cues]
        return list(dict.fromkeys(out))

    def _features(self, new: FactView, old: FactView, v: _Verdict, sim) -> dict[str, float]:
        best = _best(v.conflicts)
        rule = best.kind if best is not None else ("confirmed" if v.confirmed else "none")
        # the embeddings mode never reads the subject's name as a value (the rules mode scores
        # a pair of texts once whatever the subject: _learned's cache)
        names = subject_words(old.subject) if sim is not None else frozenset()
        feats = self.learned.features(self._capped(new.text), self._capped(old.text), self._own_key(old), rule,
                                      best.confidence if best is not None else 0.0,
                                      v.confirmed, None if sim is None else sim[0],
                                      None if sim is None else sim[1:3], names=names,
                                      wide=self._looks_wide(new), linked=sim is None and self.linked(new, old))
        if v.ends_other:            # never scored (compare); marked for training (train_detector)
            feats["r_ends_other"] = 1.0
        if v.elsewhere:             # the same
            feats["r_elsewhere"] = 1.0
        if sim is not None and sim[3] is not None:
            new_parts, old_text, old_vec = sim[3]
            old_info = self.learned.info(self.learned.old_text(old_text, self._own_key(old)))
            feats.update(semantic_pair_features(self.learned, new_parts, old_text, old_info, old_vec,
                                                sim[0], feats, names))
        return feats

    def _pair_probability(self, new: FactView, old: FactView, v: _Verdict, sim, mode: str,
                          gate: tuple[str, str, str | None, bool, bool] | None = None) -> float | None:
        """The pair model's probability, or None when its gate turns the pair away. ``gate``:
        what the rules-mode gate reads (``_gate_key``), if known."""
        if sim is None and not self.learned.may_relate(*(gate or self._gate_key(new, old))):
            return None                 # the gate would say no: no features built
        feats = self._features(new, old, v, sim)
        if not self.learned.related(feats):
            return None
        return self.learned.score(mode, feats)

    def _gate_key(self, new: FactView, old: FactView) -> tuple[str, str, str | None, bool, bool]:
        """What the rules-mode gate and pair model read of a pair: (newer text, older text,
        older key, whether the newer looks wide, whether it names the older: ``linked``)."""
        return (self._capped(new.text), self._capped(old.text), self._own_key(old), self._looks_wide(new),
                self.linked(new, old))

    def linked(self, new: FactView, old: FactView) -> bool:
        """Whether the newer fact mentions a name of the older one (its ``link_words``
        among the newer reading's anchors) -- the learned layer's lexical way in
        (Learned.related); ``learned_terms`` indexes the same words."""
        # _stem_match(a, b) holds exactly when a[:5] == b[:5]: compared as sets of those
        return bool(self._link_forms(old)[0] & self._link_forms(new)[1])

    def link_words(self, fact: FactView) -> frozenset[str]:
        """The salient words (reading anchors: never the subject's own name, no stop or
        generic word) that stand in the fact's text for a name (slots.named_forms: a word
        capitalised where no sentence begins, an address): "Boyfriend: Kai", "I live in
        Shoreditch", "Active on LinkedIn". A common word two facts share ("junior staff",
        "staff engineer"), a sentence's first word ("Note 3: ...") and the person the text
        opens with (Reading.entity: "Priya works at ...", in a store that names no user)
        link nothing."""
        r = self.read(fact)
        return (r.anchors & named_forms(self._capped(fact.text))) - {r.entity}

    def _link_forms(self, fact: FactView) -> tuple[frozenset[str], frozenset[str]]:
        """The five-letter forms of the fact's ``link_words`` and of its anchors (cached)."""
        ck = (self._capped(fact.text), fact.subject or "")
        got = self._links.get(ck)
        if got is None:
            if len(self._links) > self._cache_size:
                self._links.clear()
            got = self._links[ck] = (frozenset(a[:5] for a in self.link_words(fact)),
                                     frozenset(a[:5] for a in self.read(fact).anchors))
        return got

    def _learned(self, new: FactView, old: FactView, v: _Verdict, sim) -> Contradiction | None:
        """The pair model's verdict on a pair the rules did not flag."""
        mode = "embeddings" if sim is not None and "embeddings" in self.learned.modes else "rules"
        if sim is None and not v.conflicts and not v.confirmed:
            # in the rules mode the pair's probability depends on the two texts, the older key
            # and whether the newer looks wide: a pair of texts met again is scored once
            ck = self._gate_key(new, old)
            p = self._pair_scores.get(ck, _UNSCORED)
            if p is _UNSCORED:
                p = self._pair_probability(new, old, v, sim, mode, ck)
                if len(self._pair_scores) >= self._cache_size:
                    self._pair_scores.clear()
                self._pair_scores[ck] = p
        else:
            p = self._pair_probability(new, old, v, sim, mode)
        if p is None or p < self.learned.threshold(mode):
            return None
        info = self.learned.info(self._capped(new.text))
        # reported as kind "semantic" (the JSON contract's kinds are value|cue|semantic|judge):
        # a model's reading of what the texts mean; the evidence names the learned pair model
        return self._make(old, new, "semantic", min(p, 0.85),
                          f'learned pair model {p:.2f} (slot "{info.top}"): "{_short(new.text)}"',
                          "EXPIRE", self._own_key(old), old.text, None)

    def _encoded(self, new: FactView, unread: list[tuple[FactView, tuple | None]]) -> list[Contradiction]:
        """The pair encoder's findings among the pairs the rules and the pair model left open
        (``_open``), read in one batch per newer fact and flagged at the encoder's threshold.
        Only pairs the learned gate relates are read (``_encoder_gate``)."""
        enc = self.pair_encoder
        todo = [old for old, sim in unread if self._encoder_gate(new, old, sim)]
        if not todo:
            return []
        probs = enc.probabilities([self.encoder_input(new, o) for o in todo])
        return [self._make(o, new, "semantic", min(p, 0.85), f'pair encoder {p:.2f}: "{_short(new.text)}"',
                           "EXPIRE", self._own_key(o), o.text, None)
                for o, p in zip(todo, probs) if p >= enc.threshold]

    def _vetoed(self, new: FactView, flags: list[Contradiction], older_of: Mapping[str, FactView]) -> list[Contradiction]:
        """The flags of the rules and the pair model that the pair encoder does not overrule:
        one whose pair it reads below its ``veto`` is dropped (and left to no other layer).
        On authors the encoder never saw, most of those layers' wrong flags read below 0.1
        while their right ones rarely do (docs/contradictions.md, "Stop 45").
        Never a pair whose two facts carry one meaningful store key ("employer: Google" /
        "employer: Stripe"): the store itself says both hold the same thing, and the encoder,
        trained on free-text newer messages, is not asked about a terse keyed value."""
        enc = self.pair_encoder
        asked = [c for c in flags if not (_same_store_key(new, older_of[c.older]) and self._meaningful(new.key))]
        if not asked:
            return flags
        probs = enc.probabilities([self.encoder_input(new, older_of[c.older]) for c in asked])
        dropped = {id(c) for c, p in zip(asked, probs) if p < enc.veto}
        return [c for c in flags if id(c) not in dropped]

    def keyed_block(self, keys: Iterable[str | None], slots: dict[str, SlotDef | None] | None = None
                    ) -> dict[str, SlotDef | None] | None:
        """The slot of each store key (case and spaces aside) of a block whose facts' keys are
        ``keys``, when every fact carries a meaningful key, no two keys naming one slot; None for
        any other block, and where the learned layer is not the only layer past the rules (an
        embedder or a judge reads every undecided pair). ``slots``: the map of the facts walked
        before, added to.

        In such a block the learned layer weighs no pair of two keys (``_settled_by_keys``),
        and a pair of one key it may weigh meets on that key (``_terms_of``): its own index
        terms (topics, names) would only bring pairs it never weighs, so a walk leaves them out
        and never estimates the block's topics (bench_detect's keyed store: a fifth of its
        detection). A key-value table of one user, as many home-made agents keep, is one."""
        if self.learned is None or self.embedder is not None or self.judge is not None:
            return None
        slots = dict(slots or {})
        named = {id(sd) for sd in slots.values() if sd is not None}     # the slots a key names
        for raw in keys:
            key = self._meaningful(raw)
            if key is None:
                return None
            k = key.strip().lower()
            if k in slots:
                continue
            sd = slots[k] = self.pack.slot_for_key(key)
            if sd is not None:
                if id(sd) in named:
                    return None             # two keys of one slot: the learned layer weighs them
                named.add(id(sd))
        return slots

    def _settled_by_keys(self, new: FactView, old: FactView) -> bool:
        """The store keys settle the pair, and neither learned layer weighs it:
        - one key of a slot where several values hold at once ("language: Spanish" /
          "language: French"): an addition, whose endings the rules read (the pair model was
          asked about 29,508 such pairs of bench_detect's keyed store and flagged none; the pair
          encoder flagged 338 "Speaks language N" there);
        - two meaningful keys (not ids nor generic words) that differ and do not name one slot
          ("employer: Works at Acme" / "pet: Has a dog named Rex"): different things (reading
          every open pair, the encoder read 16,000 such pairs of that store, 58.7 s per 1,000
          memories, flagging none)."""
        a, b = self._meaningful(new.key), self._meaningful(old.key)
        if a is None or b is None:
            return False
        sb = self.pack.slot_for_key(b)
        if _same_store_key(new, old):
            return sb is not None and sb.mode not in _ONE_VALUE
        sa = self.pack.slot_for_key(a)
        return sa is None or sa is not sb

    def _encoder_gate(self, new: FactView, old: FactView, sim) -> bool:
        """Whether the pair encoder reads an open pair (compare() hands it none the store keys
        settle): every one, unless ``encoder_gate`` (`[embeddings] pair_encoder_gate = true`)
        asks for only the pairs the learned layer's gate relates (a topic the newer text wants
        that the older offers, a name of the older in the newer, or texts at least SIM_GATE
        similar). On six authors' cases the encoder never saw, the gate cost 0.12 of recall for
        0.005 of precision (docs/history.md, "Stop 39")."""
        if not self.encoder_gate or self.learned is None:
            return True
        if sim is not None and sim[0] >= SIM_GATE:
            return True
        return self.learned.may_relate(*self._gate_key(new, old))

    # ------------------------------------------------------------ semantic layer
    def _semantic(self, new: FactView, nr: Reading, olders: list[FactView]) -> list[Contradiction]:
        """Same-topic facts the rules left undecided.

        With a judge, every fact at least ``semantic_threshold`` similar to the newer one is
        a candidate the judge confirms or rejects. Without one, similarity alone is not
        evidence (same-topic restatements are as similar as changes), so a candidate also
        needs a transition cue in the newer text whose own clause is similar to the older
        fact: the semantic version of the cue rule ("I left the church" ~ "Is Catholic").
        """
        sims = self.embedder.similarities(self.embedding_text(new), [self.embedding_text(o) for o in olders])
        cands = [(o, s) for o, s in zip(olders, sims) if s >= self.semantic_threshold]
        if not cands:
            return []
        out = []
        if self.judge is None:
            if not nr.cues:
                return []
            cue_clauses = list(dict.fromkeys(c.evidence for c in nr.cues))
            for old, sim in cands:
                csims = self.embedder.similarities(self.embedding_text(old), cue_clauses)
                best = max(range(len(cue_clauses)), key=lambda i: csims[i])
                if csims[best] < self.semantic_threshold:
                    continue
                cue = next(c for c in nr.cues if c.evidence == cue_clauses[best])
                conf = round(min(0.8, 0.45 + (csims[best] - self.semantic_threshold)), 3)
                out.append(self._make(old, new, "semantic", conf,
                                      f'"{cue.cue}" in a clause similar to it (cosine {csims[best]:.2f}): '
                                      f'"{_short(cue.evidence)}"',
                                      "EXPIRE", self._own_key(old), old.text, None))
            return out
        for old, sim in cands:
            verdict = self.judge.verdict(old.text, new.text)
            if verdict is None:                 # the judge could not answer: no decision
                continue
            ok, conf, why = verdict
            if ok:
                out.append(self._make(old, new, "judge", conf,
                                      why or f"judge: contradiction (cosine {sim:.2f})",
                                      "EXPIRE", self._own_key(old), old.text, None))
        return out

    def _judged(self, new: FactView, nr: Reading, olders: list[FactView]) -> list[Contradiction]:
        """A judge without embeddings: ask about undecided facts sharing a slot or a word."""
        names = {s.name for s in nr.slots}
        out = []
        for old in olders:
            orr = self.read(old)
            if not (names & {s.name for s in orr.slots}
                    or any(_stem_match(a, b) for a in orr.anchors for b in nr.anchors)):
                continue
            verdict = self.judge.verdict(old.text, new.text)
            if verdict is not None and verdict[0]:
                out.append(self._make(old, new, "judge", verdict[1], verdict[2], "EXPIRE",
                                      self._own_key(old), old.text, None))
        return out

    # ------------------------------------------------------------ helpers
    def _conflict(self, v: _Verdict, sd: SlotDef, old: FactView, new: FactView, os_: Slot,
                  new_value, kind: str, evidence: str, conf: float | None = None) -> None:
        """Record that ``new`` outdates ``old`` on slot ``sd`` (old slot reading ``os_``)."""
        own = self._own_key(old)
        key = own if own and self.pack.slot_for_key(own) in (None, sd) else sd.name
        action = "UPDATE" if new_value else "EXPIRE"
        v.conflicts.append(self._make(old, new, kind, sd.confidence if conf is None else conf,
                                      evidence, action, key, os_.raw or old.text, new_value))

    def _own_key(self, fact: FactView) -> str | None:
        """The fact's store key when it means something (not a uuid or a generic name)."""
        return self._meaningful(fact.key)

    def _meaningful(self, key: str | None) -> str | None:
        return key if key and not self.pack.is_generic_key(key) else None

    @staticmethod
    def _make(old, new, kind, conf, evidence, action, key, old_value, new_value) -> Contradiction:
        return Contradiction(older=old.ref, newer=new.ref, kind=kind, confidence=round(conf, 3),
                             evidence=evidence,
                             update={"action": action, "key": key, "old_value": old_value,
                                     "new_value": new_value})


# ---------------------------------------------------------------- value helpers

@functools.lru_cache(maxsize=1024)
def _name_pattern(names: frozenset[str]) -> re.Pattern:
    """The subject's name words as whole words, possessive included."""
    alts = "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))
    return re.compile(rf"\b(?:{alts})('s|’s|s')?\b", re.I)


def _the_user(m: re.Match) -> str:
    return "the user's" if m.group(1) else "the user"


@functools.lru_cache(maxsize=4096)
def subject_words(subject: str | None) -> frozenset[str]:
    """The words of a subject id that may name the person ("u_alice" -> {"alice"}); kept
    for the last few thousand subjects (every fact of a block asks for its subject's)."""
    return frozenset(w for w in _NAME_PARTS.split((subject or "").lower())
                     if len(w) > 2 and not w.isdigit())


def _may_name(text: str, names: frozenset[str]) -> bool:
    """False when no word of ``text`` can be one of ``names`` nor a form of one (``_name_form``,
    ``names_a_word``): every such word or form holds a name's first three letters, and a name
    is at least three letters long (``subject_words``). (Only said of names in ASCII: lower
    case of a whole text and of one word differ only in a letter outside it.)"""
    low = text.lower()
    return any(not n.isascii() or n[:3] in low for n in names)


def _names_in(r: Reading, names: frozenset[str]) -> bool:
    """Whether ``_without_names`` would change ``r``: an anchor or a cue's scope word is a name."""
    return any(_name_form(w, n) for n in names for w in r.anchors) or any(
        _name_form(w, n) for n in names for c in r.cues for w in c.scope)


def _without_names(r: Reading, names: frozenset[str]) -> Reading:
    """``r`` with the names left out of its anchors and of its cues' scopes."""
    def named(w: str) -> bool:
        return any(_name_form(w, n) for n in names)
    anchors = frozenset(a for a in r.anchors if not named(a))
    cues = tuple(c if not any(named(w) for w in c.scope)
                 else replace(c, scope=frozenset(w for w in c.scope if not named(w))) for c in r.cues)
    pursuits = tuple(p for p in (frozenset(w for w in s if not named(w)) for s in r.pursuits) if p)
    outcome = frozenset(a for a in r.outcome if not named(a))
    if anchors == r.anchors and cues == r.cues and pursuits == r.pursuits and outcome == r.outcome:
        return r
    return replace(r, anchors=anchors, cues=cues, pursuits=pursuits, outcome=outcome)


def _name_form(word: str, name: str) -> bool:
    """``word`` (an anchor or cue word, maybe stemmed) is a form of the name ``name``."""
    word = word.lower()
    return word == name or (len(word) >= 4 and name.startswith(word)) or word == name[:5]


def _slot_terms(s: Slot, offer: bool) -> set[tuple]:
    """Index terms of a slot.

    Most slots meet the whole slot. Slots keyed by an object (likes, counts) meet only
    facts whose object's words contain, or are contained in, theirs ("thai food" / "food",
    as the rule compares them): an older fact offers every subset of its words ("sup") and
    the whole set ("full"); a newer fact looks for its whole set among the "sup" terms and
    for each of its subsets among the "full" terms.
    """
    if s.mode not in ("polar", "count") or not s.key:
        return {("slot", s.name)}
    words = sorted({stem(w) for w in s.key.split()})[:6]
    subsets = {frozenset(c) for n in range(1, len(words) + 1) for c in combinations(words, n)}
    whole = frozenset(words)
    if offer:
        return {("sup", s.name, x) for x in subsets} | {("full", s.name, whole)}
    return {("sup", s.name, whole)} | {("full", s.name, x) for x in subsets}


def _same_store_key(new: FactView, old: FactView) -> bool:
    """Both facts carry one store key (case and spaces aside)."""
    return bool(new.key and old.key) and new.key.strip().lower() == old.key.strip().lower()


def _open(v: "_Verdict") -> bool:
    """The rules neither flagged the pair, nor found it restated, nor read it as about
    something else: the learned layers may weigh it."""
    return not v.conflicts and not v.confirmed and not v.ends_other and not v.elsewhere and not v.someone_else


def _best(conflicts: list[Contradiction]) -> Contradiction | None:
    if not conflicts:
        return None
    return max(conflicts, key=lambda c: (c.confidence, c.update is not None
                                         and c.update.get("new_value") is not None))


def _key_text(sd: SlotDef | None, r: Reading) -> str:
    if sd is not None:
        for s in r.slots:
            if s.name == sd.name and s.kind == "assert" and s.polarity > 0 and s.value:
                return s.value
    return norm_value(r.text)


def _same(sd: SlotDef | None, a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return False
    if a == b:
        return True
    if sd is not None:
        if any(a in g and b in g for g in sd.compatible):
            return True
        if sd.value == "phone":
            da, db = digits(a), digits(b)
            return len(da) >= 7 and len(db) >= 7 and (da.endswith(db[-7:]) and db.endswith(da[-7:]))
        if sd.value in ("email", "term", "number"):
            return False
    ta, tb = set(a.split()), set(b.split())
    return bool(ta) and bool(tb) and (ta <= tb or tb <= ta)


def _same_key(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    if a == b:
        return True
    ta, tb = {stem(w) for w in a.split()}, {stem(w) for w in b.split()}
    return ta <= tb or tb <= ta


def _overlap(a: str, b: str | None) -> bool:
    if not b:
        return False
    ta = {stem(w) for w in norm_value(a).split() if len(w) > 1}
    tb = {stem(w) for w in norm_value(b).split() if len(w) > 1}
    return bool(ta & tb)


def _stem_match(a: str, b: str) -> bool:
    """Same stem, or a shared prefix of 5+ letters (allergic / allergy)."""
    if a == b:
        return True
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n >= 5


def _qualifier_ok(s: Slot, old: FactView) -> bool:
    q = (s.qualifier or "").strip()
    if not q or q == "old":
        return True
    return stem(q) in {stem(w) for w in re.findall(r"\w+", old.text.lower())}


def _held_before(s: Slot, new: FactView, gap_days: float) -> bool:
    """The new value already held when the old fact was learned ("for six years")."""
    held = s.held_days
    if held is None and s.held_year is not None:
        import datetime as _dt
        year = _dt.datetime.fromtimestamp(new.learned_at, _dt.timezone.utc).year
        held = max(0.0, (year - s.held_year) * 365.25)
    return held is not None and held >= gap_days


def _short(text: str, n: int = 80) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= n else t[: n - 1] + "…"
