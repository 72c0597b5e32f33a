"""Load, validate and compile a slot pack (rules/slots.toml or a user file).

A slot pack is data, not code: word lists, guards, slot definitions and transition
cues that tell the contradiction detector how to read free-text facts. The format is
documented at the top of the shipped ``rules/slots.toml``. Every validation error is
a ``ConfigError`` naming the offending key (``slots[3].assert[1]``), so a broken user
pack fails loudly at load time rather than silently matching nothing.

Example:
    >>> pack = load_pack()              # the default pack shipped in the package
    >>> pack.slot("employer").category
    'employment'
"""
from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from memwatch_overlay.core.errors import ConfigError

DEFAULT_PACK = "slots.toml"
CATEGORIES = ("employment", "location", "contact", "preference", "relationship",
              "skill", "belief", "fact", "general")
MODES = ("single", "multi", "polar", "count", "number", "progress")
VALUE_KINDS = ("name", "phrase", "occupation", "phone", "email", "number", "term")
GUARDS = ("hedge", "temporary", "negation", "third_party", "named_subject", "first_person", "past", "addition",
          "replacement", "question", "retraction", "duration", "current", "restrict", "once", "pending",
          "pursuit", "outcome", "scheduled", "turned", "one_off", "avoids", "forwarded", "others_clause")
# How many tokens a captured value may span; values stop earlier at a `value_stop` word.
MAX_VALUE_TOKENS = 5
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOKEN = r"[\w][\w&'.@+-]*"
_FLAGS = re.IGNORECASE | re.UNICODE


class LazyPattern:
    """A regex compiled the first time it is used (``search``, ``finditer`` ...).

    The shipped pack holds ~450 regexes and a text reaches few of them (the prefilter
    rules the rest out), so compiling them all up front cost most of building a detector.
    ``pattern`` and ``flags`` are there without compiling (the prefilter reads only those).
    After the first call the compiled regex's own methods are bound on the instance, so a
    lazy pattern then costs what a compiled one does. ``compiled`` counts compilations
    (the tests read it).
    """

    compiled = 0
    _METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")

    def __init__(self, pattern: str, flags: int, literal_source: str | None = None):
        self.pattern, self.flags = pattern, flags
        # the same regex with the value placeholders' stop-word look-aheads left empty: it
        # has the same required literals (see required_literals) and is far shorter to parse
        self.literal_source = literal_source or pattern

    def regex(self) -> re.Pattern:
        """The compiled regex (compiled now if it was not yet)."""
        rx = self.__dict__.get("_rx")
        if rx is None:
            rx = self.__dict__["_rx"] = re.compile(self.pattern, self.flags)
            LazyPattern.compiled += 1
            for name in self._METHODS:            # instance attributes win over the methods below
                self.__dict__[name] = getattr(rx, name)
        return rx

    def __getattr__(self, name: str):
        # only until the first call: regex() then binds the methods on the instance
        if name in self._METHODS or name in ("groupindex", "groups"):
            return getattr(self.regex(), name)
        raise AttributeError(name)

    def __reduce__(self):
        return (LazyPattern, (self.pattern, self.flags, self.literal_source))

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"


@dataclass(frozen=True)
class SlotDef:
    """One slot: what it is, which memory keys name it, and the regexes that read it."""

    name: str
    category: str
    mode: str
    value: str
    keys: tuple[str, ...]
    assert_: tuple[re.Pattern, ...]
    deny: tuple[re.Pattern, ...]
    end: tuple[re.Pattern, ...]
    event: tuple[re.Pattern, ...]
    terms: dict[str, tuple[re.Pattern, ...]]
    implied: dict[str, tuple[re.Pattern, ...]]
    families: dict[str, tuple[re.Pattern, ...]]
    reject: tuple[re.Pattern, ...]
    compatible: tuple[frozenset[str], ...]
    about_others: bool
    confidence: float
    tolerance: float
    per_year: float
    unit: str = ""                    # number mode: how a new value is written ("95 wpm")
    yes: str = "{v}"                  # polar mode: how a held / an ended value is written
    no: str = "not {v}"

    def matches_key(self, key: str | None) -> bool:
        """True when a store's key (e.g. ``job_title``) names this slot."""
        if not key:
            return False
        k = key.strip().lower()
        return any(fnmatch.fnmatchcase(k, g) for g in self.keys)


