"""Read slots and transition cues out of a fact's free text, using a slot pack.

``extract("I moved to Surabaya last month")`` gives ``[Slot(name="city", value="surabaya",
...)]``. Matching is clause by clause so a hedge, negation or third party in one clause
("My sister's number is ...", "might move to Paris") never leaks into another. The
detector in ``overlay.detect.detector`` compares the slots of two facts; this module only
reads one text at a time and keeps no state.

Example:
    >>> from memwatch_overlay.overlay.detect.pack import load_pack
    >>> [(s.name, s.value) for s in extract_slots("Works at Google", load_pack())]
    [('employer', 'google')]
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from memwatch_overlay.overlay.detect.prefilter import Prefilter
from memwatch_overlay.overlay.detect.pack import Pack, SlotDef

_NUMBER_WORDS = {"no": 0, "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
                 "twelve": 12, "a": 1, "an": 1, "several": 3, "many": 5, "a few": 3,
                 "a couple of": 2, "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
                 "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10}
_ORDINAL_DIGITS = re.compile(r"(\d+)(?:st|nd|rd|th)")
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
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our)\b", re.IGNORECASE)
# a request to the assistant ("Ana got laid off today. Can you pause the transfer?"): the user speaking
_ASKS_ASSISTANT = re.compile(r"\b(?:can|could|would|will) you\b", re.IGNORECASE)
# a negation of a verb of telling, knowing or noticing before the match denies that, not the match
_NOT_TOLD = re.compile(r"\b(?:not|never)\s+(?:yet\s+|even\s+|really\s+)?(?:told|tell|said|say|asked|ask|mentioned|mention|"
                       r"informed|inform|known|know|knew|noticed|notice|realised|realized|realise|realize|"
                       r"heard|hear|seen|see|saw|met|meet)\b", re.IGNORECASE)
_FOR_ME = re.compile(r"\W*(?:\w+\W+){0,2}?(?:for|to|on|with) (?:me|us)\b", re.IGNORECASE)   # "... for me"
_MAX_SCOPE_WORDS = 3
_LOSS = re.compile(r"died|passed away|put down|ran away", re.I)     # an event that lowers a count
ALL = -1                      # a prefilter mask with every bit set: run every regex


# Slot, CueHit and Reading (and the detector's FactView and Contradiction) are records that
# are never changed once made (readings are cached and shared): every change is a new one
# (dataclasses.replace). They are not frozen=True, only for speed: a frozen dataclass's
# __init__ sets each field through a call of object.__setattr__, and a walk makes millions of
# them (6% of its instructions, stop 50; an __init__ writing __dict__ saved a third of that).
# unsafe_hash gives them the hash frozen did; tests/test_detect_records.py reads, compares and
# syncs with every record class refusing a change to a field it already holds.

@dataclass(unsafe_hash=True)
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


class _Clause:
    """A clause and the guard facts that hold for the whole of it.

    Each guard fact is computed once, when a match first needs it: most clauses that a
    slot's prefilter lets through still match nothing.
    """

    __slots__ = ("text", "silent", "mask", "_guards", "_held", "_temporary", "_replacement",
                 "_addition", "_once")

    def __init__(self, text: str, silent: bool, mask: int, guards: "_Guards"):
        self.text, self.silent, self.mask, self._guards = text, silent, mask, guards
        self._held = self._temporary = self._replacement = self._addition = self._once = None

    @property
    def held(self) -> float | None:
        if self._held is None:
            self._held = self._guards.held(self.text, self.mask)
        return self._held[0]

    @property
    def year(self) -> int | None:
        if self._held is None:
            self._held = self._guards.held(self.text, self.mask)
        return self._held[1]

    @property
    def lower_case(self) -> bool:
        """Written without capitals (casual chat): names may be lower case too."""
        return self.text == self.text.lower()

    @property
    def temporary(self) -> bool:
        if self._temporary is None:
            self._temporary = self._guards.temporary(self.text, self.mask)
        return self._temporary

    @property
    def once(self) -> bool:
        """A one-off exception ("an aisle seat this time", "just this once"): no preference changes."""
        if self._once is None:
            self._once = (self._guards.has("once", self.text, self.mask)
                          or self._guards.has("one_off", self.text, self.mask))
        return self._once

    @property
    def replacement(self) -> bool:
        if self._replacement is None:
            self._replacement = self._guards.has("replacement", self.text, self.mask)
        return self._replacement

    @property
    def addition(self) -> bool:
        if self._addition is None:
            self._addition = self._guards.has("addition", self.text, self.mask)
        return self._addition


@dataclass(unsafe_hash=True)
class CueHit:
    """A transition cue ("no longer", "sold", "-free") and the words in its scope."""

    cue: str
    scope: frozenset[str]
    confidence: float
    new_value: str | None
    evidence: str
    absent: bool = False            # the pack's `absent` cue: "sesame-free" (pack.Cue)


@dataclass(unsafe_hash=True)
class Reading:
    """Everything the detector needs from one text, computed once and cached."""

    text: str
    slots: tuple[Slot, ...]
    cues: tuple[CueHit, ...]
    anchors: frozenset[str]
    entity: str | None = None      # the person a text is about when it names one ("Priya ...")
    # what the text says the user is after (a plan, a search, training, an application): per
    # pursuit, the anchor forms of the words that follow it ("looking for a flat in kreuzberg")
    pursuits: tuple[frozenset[str], ...] = ()
    # the anchor forms of the sentences that report how something turned out ("passed", "is
    # over"), leaving out their hedged clauses ("passed the cake round, the PMP is next month")
    outcome: frozenset[str] = frozenset()
    # a clause opens with someone's name and verb before something the rules read ("Helen
    # handed in her notice"): the `named_subject` guard, which the text was not read with
    # (Extractor.read's names_others); read against an older fact that is not about the
    # person named, the text is read again with it (Detector.compare)
    names_someone: bool = False


# ---------------------------------------------------------------- text helpers

# compiled once: these run several times per text
_SPACES = re.compile(r"[ \t]+")
_QUOTES_PARENS = re.compile(r"[\"()]")
_NON_DIGIT = re.compile(r"\D")
_CLAUSE_PUNCT = re.compile(r"[,;:]")

def normalize(text: str) -> str:
    """Straight quotes, expanded contractions, single spaces."""
    t = (text or "").replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    t = t.replace("\u201d", '"').replace("\u00a0", " ")
    if "'" in t:                       # every contraction has an apostrophe
        for rx, rep in _CONTRACTIONS:
            t = rx.sub(rep, t)
    return _SPACES.sub(" ", t).strip()


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
            w = w[: -len(suf)]
            if suf in ("ing", "ers", "er", "ed") and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]              # swimming / swims, runner / runs
            return w
    return w


def norm_value(v: str | None) -> str:
    """Lower case, no leading determiners or trailing punctuation."""
    if v is None:
        return ""
    words = _QUOTES_PARENS.sub(" ", v.lower()).split()
    while words and words[0] in _DETERMINERS:
        words = words[1:]
    return " ".join(words).strip(" .,;:!'-")


def to_number(v: str | None) -> float | None:
    if v is None:
        return None
    v = v.strip().lower()
    if v in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[v])
    m = _ORDINAL_DIGITS.fullmatch(v)
    if m:
        return float(m.group(1))        # "my 5th marathon": the fifth one
    try:
        return float(v)
    except ValueError:
        return None


def digits(v: str) -> str:
    return _NON_DIGIT.sub("", v)


# ---------------------------------------------------------------- guards

def _recent(prefix: str, words: int = 5) -> str:
    """The last few words before a match, not crossing a comma."""
    tail = _CLAUSE_PUNCT.split(prefix)[-1]
    return " ".join(tail.split()[-words:])


def _any(rxs, text: str) -> bool:
    return any(r.search(text) for r in rxs)


def _merge(rxs) -> tuple[re.Pattern, ...]:
    """One regex for a list of guard regexes (named groups dropped); the list if that fails."""
    if len(rxs) < 2:
        return tuple(rxs)
    try:
        src = "|".join("(?:" + re.sub(r"\(\?P<\w+>", "(?:", r.pattern) + ")" for r in rxs)
        return (re.compile(src, rxs[0].flags),)
    except re.error:
        return tuple(rxs)


def _speaks(t: str) -> bool:
    """The text's speaker says I/me/my, or asks the assistant for something."""
    return _FIRST_PERSON.search(t) is not None or _ASKS_ASSISTANT.search(t) is not None


