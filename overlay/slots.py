"""Read slots and transition cues out of a fact's free text, using a slot pack.

``extract("I moved to Surabaya last month")`` gives ``[Slot(name="city", value="surabaya",
...)]``. Matching is clause by clause so a hedge, negation or third party in one clause
("My sister's number is ...", "might move to Paris") never leaks into another. The
detector in ``overlay.contradictions`` compares the slots of two facts; this module only
reads one text at a time and keeps no state.

Example:
    >>> from memwatch_overlay.overlay.slotpack import load_pack
    >>> [(s.name, s.value) for s in extract_slots("Works at Google", load_pack())]
    [('employer', 'google')]
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .slotpack import Pack, SlotDef, required_literals

_NUMBER_WORDS = {"no": 0, "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
                 "twelve": 12, "a": 1, "an": 1, "several": 3, "many": 5, "a few": 3,
                 "a couple of": 2}
_UNIT_DAYS = {"year": 365.25, "month": 30.44, "decade": 3652.5, "week": 7.0, "day": 1.0}
_DETERMINERS = {"a", "an", "the", "my", "our", "his", "her", "their", "your", "this", "that"}
_CONTRACTIONS = [
    (re.compile(r"\bcan't\b", re.I), "can not"), (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\bshan't\b", re.I), "shall not"), (re.compile(r"n't\b", re.I), " not"),
    (re.compile(r"\b(i)'m\b", re.I), r"\1 am"), (re.compile(r"'re\b", re.I), " are"),
    (re.compile(r"'ve\b", re.I), " have"), (re.compile(r"'ll\b", re.I), " will"),
]
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|;|\s[-–—]+\s|\n+")
_CLAUSE_BREAK = re.compile(
    r",\s*(?=(?:but|so|and then|and|because|though|although|while|whereas|yet|which means|"
    r"i|we|me|yo|ich|he|she|they)\b)|\s(?=(?:but|because|before|until|though|although|whereas|"
    r"whilst|except)\s)", re.I)
_WORD = re.compile(r"[\w][\w@.+'-]*")
_MAX_SCOPE_WORDS = 3


@dataclass(frozen=True)
class Slot:
    """One thing a text says about its subject: a slot, its value and how it says it.

    ``kind`` is "assert" (the value holds), "end" (the current value ended; ``value`` may
    say which), or "event" (a count changed by ``delta``). ``polarity`` is -1 for a denial
    ("can not cook"). ``held_days`` is set when the text says how long the value has held.
    """

    name: str
    category: str
    mode: str
    key: str
    value: str | None
    raw: str | None
    kind: str = "assert"
    polarity: int = 1
    new_value: str | None = None
    qualifier: str | None = None
    delta: int = 0
    held_days: float | None = None
    held_year: int | None = None
    replacement: bool = False
    addition: bool = False
    implied: bool = False
    current: bool = False
    evidence: str = ""


@dataclass(frozen=True)
class _Clause:
    """A clause and the guard facts that hold for the whole of it (computed once)."""

    text: str
    question: bool
    held: float | None
    year: int | None
    temporary: bool
    replacement: bool
    addition: bool


@dataclass(frozen=True)
class CueHit:
    """A transition cue ("no longer", "sold", "-free") and the words in its scope."""

    cue: str
    scope: frozenset[str]
    confidence: float
    new_value: str | None
    evidence: str


@dataclass(frozen=True)
class Reading:
    """Everything the detector needs from one text, computed once and cached."""

    text: str
    slots: tuple[Slot, ...]
    cues: tuple[CueHit, ...]
    anchors: frozenset[str]
    entity: str | None = None      # the person a text is about when it names one ("Priya ...")


# ---------------------------------------------------------------- text helpers

def normalize(text: str) -> str:
    """Straight quotes, expanded contractions, single spaces."""
    t = (text or "").replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    t = t.replace("\u201d", '"').replace("\u00a0", " ")
    for rx, rep in _CONTRACTIONS:
        t = rx.sub(rep, t)
    return re.sub(r"[ \t]+", " ", t).strip()


def clauses(text: str) -> list[tuple[str, str]]:
    """Split into (clause, sentence) pairs."""
    out = []
    pos = 0
    sentences = []
    for m in _SENTENCE_END.finditer(text):
        sentences.append(text[pos:m.end()].strip())
        pos = m.end()
    sentences.append(text[pos:].strip())
    for s in sentences:
        if not s:
            continue
        cpos = 0
        for m in _CLAUSE_BREAK.finditer(s):
            out.append((s[cpos:m.start()].strip(" ,"), s))
            cpos = m.end()
        out.append((s[cpos:].strip(" ,"), s))
    return [(c, s) for c, s in out if c]


def stem(word: str) -> str:
    """A crude stemmer, good enough to match smoker/smoke-free or freelance/freelancing."""
    w = word.lower().strip(".,'\"")
    if w.endswith("'s"):
        w = w[:-2]
    for suf in ("ing", "ers", "er", "ed", "es", "s", "e"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def norm_value(v: str | None) -> str:
    """Lower case, no leading determiners or trailing punctuation."""
    if v is None:
        return ""
    words = re.sub(r"[\"()]", " ", v.lower()).split()
    while words and words[0] in _DETERMINERS:
        words = words[1:]
    return " ".join(words).strip(" .,;:!'-")


def to_number(v: str | None) -> float | None:
    if v is None:
        return None
    v = v.strip().lower()
    if v in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[v])
    try:
        return float(v)
    except ValueError:
        return None


def digits(v: str) -> str:
    return re.sub(r"\D", "", v)


# ---------------------------------------------------------------- guards

def _recent(prefix: str, words: int = 5) -> str:
    """The last few words before a match, not crossing a comma."""
    tail = re.split(r"[,;:]", prefix)[-1]
    return " ".join(tail.split()[-words:])


def _any(rxs, text: str) -> bool:
    return any(r.search(text) for r in rxs)


def _literal_regex(words) -> re.Pattern:
    """A regex finding any of ``words`` (plain lower-case strings) in lower-cased text."""
    return re.compile("|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True)))


def _merge(rxs) -> tuple[re.Pattern, ...]:
    """One regex for a list of guard regexes (named groups dropped); the list if that fails."""
    if len(rxs) < 2:
        return tuple(rxs)
    try:
        src = "|".join("(?:" + re.sub(r"\(\?P<\w+>", "(?:", r.pattern) + ")" for r in rxs)
        return (re.compile(src, rxs[0].flags),)
    except re.error:
        return tuple(rxs)


class _Guards:
    """The pack's guard lists, each merged into one regex (one search instead of many)."""

    def __init__(self, pack: Pack):
        self.g = {name: _merge(rxs) for name, rxs in pack.guards.items() if name != "duration"}
        self.g["duration"] = pack.guards["duration"]     # read group by group, not merged

    def hedged(self, prefix: str) -> bool:
        return _any(self.g["hedge"], prefix)

    def temporary(self, clause: str) -> bool:
        return _any(self.g["temporary"], clause)

    def negated(self, prefix: str) -> bool:
        return _any(self.g["negation"], _recent(prefix))

    def third_party(self, prefix: str) -> bool:
        return _any(self.g["third_party"], prefix) and not _any(self.g["first_person"], prefix)

    def past(self, prefix: str) -> bool:
        return _any(self.g["past"], prefix)

    def question(self, sentence: str) -> bool:
        return _any(self.g["question"], sentence)

    def held(self, clause: str) -> tuple[float | None, int | None]:
        """How long the clause says its value has held: (days, since_year)."""
        for r in self.g["duration"]:
            m = r.search(clause)
            if not m:
                continue
            gd = m.groupdict()
            if gd.get("y") and gd["y"].isdigit():
                return None, int(gd["y"])
            if gd.get("n") and gd.get("u"):
                n = to_number(gd["n"]) or 1
                return n * _UNIT_DAYS[gd["u"].lower().rstrip("s")], None
            return 365.25 * 30, None          # "all my life"
        return None, None