@dataclass(frozen=True)
class Cue:
    """A transition cue that ends whatever the old memory said about words in its scope."""

    pattern: re.Pattern
    confidence: float
    # weak: a weak cue ("left") ends nothing when the `temporary` guard marks what follows it ("left
    # Mochi at a dog hotel for three days"); absent: it says the thing is absent ("sesame-free"), which ends
    # having it but restates an older fact of avoiding it (the `avoids` guard, Detector._cues)
    weak: bool = False
    absent: bool = False


@dataclass
class Pack:
    """A compiled slot pack."""

    source: str
    slots: list[SlotDef]
    guards: dict[str, tuple[re.Pattern, ...]]
    cues: list[Cue]
    stopwords: frozenset[str]
    generic_words: frozenset[str]
    generic_keys: tuple[str, ...]
    value_stop: frozenset[str]
    value_reject: frozenset[str]
    category_words: dict[str, tuple[re.Pattern, ...]] = field(default_factory=dict)

    def slot(self, name: str) -> SlotDef:
        for s in self.slots:
            if s.name == name:
                return s
        raise KeyError(name)

    def slot_for_key(self, key: str | None) -> SlotDef | None:
        """The slot a store key names, or None (unknown or generic key)."""
        if not key:
            return None
        memo = self.__dict__.setdefault("_slot_for_key", {})
        if key not in memo:
            memo[key] = None if self.is_generic_key(key) else next(
                (s for s in self.slots if s.matches_key(key)), None)
        return memo[key]

    def is_generic_key(self, key: str) -> bool:
        memo = self.__dict__.setdefault("_generic_key", {})
        if key not in memo:
            k = key.strip().lower()
            memo[key] = bool(re.fullmatch(r"[0-9a-f-]{8,}|\d+", k)      # uuids, row numbers
                             or any(fnmatch.fnmatchcase(k, g) for g in self.generic_keys))
        return memo[key]


def load_pack(path: str | Path | None = None) -> Pack:
    """Load the default pack, or the TOML file at ``path``; raise ConfigError when invalid.

    The default pack is compiled once per process and shared (treat it as read-only).
    """
    if path is None:
        return _default_pack()
    return _load_pack(path)


@functools.lru_cache(maxsize=1)
def _default_pack() -> Pack:
    # the shipped pack is known to compile (tests compile every regex of it): its regexes
    # are compiled when first used; a user's pack is compiled in full to fail at load time
    return _load_pack(None, lazy=True)


def _load_pack(path: str | Path | None, lazy: bool = False) -> Pack:
    if path is None:
        text = resources.files("memwatch_overlay.rules").joinpath(DEFAULT_PACK).read_text("utf-8")
        where = f"rules/{DEFAULT_PACK}"
    else:
        p = Path(path)
        try:
            text = p.read_text("utf-8")
        except OSError as e:
            raise ConfigError(f"cannot read slot pack: {e.strerror or e}", path=str(p)) from None
        where = str(p)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid TOML: {e}", path=where) from None
    return compile_pack(data, where, lazy=lazy)