def prefilter_patterns(pack: Pack, guards: "_Guards | None" = None) -> list[re.Pattern]:
    """Every regex an Extractor's prefilter covers, in its order: the slots', the cues', the
    guards' (merged as _Guards merges them)."""
    guards = guards or _Guards(pack)
    return [r for sd in pack.slots for r in _slot_regexes(sd)] + [c.pattern for c in pack.cues] + guards.patterns()


class _Guards:
    """The pack's guard lists, each merged into one regex (one search instead of many).

    Every check takes the prefilter ``mask`` of the clause its text comes from (the text
    is the clause or a part of it): a guard whose required literals the clause lacks is
    not searched. The default mask, all bits set, searches always.
    """

    def __init__(self, pack: Pack):
        self.g = {name: _merge(rxs) for name, rxs in pack.guards.items() if name != "duration"}
        self.g["duration"] = pack.guards["duration"]     # read group by group, not merged
        self.bits = {name: ALL for name in self.g}       # set by Extractor when it prefilters
        self.duration_bits = tuple(ALL for _ in self.g["duration"])
        self.silent_bits = ALL                           # the guards silent() reads (forwarded, question, retraction)

    def patterns(self) -> list[re.Pattern]:
        return [r for rxs in self.g.values() for r in rxs]

    def use_prefilter(self, bit) -> None:
        """Take each guard's bits from a Prefilter (``bit(pattern)``) over ``patterns()``."""
        for name, rxs in self.g.items():
            self.bits[name] = 0
            for r in rxs:
                self.bits[name] |= bit(r)
        self.duration_bits = tuple(bit(r) for r in self.g["duration"])
        self.silent_bits = self.bits["forwarded"] | self.bits["question"] | self.bits["retraction"]

    def has(self, name: str, text: str, mask: int = ALL) -> bool:
        return bool(mask & self.bits[name]) and _any(self.g[name], text)

    def hedged(self, prefix: str, mask: int = ALL) -> bool:
        return self.has("hedge", prefix, mask)

    def temporary(self, clause: str, mask: int = ALL) -> bool:
        return self.has("temporary", clause, mask)

    def negated(self, prefix: str, mask: int = ALL) -> bool:
        """A negation in the last words before the match, not one that denies telling,
        knowing or thinking instead ("have not told my manager at Shopify")."""
        if not mask & self.bits["negation"]:
            return False
        recent = _recent(prefix)
        return _any(self.g["negation"], recent) and not _NOT_TOLD.search(recent)

    # Set by Extractor.read: whether a clause opening with someone's name is that person's news
    # (the `named_subject` guard), and whose names are the user's own.
    names_others = False
    own_names: frozenset[str] = frozenset()
    named_seen = False      # whether the named_subject guard matched (as it would, with names_others)

    def third_party(self, prefix: str, mask: int = ALL, m: re.Match | None = None) -> bool:
        return (self.has("third_party", prefix, mask) or (m is not None and self._named_other(prefix, mask, m))
                or self._others_clause(prefix, mask, m)) \
            and not self.has("first_person", prefix, mask)

    def _others_clause(self, prefix: str, mask: int, m: re.Match | None) -> bool:
        """A clause whose subject is "he", "she" or someone described ("the woman who runs the
        bakery": the `others_clause` guard) and that says no I/me/my ("he proposed and I said
        yes" is the user's news too): someone else's when read for others' names (names_others),
        as a named subject is; noted (named_seen) either way."""
        if not self.has("others_clause", prefix, mask) or (m is not None and _FIRST_PERSON.search(m.string)):
            return False
        self.named_seen = True
        return self.names_others

    def named_other(self, prefix: str, mask: int, m: re.Match) -> bool:
        """``_named_other`` where no first-person guard says the user is in it too."""
        return self._named_other(prefix, mask, m) and not self.has("first_person", prefix, mask)

    def _named_other(self, prefix: str, mask: int, m: re.Match) -> bool:
        """A clause opening with another person's name and verb ("Helen handed in her
        notice"), up to the end of the match ``m``, saying no I/me/my ("Stripe has hired
        me") nor followed by "for me" ("Ethiopian has overtaken Thai for me"), the name not
        the user's own nor what the match reads ("Leeds is home now"): true when read for
        others' names (names_others); noted (named_seen) either way."""
        match = m.group(0)
        upto = prefix + match
        if not self.has("named_subject", upto, mask) or _FIRST_PERSON.search(upto) \
                or _FOR_ME.match(m.string, m.end()):
            return False
        name = _WORD.search(upto)
        if name is not None:
            low = name.group(0).lower().removesuffix("'s")
            if low in self.own_names or _reads_name(low, match.lower()):
                return False        # the user's own name, or the name is what the match reads
        self.named_seen = True
        return self.names_others

    def past(self, prefix: str, mask: int = ALL) -> bool:
        return self.has("past", prefix, mask)

    def silent(self, parts: list[tuple[str, str]], masks: list[int] | None = None) -> set[str]:
        """The sentences of `parts` ((clause, sentence) pairs, in text order) that assert
        nothing: questions, and sentences taken back by themselves or by the sentence after
        them (the retraction guard), and every sentence of a forwarded message (the forwarded
        guard, on its first sentence). ``masks``: the clauses' prefilter masks; a sentence that
        is one clause whole is searched only for the guards its mask allows."""
        if masks and len(parts) == 1 and parts[0][0] == parts[0][1] and not masks[0] & self.silent_bits:
            return set()                # one sentence, one clause, none of the guards below in it
        mask_of: dict[str, int] = {}
        for (clause, sentence), m in zip(parts, masks or ()):
            if clause == sentence:
                mask_of[sentence] = m
        order = list(dict.fromkeys(s for _, s in parts))
        if order and self.has("forwarded", order[0], mask_of.get(order[0], ALL)):
            return set(order)           # someone else's message, forwarded: none of it is the user's
        out = {s for s in order if self.has("question", s, mask_of.get(s, ALL))}
        if self.g["retraction"]:
            retracts = [self.has("retraction", s, mask_of.get(s, ALL)) for s in order]
            for i, s in enumerate(order):
                if retracts[i] or (i + 1 < len(order) and retracts[i + 1]):
                    out.add(s)
        return out

    def held(self, clause: str, mask: int = ALL) -> tuple[float | None, int | None]:
        """How long the clause says its value has held: (days, since_year)."""
        for r, bit in zip(self.g["duration"], self.duration_bits):
            if not mask & bit:
                continue
            m = r.search(clause)
            if not m:
                continue
            gd = m.groupdict()
            if gd.get("y") and gd["y"].isdigit():
                return None, int(gd["y"])
            if gd.get("n") and gd.get("u"):
                # casefold: a unit matched ignoring case may be spelt "yearſ" or "YEARS"
                unit = _UNIT_DAYS.get(gd["u"].casefold().rstrip("s"))
                if unit is None:
                    continue
                n = to_number(gd["n"]) or 1
                return n * unit, None
            return 365.25 * 30, None          # "all my life"
        return None, None