# ---------------------------------------------------------------- extraction

def _clean(raw: str | None) -> str | None:
    if raw is None:
        return None
    v = raw.strip().strip(".,;:!?'\"()")
    return v or None


def _valid(sd: SlotDef, raw: str, pack: Pack) -> bool:
    v = norm_value(raw)
    if sd.value == "number":
        return to_number(raw) is not None
    if not v or v in pack.value_reject:
        return False
    if any(r.search(v) for r in sd.reject):
        return False
    if sd.value == "name":
        first = raw.strip().split()[0] if raw.strip() else ""
        while first.lower() in _DETERMINERS and len(raw.split()) > 1:
            raw = raw.split(None, 1)[1]
            first = raw.split()[0]
        return first[:1].isupper() or first[:1].isdigit()
    if sd.value == "phone":
        d = digits(raw)
        return 7 <= len(d) <= 15 and not re.fullmatch(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}", raw.strip())
    if sd.value == "number":
        return to_number(raw) is not None
    return True


def _family(sd: SlotDef, word: str | None) -> str:
    w = norm_value(word)
    for fam, rxs in sd.families.items():
        if any(r.fullmatch(w) for r in rxs):
            return fam
    if not sd.families or not w:
        return w
    for fam, rxs in sd.families.items():     # any word of the phrase ("swim race")
        if any(r.fullmatch(tok) for tok in w.split() for r in rxs):
            return fam
    return w