def compile_pack(data: dict[str, Any], where: str = "<pack>", lazy: bool = False) -> Pack:
    """Validate a parsed pack and compile its regexes.

    ``lazy=True`` leaves each regex to be compiled when first used (``LazyPattern``): only
    for a pack known to be valid, since a bad regex then fails at its first use.
    """
    _only(data, {"version", "lexicon", "guards", "slots", "cues", "anchors", "categories"}, "", where)
    if data.get("version") != 1:
        raise ConfigError(f"unsupported version {data.get('version')!r} (expected 1)", "version", where)
    lex = _lexicon(data.get("lexicon", {}), where)
    anchors = data.get("anchors", {})
    _only(anchors, {"stopwords", "generic_words", "generic_keys", "value_stop", "value_reject"},
          "anchors.", where)
    words = {k: frozenset(w.lower() for w in _strings(anchors.get(k, []), f"anchors.{k}", where))
             for k in ("stopwords", "generic_words", "value_stop", "value_reject")}
    generic_keys = tuple(k.lower() for k in _strings(anchors.get("generic_keys", []),
                                                      "anchors.generic_keys", where))
    builtins = _builtins(words["value_stop"], lex.get("occupation"))
    # the stop words sit only in negative look-aheads, which required_literals skips
    skeleton = _builtins(frozenset(), lex.get("occupation")) if lazy else builtins

    def rx(pattern: Any, fld: str) -> re.Pattern:
        if not isinstance(pattern, str) or not pattern.strip():
            raise ConfigError("must be a non-empty regex string", fld, where)
        expanded = _expand(pattern, lex, builtins, fld, where)
        if lazy:
            return LazyPattern(expanded, _FLAGS,      # type: ignore[return-value]
                               _expand(pattern, lex, skeleton, fld, where))
        try:
            return re.compile(expanded, _FLAGS)
        except re.error as e:
            raise ConfigError(f"bad regex: {e}", fld, where) from None

    def rxs(value: Any, fld: str) -> tuple[re.Pattern, ...]:
        return tuple(rx(p, f"{fld}[{i}]") for i, p in enumerate(_list(value, fld, where)))

    guards_raw = data.get("guards", {})
    _only(guards_raw, set(GUARDS), "guards.", where)
    guards = {g: rxs(guards_raw.get(g, []), f"guards.{g}") for g in GUARDS}

    slots = []
    seen = set()
    for i, raw in enumerate(_list(data.get("slots", []), "slots", where)):
        f = f"slots[{i}]"
        if not isinstance(raw, dict):
            raise ConfigError("must be a table", f, where)
        _only(raw, {"name", "category", "mode", "value", "keys", "assert", "deny", "end", "event",
                    "terms", "implied", "families", "reject", "compatible", "about_others", "confidence",
                    "tolerance", "per_year", "unit", "yes", "no"}, f + ".", where)
        name = raw.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            raise ConfigError("must be a lower_snake_case string", f"{f}.name", where)
        if name in seen:
            raise ConfigError(f"duplicate slot name {name!r}", f"{f}.name", where)
        seen.add(name)
        cat = raw.get("category")
        if cat not in CATEGORIES:
            raise ConfigError(f"must be one of {', '.join(CATEGORIES)}", f"{f}.category", where)
        mode = raw.get("mode", "single")
        if mode not in MODES:
            raise ConfigError(f"must be one of {', '.join(MODES)}", f"{f}.mode", where)
        kind = raw.get("value", "phrase")
        if kind not in VALUE_KINDS:
            raise ConfigError(f"must be one of {', '.join(VALUE_KINDS)}", f"{f}.value", where)
        slots.append(SlotDef(
            name=name, category=cat, mode=mode, value=kind,
            keys=tuple(k.lower() for k in _strings(raw.get("keys", []), f"{f}.keys", where)),
            assert_=rxs(raw.get("assert", []), f"{f}.assert"),
            deny=rxs(raw.get("deny", []), f"{f}.deny"),
            end=rxs(raw.get("end", []), f"{f}.end"),
            event=rxs(raw.get("event", []), f"{f}.event"),
            terms=_table_of_rxs(raw.get("terms", {}), f"{f}.terms", where, rxs),
            implied=_table_of_rxs(raw.get("implied", {}), f"{f}.implied", where, rxs),
            families=_table_of_rxs(raw.get("families", {}), f"{f}.families", where, rxs),
            reject=rxs(raw.get("reject", []), f"{f}.reject"),
            compatible=_groups(raw.get("compatible", []), f"{f}.compatible", where),
            about_others=_bool(raw.get("about_others", False), f"{f}.about_others", where),
            confidence=_number(raw.get("confidence", 0.85), f"{f}.confidence", where, 0, 1),
            tolerance=_number(raw.get("tolerance", 0), f"{f}.tolerance", where, 0, None),
            per_year=_number(raw.get("per_year", 0), f"{f}.per_year", where, None, None),
            unit=_text(raw.get("unit", ""), f"{f}.unit", where),
            yes=_template(raw.get("yes", "{v}"), f"{f}.yes", where),
            no=_template(raw.get("no", "not {v}"), f"{f}.no", where),
        ))
        if not (slots[-1].assert_ or slots[-1].terms or slots[-1].deny):
            raise ConfigError("a slot needs at least one of assert, deny or terms", f, where)

    cues_raw = data.get("cues", {})
    _only(cues_raw, {"end", "weak", "absent"}, "cues.", where)
    cues = [Cue(p, 0.8) for p in rxs(cues_raw.get("end", []), "cues.end")]
    cues += [Cue(p, 0.8, absent=True) for p in rxs(cues_raw.get("absent", []), "cues.absent")]
    cues += [Cue(p, 0.65, weak=True) for p in rxs(cues_raw.get("weak", []), "cues.weak")]

    cats = _table_of_rxs(data.get("categories", {}), "categories", where, rxs)
    for c in cats:
        if c not in CATEGORIES:
            raise ConfigError(f"unknown category {c!r}", f"categories.{c}", where)
    return Pack(source=where, slots=slots, guards=guards, cues=cues,
                stopwords=words["stopwords"], generic_words=words["generic_words"],
                generic_keys=generic_keys, value_stop=words["value_stop"],
                value_reject=words["value_reject"], category_words=cats)