# ---------------------------------------------------------------- extraction

def _clean(raw: str | None) -> str | None:
    if raw is None:
        return None
    v = raw.strip().strip(".,;:!?'\"()")
    return v or None


def _salient(word: str, pack: Pack) -> bool:
    """A word that can name what a pursuit is after: not a stop word, a generic word, a
    month or weekday, nor too short."""
    return (len(word) >= 3 and not word.isdigit() and word not in pack.stopwords
            and word not in pack.generic_words and word not in pack.value_stop and word not in _CALENDAR)


# a change said in the progressive: with a time still to come after it, a scheduled one (_scheduled)
_PROGRESSIVE = re.compile(r"\b(?:moving|relocating|starting|joining|leaving|quitting|switching|transferring)\b", re.I)
_STARTS_LATER = re.compile(r"\b(?:and|to|i|i'll|will) (?:start|begin)s? (?:there|work|the (?:job|role|position|new job)) ", re.I)
_PURSUIT_WORDS = 4      # what a pursuit is after: its first few salient words, up to a conjunction
_CONJUNCTION = re.compile(r"\b(?:and|but|while|because|so|though|although)\b", re.I)


def _name_end(sd: SlotDef, raw: str | None, info: "_Clause", pack: Pack) -> str | None:
    """Where a name ends. In a clause without capitals, at its first common word ("dundee gets
    so much more light" -> "dundee"): there, nothing says where a name ends. In a clause with
    them, before the lower-case words that trail its last capitalised (or numbered) word
    ("payslip from Accenture landed today" -> "Accenture"; "Bank of America", "Tesla Model 3"
    as they are). Other values as they are."""
    if raw is None or sd.value != "name":
        return raw
    words = raw.split()
    if not info.lower_case:
        last = max((i for i, w in enumerate(words) if not w[:1].islower()), default=-1)
        return " ".join(words[:last + 1]) if last >= 0 else raw
    for i, w in enumerate(words):
        if w.lower() in pack.stopwords or w.lower() in pack.generic_words:
            return " ".join(words[:i]) or None
    return raw