def _key(sd: SlotDef, m: re.Match, value: str | None) -> str:
    gd = m.groupdict()
    if sd.mode == "polar":
        return _singular(_family(sd, value))
    if sd.mode == "count":
        return _family(sd, gd.get("k") or "")
    return ""


def _singular(w: str) -> str:
    words = w.split()
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


class Extractor:
    """Reads slots and cues from texts with one compiled pack."""

    def __init__(self, pack: Pack):
        self.pack = pack
        self.guards = _Guards(pack)
        self._lits: dict[int, tuple[str, ...] | None] = {}
        self._need: dict[int, re.Pattern | None] = {}
        self._gates: dict[str, re.Pattern | None] = {}
        for sd in pack.slots:
            rxs = (*sd.assert_, *sd.deny, *sd.end, *sd.event,
                   *(x for rs in sd.terms.values() for x in rs),
                   *(x for rs in sd.implied.values() for x in rs))
            self._gates[sd.name] = self._gate(rxs)
        self._cue_gate = self._gate([c.pattern for c in pack.cues])

    def _gate(self, rxs) -> re.Pattern | None:
        """One literal-alternation regex a text must match for any of ``rxs`` to (None: always)."""
        words: set[str] = set()
        gated = True
        for r in rxs:
            lits = self._lits[id(r)] = required_literals(r)
            self._need[id(r)] = _literal_regex(lits) if lits else None
            if lits:
                words.update(lits)
            else:
                gated = False
        if not gated or not words:
            return None
        return _literal_regex(words)

    def _finditer(self, r: re.Pattern, text: str, low: str):
        """``r.finditer(text)``, skipped when ``low`` lacks every literal ``r`` needs."""
        need = self._need.get(id(r))
        if need is not None and not need.search(low):
            return ()
        return r.finditer(text)

    # -- public
    def read(self, text: str, subject_words: frozenset[str] = frozenset()) -> Reading:
        t = normalize(text)
        parts = clauses(t)
        slots = tuple(self.slots(t, parts))
        cues = tuple(self.cues(parts))
        return Reading(t, slots, cues, self.anchors(t, subject_words), self.entity(t))

    def slots(self, t: str, parts: list[tuple[str, str]] | None = None,
              category: str | None = None) -> list[Slot]:
        parts = clauses(t) if parts is None else parts
        infos: list[_Clause] = []
        out: list[Slot] = []
        low = t.lower()
        for sd in self.pack.slots:
            if category and category != "general" and sd.category != category:
                continue
            gate = self._gates.get(sd.name)
            if gate is not None and not gate.search(low):
                continue                    # none of the slot's regexes can match this text
            if not infos:
                infos = [self._info(c, s) for c, s in parts]
            out.extend(self._slot(sd, infos))
        return _dedupe(out)

    def _info(self, clause: str, sentence: str) -> "_Clause":
        g = self.guards
        held, year = g.held(clause)
        return _Clause(clause, g.question(sentence), held, year, g.temporary(clause),
                       _any(g.g["replacement"], clause), _any(g.g["addition"], clause))

    def cues(self, parts: list[tuple[str, str]]) -> list[CueHit]:
        hits = []
        if self._cue_gate is not None and not any(self._cue_gate.search(c.lower()) for c, _ in parts):
            return hits
        for clause, sentence in parts:
            if self.guards.question(sentence):
                continue
            low = clause.lower()
            for cue in self.pack.cues:
                for m in self._finditer(cue.pattern, clause, low):
                    prefix = clause[:m.start()]
                    if (self.guards.hedged(prefix) or self.guards.third_party(prefix)
                            or self.guards.negated(prefix)):
                        continue
                    after = clause[m.end():]
                    after_words = _WORD.findall(re.split(r"\band\b", after)[0])
                    if m.groupdict().get("o"):
                        scope_words = _WORD.findall(m.group("o"))
                    elif len(after_words) < 2:
                        scope_words = _WORD.findall(clause)
                    else:
                        scope_words = _WORD.findall(m.group(0)) + after_words[:_MAX_SCOPE_WORDS]
                    hits.append(CueHit(
                        cue=m.group(0), scope=frozenset(_anchor_forms(scope_words)),
                        confidence=cue.confidence, new_value=_clean(m.groupdict().get("n")),
                        evidence=clause))
        return hits

    def entity(self, t: str) -> str | None:
        """The name a text opens a sentence with as its subject ("Tomasz is ...", "Priya's")."""
        for m in _NAMED_SUBJECT.finditer(t):
            name = m.group(1)
            low = name.lower()
            if low in self.pack.stopwords or low in self.pack.generic_words or low in _NOT_NAMES:
                continue
            return low
        return None

    def anchors(self, t: str, subject_words: frozenset[str] = frozenset()) -> frozenset[str]:
        """Salient words of a text: what a cue must mention to end this fact."""
        words = _WORD.findall(t)
        skip = {w.lower() for w in subject_words}
        if len(words) > 1 and words[0][:1].isupper() and (
                words[0].endswith("'s") or words[1].lower() in _SUBJECT_VERBS):
            skip.add(words[0].lower().removesuffix("'s"))
        keep = []
        for w in words:
            lw = w.lower().removesuffix("'s")
            if lw in skip or lw in self.pack.stopwords or lw in self.pack.generic_words:
                continue
            if len(lw) < 3 or (lw.isdigit() and len(lw) < 4):
                continue
            keep.append(w)
        return frozenset(_anchor_forms(keep))

    # -- one slot definition over all clauses
    def _slot(self, sd: SlotDef, infos: list["_Clause"]) -> list[Slot]:
        out: list[Slot] = []
        g = self.guards
        for info in infos:
            if info.question:
                continue
            clause, held, year, temporary = info.text, info.held, info.year, info.temporary
            replacement, addition = info.replacement, info.addition
            taken: list[tuple[int, int]] = []

            def ok(m: re.Match, allow_past: bool = False) -> tuple[bool, bool]:
                """(usable, negated) for a match in this clause."""
                prefix = clause[:m.start()]
                if g.hedged(prefix) or (not allow_past and g.past(prefix)):
                    return False, False
                if not sd.about_others and g.third_party(prefix):
                    return False, False
                return True, g.negated(prefix)

            def overlaps(m: re.Match) -> bool:
                return any(m.start() < e and s < m.end() for s, e in taken)

            low = clause.lower()
            for r in sd.end:
                for m in self._finditer(r, clause, low):
                    usable, neg = ok(m, allow_past=True)
                    if not usable or neg or overlaps(m):
                        continue
                    raw = _clean(m.groupdict().get("v"))
                    if raw is not None and not _valid(sd, raw, self.pack):
                        raw = None
                        if sd.mode != "progress" and "v" in m.groupdict() and m.group("v"):
                            continue
                    new = _clean(m.groupdict().get("n"))
                    if new is not None and not _valid(sd, new, self.pack):
                        new = None
                        if sd.mode == "progress":
                            continue
                    q = (m.groupdict().get("q") or "").strip().lower() or None
                    taken.append((m.start(), m.end()))
                    out.append(Slot(sd.name, sd.category, sd.mode, _key(sd, m, raw),
                                    self._value(sd, raw), raw, kind="end", polarity=-1,
                                    new_value=new, qualifier=q, evidence=clause))
            for r in sd.event:
                for m in self._finditer(r, clause, low):
                    usable, neg = ok(m)
                    if not usable or neg:
                        continue
                    delta = -1 if re.search(r"died|passed away|put down|ran away", m.group(0), re.I) else 1
                    out.append(Slot(sd.name, sd.category, sd.mode, _key(sd, m, None), None, None,
                                    kind="event", delta=delta, evidence=clause))
            for polarity, rxs in ((-1, sd.deny), (1, sd.assert_)):
                for r in rxs:
                    for m in self._finditer(r, clause, low):
                        usable, neg = ok(m)
                        if not usable or overlaps(m) or (temporary and sd.category == "location"):
                            continue
                        if sd.mode == "polar" and _any(g.g["restrict"], clause[m.end():]):
                            continue
                        gd = m.groupdict()
                        raw = _clean(gd.get("v"))
                        if sd.mode == "count" and polarity == -1:
                            raw = "0"
                        if raw is None or not _valid(sd, raw, self.pack):
                            continue
                        pol = -polarity if neg else polarity
                        taken.append((m.start(), m.end()))
                        out.append(Slot(sd.name, sd.category, sd.mode, _key(sd, m, raw),
                                        self._value(sd, raw), raw, polarity=pol,
                                        held_days=held, held_year=year,
                                        replacement=replacement,
                                        current=self._current(clause, m.start()),
                                        addition=addition, evidence=clause))
        out.extend(self._terms(sd, infos))
        return out

    def _terms(self, sd: SlotDef, infos: list["_Clause"]) -> list[Slot]:
        if not sd.terms:
            return []
        found = self._term_hits(sd, sd.terms, infos, implied=False)
        if not any(s.polarity > 0 for s in found) and sd.implied:
            found += self._term_hits(sd, sd.implied, infos, implied=True)
        return found

    def _term_hits(self, sd, table, infos: list["_Clause"], implied: bool) -> list[Slot]:
        g = self.guards
        out = []
        for info in infos:
            if info.question:
                continue
            clause, held, year = info.text, info.held, info.year
            low = clause.lower()
            for value, rxs in table.items():
                for r in rxs:
                    for m in self._finditer(r, clause, low):
                        prefix = clause[:m.start()]
                        if g.hedged(prefix) or g.past(prefix):
                            continue
                        if not implied and not sd.about_others and g.third_party(prefix):
                            continue
                        pol = -1 if g.negated(prefix) else 1
                        current = self._current(clause, m.start())
                        out.append(Slot(sd.name, sd.category, sd.mode, "", value, m.group(0),
                                        polarity=pol, held_days=held, held_year=year,
                                        implied=implied, current=current,
                                        evidence=clause))
        return out

    def _current(self, clause: str, pos: int) -> bool:
        """Whether the comma-separated part of the clause around ``pos`` says "now"."""
        start = clause.rfind(",", 0, pos) + 1
        end = clause.find(",", pos)
        return _any(self.guards.g["current"], clause[start:end if end >= 0 else len(clause)])

    def _value(self, sd: SlotDef, raw: str | None) -> str | None:
        if raw is None:
            return None
        if sd.value == "phone":
            return digits(raw)
        if sd.value == "number":
            n = to_number(raw)
            return None if n is None else f"{n:g}"
        if sd.mode == "polar":
            return _singular(_family(sd, raw))
        return norm_value(raw)