# ---------------------------------------------------------------- helpers

def _builtins(stop: frozenset[str], occupation: str | None) -> dict[str, str]:
    """Value-capturing placeholders: a run of tokens that stops before a `value_stop` word."""
    stop_alt = word_trie(stop) if stop else "(?!)"
    tok = rf"(?!(?:{stop_alt})\b){_TOKEN}"
    run = rf"{tok}(?:[ \t]+{tok}){{0,{MAX_VALUE_TOKENS - 1}}}"
    title = rf"(?P<v>(?:{tok}[ \t]+){{0,3}}{occupation}s?)\b" if occupation else r"(?P<v>(?!))"
    return {
        "TITLE": title,
        "VAL": rf"(?P<v>{run})",
        "NEW": rf"(?P<n>{run})",
        "OBJ": rf"(?P<o>{run})",
        "WORD": rf"(?P<v>{tok})",
        "PHONE": r"(?P<v>\+?\(?\d[\d \t().-]{5,}\d)",
        "EMAIL": r"(?P<v>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)",
        "NUM": r"(?P<v>\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|no|zero)",
    }


def word_trie(words: Iterable[str]) -> str:
    """A regex matching, at a position, the longest of ``words`` that starts there.

    Words sharing a prefix share its branch ("moved(?: away| back)?"), so a search tries a
    few characters per position instead of every word: the prefilter's scan for literals,
    and the look-ahead for the `value_stop` words before each token of a captured value
    (under IGNORECASE Python's engine has no quick first-letter test per branch, so a flat
    alternation of the ~160 words tried all of them each time: 8.6 against 5.0 us per
    "works at acme N" for the employer regex).
    """
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}                               # a word ends here

    def build(node: dict) -> str:
        kids = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if not kids:
            return ""
        body = kids[0] if len(kids) == 1 else "(?:" + "|".join(kids) + ")"
        return "(?:" + body + ")?" if "" in node else body   # greedy: longer words first

    return build(root)


def _expand(pattern: str, lex: dict[str, str], builtins: dict[str, str], fld: str, where: str) -> str:
    out = pattern
    for _ in range(6):           # lexicon entries may refer to other entries, a few levels deep
        def sub(m: re.Match) -> str:
            name = m.group(1)
            if name in builtins:
                return builtins[name]
            if name in lex:
                return lex[name]
            raise ConfigError(f"unknown placeholder {{{name}}}", fld, where)
        new = _PLACEHOLDER.sub(sub, out)
        if new == out:
            return new
        out = new
    raise ConfigError("placeholders nest too deeply (a lexicon entry refers to itself?)", fld, where)