# a name written in lower case: letters only ("bristol", "st brendan's"; not "noorahmed.design")
_LOWER_NAME = re.compile(r"[^\W\d_]+(?:[ '-][^\W\d_]+)*")


def _valid(sd: SlotDef, raw: str, pack: Pack, lower_case: bool = False) -> bool:
    """Whether `raw` is a value of slot `sd`. A name must start with a capital letter or a
    digit, unless the text it came from is written all in lower case (`lower_case`: casual
    chat, "the new place in bristol"); then it must not be a word the pack knows as a
    common one (a stop word, a generic word)."""
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
        if first[:1].isupper() or first[:1].isdigit():
            return True
        return (lower_case and _LOWER_NAME.fullmatch(v) is not None and not any(
            w in pack.stopwords or w in pack.generic_words for w in v.split()))
    if sd.value == "phone":
        d = digits(raw)
        return 7 <= len(d) <= 15 and not re.fullmatch(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}", raw.strip())
    if sd.value == "number":
        return to_number(raw) is not None
    return True


def _family(sd: SlotDef, word: str | None) -> str:
    w = norm_value(word)
    merged = _families_regex(sd)
    if merged is not None:
        rx, names = merged
        m = rx.fullmatch(w)
        if m is not None:
            return names[m.lastindex - 1]
        if not w:
            return w
        # any word of the phrase ("swim race"): the first family, in order, that one matches
        found = [m.lastindex for m in map(rx.fullmatch, w.split()) if m is not None]
        return names[min(found) - 1] if found else w
    for fam, rxs in sd.families.items():
        if any(r.fullmatch(w) for r in rxs):
            return fam
    if not sd.families or not w:
        return w
    for fam, rxs in sd.families.items():     # any word of the phrase ("swim race")
        if any(r.fullmatch(tok) for tok in w.split() for r in rxs):
            return fam
    return w


def _families_regex(sd: SlotDef) -> tuple[re.Pattern, tuple[str, ...]] | None:
    """A slot's families as one regex whose group K is family K's regexes (in order), and the
    families' names: a fullmatch of it finds the first family any of whose regexes matches,
    as _family's loop does regex by regex. None (the loop) for a slot without families, or
    whose regexes have groups of their own or differ in flags. Built once per slot (kept on
    it, as Pack keeps its memos)."""
    if "_families_regex" in sd.__dict__:
        return sd.__dict__["_families_regex"]
    merged = None
    rxs = [r for family in sd.families.values() for r in family]
    if rxs and all(sd.families.values()) and len({r.flags for r in rxs}) == 1:
        source = "|".join("(" + "|".join(f"(?:{r.pattern})" for r in family) + ")"
                          for family in sd.families.values())
        try:
            rx = re.compile(source, rxs[0].flags)
        except re.error:
            rx = None
        if rx is not None and rx.groups == len(sd.families):
            merged = (rx, tuple(sd.families))
    sd.__dict__["_families_regex"] = merged
    return merged


def _key(sd: SlotDef, m: re.Match, value: str | None) -> str:
    gd = m.groupdict()
    if sd.mode == "polar":
        return _singular(_family(sd, value))
    if sd.mode == "count" or (sd.mode == "single" and gd.get("k")):
        return _family(sd, gd.get("k") or "")      # a level of what ("Grade 3 piano")
    return ""


def _singular(w: str) -> str:
    words = w.split()
    if words and len(words[-1]) > 3 and words[-1].endswith("s") and not words[-1].endswith("ss"):
        words[-1] = words[-1][:-1]
    return " ".join(words)


_PLANS_CACHE = 4096      # masks whose slot plans Extractor._plans_for keeps