_SUBJECT_VERBS = {"is", "has", "was", "had", "works", "lives", "likes", "loves", "thinks",
                  "believes", "wants", "plans", "recently", "started", "got", "spends",
                  "enjoys", "feels", "finds", "asked", "took", "left", "lost", "won",
                  "participated", "organized", "worked", "signed", "discussed", "seems",
                  "plays", "prefers", "speaks", "drives", "adopted", "moved", "joined",
                  "married", "and", "said", "says", "went", "became", "decided"}


_NAMED_SUBJECT = re.compile(
    r"(?:^|[:.!?;]\s+)([A-Z][a-z\u00C0-\u024F]+)(?:'s\b|(?:\s+(?:just|recently|now|finally|also|still|"
    r"actually|really|has|have|had|never|always))?\s+(?:" + "|".join(sorted(_SUBJECT_VERBS - {"and"}))
    + r")\b)")
_NOT_NAMES = {"user", "she", "he", "they", "we", "it", "this", "that", "there", "here", "everyone",
              "someone", "nobody", "honestly", "actually", "also", "just", "mom", "mum", "dad",
              "mother", "father", "parents", "sister", "brother", "son", "daughter", "kids", "wife",
              "husband", "partner", "girlfriend", "boyfriend", "fiance", "fiancee", "friend", "boss",
              "neighbour", "neighbor", "baby", "family", "phone", "email", "number", "address",
              "title", "favorite", "favourite", "diet", "team", "religion", "car", "age", "height",
              "weight", "status", "name", "birthday", "everything", "nothing", "today", "yesterday"}