def _lexicon(raw: Any, where: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise ConfigError("must be a table", "lexicon", where)
    lex = {}
    for name, words in raw.items():
        items = _strings(words, f"lexicon.{name}", where)
        if not items:
            raise ConfigError("must not be empty", f"lexicon.{name}", where)
        lex[name] = alternation(items)
    return lex


def alternation(items: list[str]) -> str:
    """``(?:item|item|...)``, written with the items that open with one letter grouped behind
    it ("(?:a(?:nalyst|rchitect)|engineer|v(?:p|et))"), each group where its first item stood.

    It matches what the flat alternation matches, tried in the same order: at any position
    only the items of one letter can match (no character matches two ASCII letters, case
    ignored or not: checked over every code point), and a group keeps its items' order. It
    is only faster: Python's engine tries an IGNORECASE alternation's branches one by one at
    each position (the 108 occupations at every word of a clause), a grouped one only the
    letter's. Items that do not open with a plain letter (a group, a class, an escape, a
    letter a quantifier applies to), or carry their own top-level ``|``, or two first
    letters that differ only in case, leave the alternation flat."""
    flat = "(?:" + "|".join(items) + ")"
    if not all(map(_opens_with_letter, items)):
        return flat
    groups: dict[str, list[str]] = {}
    for item in items:
        groups.setdefault(item[0], []).append(item[1:])
    if len({k.lower() for k in groups}) < len(groups):
        return flat
    parts = [k + (rest[0] if len(rest) == 1 else "(?:" + "|".join(rest) + ")") for k, rest in groups.items()]
    return "(?:" + "|".join(parts) + ")"


def _opens_with_letter(item: str) -> bool:
    """Whether a lexicon item is an ASCII letter followed by a regex of its own: no quantifier
    on that letter, no ``|`` outside brackets and parentheses, and no capturing group (moved,
    it would renumber the groups after it)."""
    if not (item[:1].isascii() and item[:1].isalpha()) or item[1:2] in ("?", "*", "+", "{"):
        return False
    # in_class: 0 outside brackets, 1 just after "[", 3 just after "[^", 2 further in
    depth, in_class, escaped = 0, 0, False
    for i, ch in enumerate(item):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped, in_class = True, 2 if in_class else 0
        elif in_class in (1, 3):
            in_class = 3 if in_class == 1 and ch == "^" else 2   # a "]" first is a member
        elif in_class:
            in_class = 0 if ch == "]" else 2
        elif ch == "[":
            in_class = 1
        elif ch == "(":
            if not item.startswith(("?:", "?=", "?!", "?<=", "?<!"), i + 1):
                return False
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return False
    return True


LITERALS_FILE = "prefilter_literals.json"     # the shipped pack's literals (tools/prefilter_literals.py)


def literals_digest(source: str, flags: int) -> str:
    """The key of a regex source in LITERALS_FILE."""
    return hashlib.blake2b(f"{flags}\0{source}".encode("utf-8"), digest_size=8).hexdigest()


@functools.lru_cache(maxsize=1)
def _shipped_literals() -> dict[str, list[str] | None]:
    """LITERALS_FILE: each shipped regex's required literals by literals_digest, read once.
    Parsing the ~280 regexes of the shipped pack for them was a third of a detector's start;
    a regex that is not there (a user's pack, an edited one) is parsed as before."""
    try:
        data = json.loads(resources.files("memwatch_overlay.rules").joinpath(LITERALS_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data.get("literals", {}) if isinstance(data, dict) else {}


@functools.lru_cache(maxsize=4096)
def _required_literals(source: str, flags: int) -> tuple[str, ...] | None:
    shipped = _shipped_literals()
    if shipped:
        digest = literals_digest(source, flags)
        if digest in shipped:
            got = shipped[digest]
            return None if got is None else tuple(got)
    return parse_required_literals(source, flags)


def parse_required_literals(source: str, flags: int) -> tuple[str, ...] | None:
    """``_required_literals`` read from the regex's parse tree (what LITERALS_FILE holds)."""
    try:
        from re import _constants as C, _parser as P
        tree = P.parse(source, flags)
    except Exception:          # an internal API: without it there is simply no prefilter
        return None
    return _lits(tree, C)


def required_literals(pattern: re.Pattern) -> tuple[str, ...] | None:
    """Lower-case strings of which any match of ``pattern`` must contain one, or None.

    Read from the regex's parse tree: the first mandatory element that is a literal run
    (or a group / alternation whose every branch starts with one). Texts containing none
    of them cannot match, so the regex is skipped: far cheaper than running it.
    """
    # a LazyPattern offers a shorter source with the same literals (its stop words dropped)
    return _required_literals(getattr(pattern, "literal_source", pattern.pattern), pattern.flags)


def _lits(seq, C) -> tuple[str, ...] | None:
    """The most selective literal set among the mandatory elements of ``seq``."""
    best: tuple[str, ...] | None = None

    def better(cand):
        nonlocal best
        if cand and (best is None or _selectivity(cand) > _selectivity(best)):
            best = cand

    items = list(seq)
    i = 0
    while i < len(items):
        op, av = items[i]
        if op is C.LITERAL:
            run = []
            while i < len(items) and items[i][0] is C.LITERAL:
                run.append(chr(items[i][1]))
                i += 1
            word = "".join(run).lower()
            if len(word.strip()) >= 2 or word in _RARE_CHARS:
                better((word,))
            if i < len(items) and items[i][0] is C.BRANCH:
                # the parser moves a prefix the alternatives share out of them ("jk|j/k|just
                # kidding" is "j" then "k|/k|ust kidding"): put it back on each one's own
                joined = tuple(sorted({word + _leading_run(a, C) for a in items[i][1][1]}))
                if all(len(w.strip()) >= 2 or w in _RARE_CHARS for w in joined):
                    better(joined)
            continue
        if op is C.SUBPATTERN:
            better(_lits(av[3], C))
        elif op is C.BRANCH:
            alts = [_lits(a, C) for a in av[1]]
            if all(alts):
                better(tuple(sorted({w for a in alts for w in a})))
            # alternatives that are whole literals, followed by a literal ("(?:is|am|are) "): each
            # with what follows ("is ", "am "), which "this", "example" and "named" lack
            after = _leading_run(items[i + 1:], C)
            words = [_leading_run(a, C) for a in av[1]]
            if after and all(len(w) == len(a) for w, a in zip(words, av[1])):    # (one char an item)
                better(tuple(sorted({w + after for w in words})))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] >= 1:
            better(_lits(av[2], C))
        i += 1
    return best


# characters rare enough in memories to stand alone as a required literal, and how many
# letters of a word each is worth when literal sets are ranked (_selectivity): a question's
# "?" rules out more texts than a list of short words ("is", "do", "are") found inside others
_RARE_CHARS = {"@": 4, "?": 4}


def _leading_run(seq, C) -> str:
    """The literal characters a sequence of parse items opens with (lower case)."""
    out = []
    for op, av in seq:
        if op is not C.LITERAL:
            break
        out.append(chr(av))
    return "".join(out).lower()


def _selectivity(words: tuple[str, ...]) -> tuple[int, int, int]:
    """Longer shortest word first (its letters), then fewer words, then the longer shortest
    word with its spaces ("am " rules out "example" where "am" does not)."""
    return (min(_RARE_CHARS.get(w, len(w.strip())) for w in words), -len(words), min(len(w) for w in words))


def _groups(raw: Any, fld: str, where: str) -> tuple[frozenset[str], ...]:
    out = []
    for i, g in enumerate(_list(raw, fld, where)):
        out.append(frozenset(v.lower() for v in _strings(g, f"{fld}[{i}]", where)))
    return tuple(out)


def _table_of_rxs(raw: Any, fld: str, where: str, rxs) -> dict[str, tuple[re.Pattern, ...]]:
    if not isinstance(raw, dict):
        raise ConfigError("must be a table of regex lists", fld, where)
    return {str(k): rxs(v, f"{fld}.{k}") for k, v in raw.items()}


def _only(d: Any, allowed: set[str], prefix: str, where: str) -> None:
    if not isinstance(d, dict):
        raise ConfigError("must be a table", prefix.rstrip(".") or "<root>", where)
    for k in d:
        if k not in allowed:
            raise ConfigError(f"unknown key (allowed: {', '.join(sorted(allowed))})", prefix + k, where)


def _list(v: Any, fld: str, where: str) -> list:
    if not isinstance(v, list):
        raise ConfigError("must be a list", fld, where)
    return v


def _strings(v: Any, fld: str, where: str) -> list[str]:
    items = _list(v, fld, where)
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise ConfigError("must be a string", f"{fld}[{i}]", where)
    return items


def _text(v: Any, fld: str, where: str) -> str:
    if not isinstance(v, str):
        raise ConfigError("must be a string", fld, where)
    return v


def _template(v: Any, fld: str, where: str) -> str:
    if not isinstance(v, str) or "{v}" not in v:
        raise ConfigError('must be a string containing "{v}"', fld, where)
    return v


def _bool(v: Any, fld: str, where: str) -> bool:
    if not isinstance(v, bool):
        raise ConfigError("must be true or false", fld, where)
    return v


def _number(v: Any, fld: str, where: str, lo: float | None, hi: float | None) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError("must be a number", fld, where)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ConfigError(f"must be between {lo} and {hi}", fld, where)
    return float(v)