class Extractor:
    """Reads slots and cues from texts with one compiled pack.

    A regex is run on a clause only if the clause contains one of its required literals
    (``slotpack.required_literals``). ``prefilter=False`` is the plain reference the fast
    path must match: it checks each regex's literals one by one and searches every guard.
    """

    def __init__(self, pack: Pack, prefilter: bool = True):
        self.pack = pack
        self._plain = not prefilter
        # compiled once per pack (a pack is read-only once loaded) and shared
        key = "_extractor_plain" if self._plain else "_extractor"
        parts = pack.__dict__.get(key)
        if parts is None:
            parts = pack.__dict__[key] = self._compile(pack, prefilter)
        self.guards, self._prefilter, self._guard_bits, self._plans, self._cue_plan, self._cue_bits = parts
        self._plans_of: dict[int, tuple] = {}       # _plans_for(): a text's mask -> its plans
        self._silent_of: list | None = None         # _silent(): the clauses last asked about
        self._silent_is: set[str] = set()

    @staticmethod
    def _compile(pack: Pack, prefilter: bool) -> tuple:
        guards = _Guards(pack)
        pf = Prefilter(prefilter_patterns(pack, guards))
        bit = pf.bit
        guard_bits = 0
        if prefilter:
            guards.use_prefilter(bit)
            for r in guards.patterns():
                guard_bits |= bit(r)
        plans = [(sd, _SlotPlan(sd, bit)) for sd in pack.slots]
        cue_plan = tuple((bit(c.pattern), c) for c in pack.cues)
        cue_bits = 0
        for b, _ in cue_plan:
            cue_bits |= b
        return guards, pf, guard_bits, plans, cue_plan, cue_bits

    def _masks(self, parts: list[tuple[str, str]]) -> list[int]:
        """Per clause, the bits of the regexes that may match it (or a part of it).

        Guards are prefiltered only in clauses of printable ASCII without double spaces.
        Elsewhere they are always searched: the negation guard reads the last words of a
        prefix re-joined by single spaces. A clause with any non-ASCII letter runs every
        regex: ignoring case matches letters that ``lower()`` does not map to the literals
        ("ſ" for "s", the Kelvin sign for "k"), so no literal test can rule a regex out.
        """
        if self._plain:
            return [self._prefilter.mask_one_by_one(c.lower()) if c.isascii() else ALL for c, _ in parts]
        mask, guards = self._prefilter.mask, self._guard_bits
        return [(mask(c.lower()) if _plain_ascii(c) else mask(c.lower()) | guards) if c.isascii() else ALL
                for c, _ in parts]

    # -- public
    def read(self, text: str, subject_words: frozenset[str] = frozenset(), names_others: bool = False,
             known: frozenset[str] = frozenset()) -> Reading:
        """The reading of ``text``. ``names_others``: in a text that says I/me/my, a clause
        opening with a name and its verb is that person's, not the user's (the
        `named_subject` guard), unless the name is one of ``subject_words`` or ``known``
        (lower case: names the older fact mentions): how a newer text is read against an
        older fact (Detector.compare)."""
        g = self.guards
        t = normalize(text)
        # only a speaker who says I/me/my, or asks the assistant for something, reports someone
        # else's news by their name: a text in the third person ("Priya moved to Leeds") is a
        # memory about the user
        # (searched for only where it matters: read for others' names, or a name opens a clause)
        g.names_others = names_others and _speaks(t)
        g.own_names = frozenset(w.lower() for w in subject_words) | known
        g.named_seen = False
        try:
            parts = clauses(t)
            masks = self._masks(parts)
            slots = tuple(self.slots(t, parts, masks=masks))
            cues = tuple(self.cues(parts, masks))
            pursuits, outcome = self.pursuits(parts, masks)
            named = g.named_seen
        finally:
            g.names_others, g.own_names, g.named_seen = False, frozenset(), False
        return Reading(t, slots, cues, self.anchors(t, subject_words), self.entity(t), pursuits, outcome,
                       names_someone=named and not names_others and _speaks(t))

    def pursuits(self, parts: list[tuple[str, str]], masks: list[int] | None = None
                 ) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
        """(pursuits, outcome) of a text's clauses: what the user is after, as the anchor forms
        of the words after a `pursuit` guard ("training for the chicago marathon"), and the
        anchor forms of the sentences with a clause reporting an outcome (`outcome` guard: "the
        medal", "passed", "hunt is over") that is not hedged, negated nor someone else's, but
        for their hedged clauses. Questions and retracted sentences say neither; nor does a
        pursuit negated ("not looking for a flat") or someone else's."""
        g = self.guards
        masks = self._masks(parts) if masks is None else masks
        want, done = g.bits["pursuit"], g.bits["outcome"]
        if not any(m & (want | done) for m in masks):
            return (), frozenset()
        silent = self._silent(parts, masks)
        found: list[frozenset[str]] = []
        reported: set[str] = set()           # sentences with an outcome
        for (clause, sentence), mask in zip(parts, masks):
            if sentence in silent:
                continue
            if mask & want:
                for r in g.g["pursuit"]:
                    m = r.search(clause)
                    if m is None:
                        continue
                    prefix = clause[:m.start()]
                    if g.third_party(prefix, mask, m) or g.negated(prefix, mask):
                        continue
                    after = _CONJUNCTION.split(clause[m.end():], 1)[0]     # "... and has been sending"
                    words = [w for w in _WORD.findall(after)
                             if _salient(w.lower().removesuffix("'s"), self.pack)][:_PURSUIT_WORDS]
                    if words:
                        found.append(frozenset(anchor_forms(words)))
            if sentence not in reported and mask & done and any(
                    not (g.hedged(clause[:m.start()], mask) or g.third_party(clause[:m.start()], mask, m)
                         or g.negated(clause[:m.start()], mask))
                    for r in g.g["outcome"] for m in r.finditer(clause)):
                reported.add(sentence)
        if not reported:
            return tuple(found), frozenset()
        words = [w for (clause, sentence), mask in zip(parts, masks)
                 if sentence in reported and not g.hedged(clause, mask) for w in _WORD.findall(clause)
                 if _salient(w.lower().removesuffix("'s"), self.pack)]
        return tuple(found), frozenset(anchor_forms(words))

    def _silent(self, parts: list[tuple[str, str]], masks: list[int]) -> set[str]:
        """guards.silent(parts, masks), computed once for the clauses read() hands its three
        readers (slots, cues, pursuits): the last list asked about is kept, and with it its answer."""
        if self._silent_of is not parts:
            self._silent_of, self._silent_is = parts, self.guards.silent(parts, masks)
        return self._silent_is

    def slots(self, t: str, parts: list[tuple[str, str]] | None = None,
              category: str | None = None, masks: list[int] | None = None) -> list[Slot]:
        parts = clauses(t) if parts is None else parts
        masks = self._masks(parts) if masks is None else masks
        anywhere = 0
        for m in masks:
            anywhere |= m
        infos: list[_Clause] = []
        out: list[Slot] = []
        for sd, plan in self._plans_for(anywhere):
            if category and category != "general" and sd.category != category:
                continue
            if not infos:
                silent = self._silent(parts, masks)
                infos = [_Clause(c, s in silent, m, self.guards) for (c, s), m in zip(parts, masks)]
            out.extend(self._slot(sd, plan, infos))
        return _dedupe(out)

    def _plans_for(self, anywhere: int) -> tuple:
        """The slot plans of which some regex may match a text whose clauses' masks, or-ed, are
        ``anywhere`` (in plan order). Texts of one kind share a mask: kept per mask."""
        got = self._plans_of.get(anywhere)
        if got is None:
            if len(self._plans_of) >= _PLANS_CACHE:
                self._plans_of.clear()
            got = self._plans_of[anywhere] = tuple((sd, plan) for sd, plan in self._plans if anywhere & plan.bits)
        return got

    def cues(self, parts: list[tuple[str, str]], masks: list[int] | None = None) -> list[CueHit]:
        hits = []
        masks = self._masks(parts) if masks is None else masks
        if not any(m & self._cue_bits for m in masks):
            return hits
        silent = self._silent(parts, masks)
        for (clause, sentence), mask in zip(parts, masks):
            if sentence in silent:
                continue
            for bit, cue in self._cue_plan:
                if not mask & bit:
                    continue
                for m in cue.pattern.finditer(clause):
                    prefix = clause[:m.start()]
                    if (self.guards.hedged(prefix, mask) or self.guards.third_party(prefix, mask, m)
                            or self.guards.negated(prefix, mask) or self.guards.has("one_off", clause, mask)
                            or (cue.weak and self.guards.temporary(clause[m.end():], mask))):
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
                        cue=m.group(0), scope=frozenset(anchor_forms(scope_words)),
                        confidence=cue.confidence, new_value=_clean(m.groupdict().get("n")),
                        evidence=clause, absent=cue.absent))
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

    @staticmethod
    def names_a_word(t: str, subject_words: frozenset[str]) -> bool:
        """True when a word of ``t`` is one of ``subject_words``: only then does ``anchors``
        depend on them (``read(t, subject_words)`` is otherwise ``read(t)``)."""
        skip = {w.lower() for w in subject_words}
        return bool(skip) and any(w.lower().removesuffix("'s") in skip for w in _WORD.findall(t))

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
        return frozenset(anchor_forms(keep))

    # -- one slot definition over all clauses
    def _slot(self, sd: SlotDef, plan: "_SlotPlan", infos: list["_Clause"]) -> list[Slot]:
        out: list[Slot] = []
        for info in infos:
            mask = info.mask
            if info.silent or not mask & plan.bits:
                continue                # no regex of this slot can match this clause
            taken: list[tuple[int, int]] = []
            if mask & plan.end_bits:
                self._ends(sd, plan.end, info, taken, out)
            if mask & plan.event_bits:
                self._events(sd, plan.event, info, out)
            if mask & plan.deny_bits:
                self._asserts(sd, plan.deny, -1, info, taken, out)
            if mask & plan.assert_bits:
                self._asserts(sd, plan.assert_, 1, info, taken, out)
        out.extend(self._terms(sd, plan, infos))
        return out

    def _usable(self, sd: SlotDef, info: "_Clause", m: re.Match,
                allow_past: bool = False) -> tuple[bool, bool]:
        """(usable, negated) for a match in this clause."""
        g, mask = self.guards, info.mask
        prefix = info.text[:m.start()]
        if g.hedged(prefix, mask) or (not allow_past and g.past(prefix, mask)):
            return False, False
        if not sd.about_others and g.third_party(prefix, mask, m):
            return False, False
        return True, g.negated(prefix, mask)

    def _ends(self, sd: SlotDef, rxs, info: "_Clause", taken: list, out: list[Slot]) -> None:
        clause, mask = info.text, info.mask
        for bit, r in rxs:
            if not mask & bit:
                continue
            for m in r.finditer(clause):
                usable, neg = self._usable(sd, info, m, allow_past=True)
                if not usable or neg or _overlaps(taken, m) or self._scheduled(info, m):
                    continue
                raw = _name_end(sd, _clean(m.groupdict().get("v")), info, self.pack)
                if raw is not None and not _valid(sd, raw, self.pack, info.lower_case):
                    raw = None
                    if sd.mode != "progress" and "v" in m.groupdict() and m.group("v"):
                        continue
                new = _name_end(sd, _clean(m.groupdict().get("n")), info, self.pack)
                if new is not None and not _valid(sd, new, self.pack, info.lower_case):
                    new = None
                    if sd.mode == "progress":
                        continue
                q = (m.groupdict().get("q") or "").strip().lower() or None
                taken.append((m.start(), m.end()))
                out.append(Slot(sd.name, sd.category, sd.mode, _key(sd, m, raw),
                                self._value(sd, raw), raw, kind="end", polarity=-1,
                                new_value=new, qualifier=q, evidence=clause))

    def _events(self, sd: SlotDef, rxs, info: "_Clause", out: list[Slot]) -> None:
        clause, mask = info.text, info.mask
        for bit, r in rxs:
            if not mask & bit:
                continue
            for m in r.finditer(clause):
                usable, neg = self._usable(sd, info, m)
                if not usable or neg or self._pending(sd, info, m):
                    continue
                delta = -1 if _LOSS.search(m.group(0)) else 1
                out.append(Slot(sd.name, sd.category, sd.mode, _key(sd, m, None), None, None,
                                kind="event", delta=delta, evidence=clause))

    def _asserts(self, sd: SlotDef, rxs, polarity: int, info: "_Clause", taken: list,
                 out: list[Slot]) -> None:
        clause, mask = info.text, info.mask
        for bit, r in rxs:
            if not mask & bit:
                continue
            for m in r.finditer(clause):
                usable, neg = self._usable(sd, info, m)
                if not usable or _overlaps(taken, m) or (sd.category == "location" and info.temporary):
                    continue
                if self._scheduled(info, m, starts_later=True):
                    continue
                if (sd.category == "preference" and info.once) or self._pending(sd, info, m):
                    continue
                if sd.mode == "polar" and self.guards.has("restrict", clause[m.end():], mask):
                    continue
                gd = m.groupdict()
                raw = _name_end(sd, _clean(gd.get("v")), info, self.pack)
                if sd.mode == "count" and polarity == -1:
                    raw = "0"
                if raw is None or not _valid(sd, raw, self.pack, info.lower_case):
                    continue
                pol = -polarity if neg else polarity
                taken.append((m.start(), m.end()))
                out.append(Slot(sd.name, sd.category, sd.mode, _key(sd, m, raw),
                                self._value(sd, raw), raw, polarity=pol,
                                held_days=info.held, held_year=info.year,
                                replacement=info.replacement,
                                current=self._current(clause, m.start(), mask),
                                addition=info.addition, evidence=clause))

    def _terms(self, sd: SlotDef, plan: "_SlotPlan", infos: list["_Clause"]) -> list[Slot]:
        if not plan.terms:
            return []
        found = self._term_hits(sd, plan.terms, plan.terms_bits, infos, implied=False)
        if not any(s.polarity > 0 for s in found) and plan.implied:
            found += self._term_hits(sd, plan.implied, plan.implied_bits, infos, implied=True)
        return found

    def _term_hits(self, sd, table, bits: int, infos: list["_Clause"], implied: bool) -> list[Slot]:
        g = self.guards
        out = []
        for info in infos:
            clause, mask = info.text, info.mask
            if info.silent or not mask & bits or (sd.category == "preference" and info.once):
                continue
            for value, rxs in table:
                for bit, r in rxs:
                    if not mask & bit:
                        continue
                    for m in r.finditer(clause):
                        prefix = clause[:m.start()]
                        if g.hedged(prefix, mask) or g.past(prefix, mask):
                            continue
                        if not implied and not sd.about_others and g.third_party(prefix, mask, m):
                            continue
                        # an implied term ("got a new boyfriend") in a clause that opens with
                        # someone else's name is that person's news ("Flora's got a new boyfriend")
                        if implied and not sd.about_others and g.named_other(prefix, mask, m):
                            continue
                        # "the Tories lost me": the term names what the user turned from
                        pol = -1 if g.negated(prefix, mask) or g.has("turned", clause[m.end():], mask) else 1
                        current = self._current(clause, m.start(), mask)
                        out.append(Slot(sd.name, sd.category, sd.mode, "", value, m.group(0),
                                        polarity=pol, held_days=info.held, held_year=info.year,
                                        implied=implied, current=current,
                                        evidence=clause))
        return out

    def _scheduled(self, info: "_Clause", m: re.Match, starts_later: bool = False) -> bool:
        """A change said in the progressive with a time still to come after it ("moving to
        Melbourne on the 3rd of September", "starting at Stripe in two weeks"); with
        ``starts_later`` (a new value, not an end), also one whose start is still to come ("accepted
        an offer from Siemens and start there on 2 September"; an end stays an end: "left Google and
        start at Stripe on Monday")."""
        after = info.text[m.end():]
        if _PROGRESSIVE.search(m.group(0)) is not None:
            return self.guards.has("scheduled", after, info.mask)
        later = _STARTS_LATER.search(after) if starts_later else None
        return later is not None and self.guards.has("scheduled", after[later.end():], info.mask)

    def _pending(self, sd: SlotDef, info: "_Clause", m: re.Match) -> bool:
        """A count not reached yet: "grandbaby number five is due in March"."""
        return sd.mode == "count" and self.guards.has("pending", info.text[m.end():], info.mask)

    def _current(self, clause: str, pos: int, mask: int = ALL) -> bool:
        """Whether the comma-separated part of the clause around ``pos`` says "now"."""
        start = clause.rfind(",", 0, pos) + 1
        end = clause.find(",", pos)
        return self.guards.has("current", clause[start:end if end >= 0 else len(clause)], mask)

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
        if sd.families:
            return _family(sd, raw)             # one value however written ("français")
        return norm_value(raw)