def _anchor_forms(words) -> list[str]:
    """Stemmed forms of words; e-mail addresses also give their local part and domain."""
    out = []
    for w in words:
        lw = w.lower().strip(".,'\"")
        if "@" in lw:
            local, _, domain = lw.partition("@")
            out.append(lw)
            out.extend(p for p in re.split(r"[.\-_]", local + "." + domain) if len(p) >= 3
                       and p not in {"com", "org", "net", "edu", "gmail", "mail"})
            continue
        if "-" in lw and not lw.startswith("-"):
            out.extend(stem(p) for p in lw.split("-") if len(p) >= 3)
        out.append(stem(lw))
    return out


def _dedupe(slots: list[Slot]) -> list[Slot]:
    seen = set()
    out = []
    for s in slots:
        k = (s.name, s.key, s.value, s.kind, s.polarity, s.new_value, s.delta)
        if k in seen:
            continue
        seen.add(k)
        out.append(s)
    return out


def extract_slots(text: str, pack: Pack, category: str | None = None) -> list[Slot]:
    """Slots of one text (a convenience over ``Extractor``)."""
    t = normalize(text)
    return Extractor(pack).slots(t, category=category)


def infer_category(text: str, pack: Pack) -> str | None:
    """The category a text is about: its first slot's, else the pack's keyword rules."""
    ex = Extractor(pack)
    t = normalize(text)
    for s in ex.slots(t):
        return s.category
    for cat, rxs in pack.category_words.items():
        if _any(rxs, t):
            return cat
    return None