def _slot_regexes(sd: SlotDef) -> tuple[re.Pattern, ...]:
    return (*sd.assert_, *sd.deny, *sd.end, *sd.event,
            *(x for rs in sd.terms.values() for x in rs),
            *(x for rs in sd.implied.values() for x in rs))


class _SlotPlan:
    """A slot's regexes, each paired with its prefilter bit, in the order they are run."""

    def __init__(self, sd: SlotDef, bit):
        def paired(rxs):
            return tuple((bit(r), r) for r in rxs)
        self.end, self.event = paired(sd.end), paired(sd.event)
        self.deny, self.assert_ = paired(sd.deny), paired(sd.assert_)
        self.terms = tuple((value, paired(rxs)) for value, rxs in sd.terms.items())
        self.implied = tuple((value, paired(rxs)) for value, rxs in sd.implied.items())

        def bits(rxs) -> int:
            out = 0
            for r in rxs:
                out |= bit(r)
            return out
        self.end_bits, self.event_bits = bits(sd.end), bits(sd.event)
        self.deny_bits, self.assert_bits = bits(sd.deny), bits(sd.assert_)
        self.terms_bits = bits(r for rs in sd.terms.values() for r in rs)
        self.implied_bits = bits(r for rs in sd.implied.values() for r in rs)
        self.bits = bits(_slot_regexes(sd))


def _plain_ascii(clause: str) -> bool:
    return clause.isascii() and clause.isprintable() and "  " not in clause


def _reads_name(name: str, match: str) -> bool:
    """Whether ``name`` is a word of what a match reads ("Leeds is home now"), not only part of an
    e-mail address or a handle in it ("dorota.nowak@vistula.pl" is Dorota's, not a value naming her)."""
    return re.search(rf"(?<![\w.@-]){re.escape(name)}(?![\w@-]|\.\w)", match) is not None


def _overlaps(taken: list[tuple[int, int]], m: re.Match) -> bool:
    if not taken:               # (most matches: no generator made for nothing)
        return False
    start, end = m.span()
    return any(start < e and s < end for s, e in taken)


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


def anchor_forms(words) -> list[str]:
    """Stemmed forms of words; e-mail addresses also give their local part and domain."""
    out = []
    for w in words:
        out.extend(_word_forms(w))
    return out


def named_forms(text: str) -> frozenset[str]:
    """The anchor forms (``anchor_forms``) of the words of ``text`` that look like a name:
    capitalised where a sentence does not begin ("Boyfriend: Kai", "I live in Shoreditch";
    not "Note 3: ..." nor "Works at ..."), or an address."""
    out: set[str] = set()
    for m in _WORD.finditer(text):
        w = m.group()
        if "@" in w or (w[0].isupper() and not _opens_sentence(text, m.start()) and w.lower() not in _CALENDAR):
            out.update(_word_forms(w))
    return frozenset(out)


# capitalised by convention, not names of anything a memory holds ("finally Friday")
_CALENDAR = frozenset("""monday tuesday wednesday thursday friday saturday sunday january february march
april may june july august september october november december""".split())


def _opens_sentence(text: str, at: int) -> bool:
    """Whether the word at ``at`` is the first of the text or follows a sentence's end."""
    before = text[:at].rstrip(" \t\"'(“‘")
    return not before or before[-1] in ".!?\n"


@functools.lru_cache(maxsize=4096)
def _word_forms(w: str) -> tuple[str, ...]:
    """``anchor_forms`` of one word (words recur from text to text: computed once)."""
    out = []
    lw = w.lower().strip(".,'\"")
    if "@" in lw:
        local, _, domain = lw.partition("@")
        out.append(lw)
        out.extend(p for p in re.split(r"[.\-_]", local + "." + domain) if len(p) >= 3
                   and p not in {"com", "org", "net", "edu", "gmail", "mail"})
        return tuple(out)
    if "-" in lw and not lw.startswith("-"):
        out.extend(stem(p) for p in lw.split("-") if len(p) >= 3)
    out.append(stem(lw))
    return tuple(out)


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
