"""RE2-accelerated category assignment gives exactly Python `re`'s answers.

The RE2 path (rules/regexset.py, the `fast` extra) is compared with Python `re` on random
patterns built from the constructs where the two engines differ, on random and adversarial
texts, and the accelerated Categorizer with a plain reference implementation of the rules
(first rule in order whose source applies and whose key globs or text regexes match) on
the default pack, on user rules with those constructs, and on every record and every
string of the fixture stores. Seeded generators: a failure reproduces.

Tests marked `re2` need google-re2; under CI=true a skip is a failure (conftest.py).
"""
from __future__ import annotations

import fnmatch
import json
import random
import re
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.connectors.registry import make_connector
from memwatch_overlay.overlay.engine.audit import resolve_sources
from memwatch_overlay.overlay.engine.scoring import DEFAULT_CATEGORY
from memwatch_overlay.rules import regexset
from memwatch_overlay.rules.categorize import Categorizer, default_rules
from memwatch_overlay.rules.config import parse_config
from memwatch_overlay.rules.regexset import RegexSet, Untranslatable, translate


needs_re2 = pytest.mark.re2
# `[[:alpha:]]` and its kind are on purpose: Python warns that it reads them as plain classes
pytestmark = pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")


@pytest.fixture
def re2_installed():
    return pytest.importorskip("re2", reason="google-re2 (the `fast` extra) is not installed")


def reference_category(rules, source, key, text, explicit=None, known=None) -> str:
    """What the rules say, read the plainest way: no caches, no sets, no RE2."""
    if explicit:
        explicit = str(explicit).strip().lower()
        if explicit and (known is None or explicit in known):
            return explicit
    lowered = key.lower() if key else None
    for rule in rules:
        if rule.source is not None and rule.source != source:
            continue
        if not rule.key and not rule.text:
            return rule.category
        if lowered and rule.key and any(fnmatch.fnmatchcase(lowered, g.lower()) for g in rule.key):
            return rule.category
        joined = re.compile("|".join(f"(?:{p.pattern})" for p in rule.text), re.IGNORECASE) if rule.text else None
        if text and joined is not None and joined.search(text):
            return rule.category
    return DEFAULT_CATEGORY


# -- random texts ------------------------------------------------------------------------

WORDS = ["works at", "Works AT", "lives in", "email", "E-mail", "phone", "joined", "married",
         "speaks", "loves", "believes", "born", "dog", "C++", "python", "team", "the", "on",
         "Acme", "Kelvin", "kelvin", "KELVIN", "sister", "fiancée", "FIANCÉE", "fiance",
         "master's", "bachelor.s", "can't stand", "runs everything on", "time zone",
         "priya@example.com", "a.b+c@d-e.co.uk", "+62 812 5550 1234", "(555) 123-4567",
         "0812.555.0123", "1234567", "12345678", "١٢٣٤٥٦٧٨٩", "pet", "café", "naïve",
         "\u212aelvin", "\u017fpeaks", "\u0130stanbul", "\u0131", "stra\u00dfe", "\u00b5",
         "Works\u00a0at", "works\u2003at", "résumé"]
SEPARATORS = [" ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f",
              "\x85", "\u00a0", "\u2028", "", "-", ".", ",", "_", "\x00"]


def random_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.1:
        return "".join(rng.choice("aAbBkKsS \n\v\x1c_1.@+-()\u212a\u017f\u00e9") for _ in range(rng.randint(0, 12)))
    parts = []
    for _ in range(rng.randint(1, 7)):
        word = rng.choice(WORDS)
        if rng.random() < 0.3:
            word = "".join(ch.upper() if rng.random() < 0.5 else ch.lower() for ch in word)
        parts.append(word)
        parts.append(rng.choice(SEPARATORS))
    text = "".join(parts)
    if rng.random() < 0.2:
        text += "\n"
    return text


ADVERSARIAL_TEXTS = [
    "", " ", "\n", "works at\n", "works at\n\n", "Works at Acme\v", "phone\x1c", "\x1fjob",
    "works\vat", "works\x1cat", "lives\x1fin", "Lives\u00a0in", "\u212a", "\u017f", "ſpeaks",
    "\u212aelvin works at", "email\u0130", "WORKS AT", "wOrKs aT", "mail me: bob@x.io",
    "call +1 (555) 123-4567\n", "+12345678", "1-2-3-4-5-6-7-8-9", "٣٣٣٣٣٣٣٣٣",
    "speaks\n", "a\nb\n", "dog", "dogs", "hotdog", "c++ dev", "C++", "fiancée", "FIANCÉE",
]


# -- the accelerated Categorizer against the reference --------------------------------------

@needs_re2
def test_default_pack_runs_entirely_on_re2(re2_installed):
    c = Categorizer()
    assert c.accelerated
    assert c._text_regexes.on_re2 == frozenset(range(len(default_rules())))


@needs_re2
def test_default_pack_categories_match_the_reference_on_random_texts(re2_installed):
    rng = random.Random(20261129)
    fast, pure = Categorizer(), Categorizer(accelerate=False)
    assert fast.accelerated and not pure.accelerated
    rules = fast.rules
    keys = [None, "", "note", "memory", "employer", "EMAIL", "fav_food", "city", "x"]
    seen = set()
    texts = ADVERSARIAL_TEXTS + [random_text(rng) for _ in range(4000)]
    for text in texts:
        key = rng.choice(keys)
        want = reference_category(rules, "bot", key, text)
        assert fast.categorize("bot", key, text) == want, (key, text)
        assert pure.categorize("bot", key, text) == want, (key, text)
        seen.add(want)
    # the texts reach every default category, ASCII and not, so the comparison has teeth
    assert seen >= {r.category for r in default_rules()} | {DEFAULT_CATEGORY}
    assert any(not t.isascii() for t in texts) and any(t.endswith("\n") for t in texts)


TRICKY_RULES = [
    {"category": "dollar", "text": [r"\bends here$"]},
    {"category": "end_z", "text": [r"stop\Z"]},
    {"category": "upto", "text": [r"\bx{,2}yz\b"]},
    {"category": "posixish", "text": [r"^[[:alpha:]]+$"]},
    {"category": "lookahead", "text": [r"\bpay(?=day)"]},
    {"category": "lookbehind", "text": [r"(?<!no )coffee"]},
    {"category": "backref", "text": [r"\b(\w+) \1\b"]},
    {"category": "atomic", "text": [r"(?>a+)b"]},
    {"category": "possessive", "text": [r"q++r"]},
    {"category": "multiline", "text": [r"(?m:^note:)"]},
    {"category": "dotall", "text": [r"(?s:begin.end)"]},
    {"category": "ascii", "text": [r"(?a:\bcaf\w\b)"]},
    {"category": "case", "text": [r"(?-i:CamelCase)"]},
    {"category": "kelvin", "text": ["\u212aelvin", "\u017fcience"]},
    {"category": "ascii_fold", "text": ["(?a:\u212aa\u017fe)"]},
    {"category": "spaces", "text": [r"tab\sstop", r"\Bing\b"]},
    {"category": "digits", "text": [r"\d{4}-\d{2}"]},
    {"category": "scoped", "source": "other", "text": [r"works at"]},
    {"category": "keyed", "key": ["special_*"], "text": [r"\bspecial\b"]},
    {"category": "dup", "text": [r"\bends here$"]},
]
TRICKY_TEXTS = [
    "it ends here", "it ends here\n", "it ends here\n\n", "ends here.", "full stop", "full stop\n",
    "xyz", "xxyz", "xxxyz", "yz", "Alpha", "alpha\n", "alpha beta", "[[:alpha:]]", ":a", "a]", "P]]\n", "x]",
    "payday", "pay day", "no coffee", "some coffee", "the the", "the then", "aab", "qqr",
    "intro\nnote: x", "note: x", "x note:", "begin\nend", "beginXend", "cafe", "café", "cafÉ",
    "camelcase", "CamelCase", "\u212aelvin", "kelvin", "KELVIN", "science", "\u017fcience", "kase", "\u212aa\u017fe",
    "tab\vstop", "tab\x1cstop", "tab\u00a0stop", "singing", "ing", "2026-11", "٢٠٢٦-١١",
    "works at Acme", "special offer",
]


@needs_re2
def test_tricky_user_rules_match_the_reference(re2_installed):
    cfg = parse_config({"rules": TRICKY_RULES})
    fast = Categorizer(cfg.rules, known=set(cfg.categories))
    pure = Categorizer(cfg.rules, known=set(cfg.categories), accelerate=False)
    assert fast.accelerated
    on_python = {fast._compiled[fast._text_rule_index[i]].category
                 for i in range(len(fast._text_rule_index)) if i not in fast._text_regexes.on_re2}
    # the constructs RE2 cannot take exactly stay on Python re, and only those
    assert on_python == {"lookahead", "lookbehind", "backref", "atomic", "possessive", "multiline"}
    rng = random.Random(7)
    texts = TRICKY_TEXTS + [rng.choice(TRICKY_TEXTS) + rng.choice(SEPARATORS) + rng.choice(TRICKY_TEXTS)
                            for _ in range(1500)]
    categories = set()
    for text in texts:
        for source, key in (("bot", None), ("other", None), ("bot", "special_offer"), ("bot", "email")):
            want = reference_category(fast.rules, source, key, text)
            assert fast.categorize(source, key, text) == want, (source, key, text)
            assert pure.categorize(source, key, text) == want, (source, key, text)
            categories.add(want)
    assert categories >= {r["category"] for r in TRICKY_RULES} - {"dup"}


# -- the fixture stores ---------------------------------------------------------------------

FIXTURE_TARGETS = {
    "langgraph": ["langgraph_store.sqlite"], "mem0": ["history.db"],
    "memlife": ["u_amara/memlife.db", "u_priya/memlife.db", "u_tomasz/memlife.db"],
    "openai-agents": ["agent_sessions.db"], "crewai": ["long_term_memory_storage.db"],
    "mcp-memory": ["memory.jsonl"],
}


def _strings(value):
    """Every string in a cell or a JSON document (JSON held in a string included)."""
    if isinstance(value, str):
        yield value
        if value[:1] in "[{":
            try:
                yield from _strings(json.loads(value))
            except ValueError:
                pass
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def fixture_strings(path: Path) -> set[str]:
    found: set[str] = set()
    if path.suffix == ".jsonl":
        for line in path.read_text(encoding="utf-8").splitlines():
            found.update(_strings(line))
        return found
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    found.update(_strings(cell))
    finally:
        conn.close()
    return found


@needs_re2
@pytest.mark.parametrize("framework", sorted(FIXTURE_TARGETS))
def test_fixture_store_records_and_strings_match_the_reference(re2_installed, agent_store, framework):
    folder = agent_store(framework)
    fast, pure = Categorizer(), Categorizer(accelerate=False)
    rules = fast.rules
    records = 0
    for name in FIXTURE_TARGETS[framework]:
        _cfg, sources = resolve_sources(str(folder / name), None)
        for source in sources:
            with make_connector(source) as connector:
                for rec in connector.read():
                    want = reference_category(rules, rec.source, rec.key, rec.text, rec.category)
                    assert fast.categorize(rec.source, rec.key, rec.text, rec.category) == want, rec
                    assert pure.categorize(rec.source, rec.key, rec.text, rec.category) == want, rec
                    records += 1
        strings = fixture_strings(folder / name)
        for text in strings:
            for key in (None, "memory"):
                want = reference_category(rules, None, key, text)
                assert fast.categorize(None, key, text) == want, text
    assert records >= 10


# -- RegexSet on random patterns ---------------------------------------------------------------

PY_ONLY = ["(?=a)", "(?!b)", "(?<=a)", "(?<!k)", "(?>a+)", "a++", "b*+", "(a)\\1", "(?P<n>k)(?P=n)",
           "(a)?(?(1)b|s)", "(?m:^a)", "(?m:s$)"]
ATOMS = ["a", "b", "k", "s", "K", "S", "_", "1", " ", "\\.", "-", "\u00e9", "\u00c9", "\u212a", "\u017f",
         "\u0130", "\u0131", "\u00df", "\u00b5", "\\n", "\\v", "\\x1c", "\\w", "\\W", "\\d", "\\D",
         "\\s", "\\S", ".", "[a-k]", "[^ab]", "[[:alpha:]]", "[K-S]", "[\u00e0-\u00ff]", "[\\s\\d]",
         "[^\\w]", "[k\u212a]", "[_\\W]", "\\\u00e9", "[\\x00-\\x1f]"]
ANCHORS = ["^", "$", "\\A", "\\Z", "\\b", "\\B"]
QUANTIFIERS = ["*", "+", "?", "{2}", "{1,3}", "{,2}", "{2,}", "*?", "+?", "??", "{1,2}?", "{0}"]
GROUPS = ["({})", "(?:{})", "(?i:{})", "(?-i:{})", "(?s:{})", "(?a:{})", "(?x: {} )", "(?u:{})"]
GLOBAL_FLAGS = ["", "", "", "(?s)", "(?a)", "(?x)", "(?m)", "(?u)"]


def random_pattern(rng: random.Random, depth: int = 0) -> str:
    items = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.5 or depth > 2:
            item = rng.choice(ATOMS)
        elif roll < 0.62:
            item = rng.choice(ANCHORS)
        elif roll < 0.67:
            item = rng.choice(PY_ONLY)
        elif roll < 0.85:
            item = rng.choice(GROUPS).format(random_pattern(rng, depth + 1))
        else:
            item = "(?:" + random_pattern(rng, depth + 1) + "|" + random_pattern(rng, depth + 1) + ")"
        if rng.random() < 0.3 and item not in ANCHORS:
            item += rng.choice(QUANTIFIERS)
        items.append(item)
    return "".join(items)


def random_patterns(seed: int, count: int) -> list[re.Pattern]:
    rng = random.Random(seed)
    patterns = []
    while len(patterns) < count:
        source = rng.choice(GLOBAL_FLAGS) + random_pattern(rng)
        flags = re.IGNORECASE if rng.random() < 0.8 else 0
        try:
            patterns.append(re.compile(source, flags))
        except (re.error, OverflowError):
            continue
    return patterns


def regex_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "aAbBkKsS_1 .-\n\v\x1c\x1f\t\u00e9\u00c9\u212a\u017f\u0130\u0131\u00df\u00b5"
    texts = ["", "\n", "a", "a\n", "k\n", "s", "K", "\u212a", "ab\n", " ", "\v", "\x1c"]
    while len(texts) < count:
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        if rng.random() < 0.5:   # mostly ASCII: the texts RE2 answers for
            text = "".join(ch for ch in text if ch.isascii()) or "a"
        texts.append(text)
    return texts


@needs_re2
@pytest.mark.parametrize("seed", range(6))
def test_random_patterns_every_pattern_agrees_with_python(re2_installed, seed):
    patterns = random_patterns(seed, 60)
    texts = regex_texts(seed, 250)
    rset = RegexSet(patterns)
    assert rset.accelerated
    singles = [rset.candidates([i]) for i in range(len(patterns))]
    outcomes = set()
    for text in texts:
        for i, pattern in enumerate(patterns):
            want = i if pattern.search(text) else None
            assert rset.first_match(text, singles[i]) == want, (pattern, text)
            outcomes.add((i in rset.on_re2, text.isascii(), want is not None))
    # both engines were asked, about ASCII and non-ASCII texts, and both said yes and no
    assert {(True, True, True), (True, True, False), (False, True, True), (False, True, False),
            (True, False, True), (True, False, False)} <= outcomes


@needs_re2
@pytest.mark.parametrize("seed", range(3))
def test_random_patterns_first_match_among_random_candidates(re2_installed, seed):
    rng = random.Random(100 + seed)
    patterns = random_patterns(100 + seed, 40)
    rset = RegexSet(patterns)
    for text in regex_texts(100 + seed, 300):
        matching = [i for i, p in enumerate(patterns) if p.search(text)]
        for _ in range(10):
            chosen = rng.sample(range(len(patterns)), rng.randint(1, len(patterns)))
            want = min((i for i in matching if i in chosen), default=None)
            assert rset.first_match(text, rset.candidates(chosen)) == want, (text, chosen)


# -- what goes to RE2, and what stays on Python re ----------------------------------------------

@pytest.mark.parametrize("source", [
    r"(?=a)b", r"a(?!b)", r"(?<=a)b", r"(?<!a)b", r"(a)\1", r"(?P<x>a)(?P=x)", r"(a)?(?(1)b|c)",
    r"(?>ab)", r"a*+", r"a?+b", r"(?m)^a", r"(?m)a$", r"(?m:^a)"])
def test_constructs_without_an_exact_re2_form_are_untranslatable(source):
    with pytest.raises(Untranslatable):
        translate(re.compile(source, re.IGNORECASE))


@needs_re2
def test_patterns_re2_rejects_stay_on_python(re2_installed):
    patterns = [re.compile(r"a{1001}", re.I), re.compile(r"(?:a{1,1000}){1,1000}b", re.I), re.compile("works", re.I)]
    rset = RegexSet(patterns)
    assert rset.on_re2 == {2}
    everything = rset.candidates(range(3))
    assert rset.first_match("a" * 1001, everything) == 0
    assert rset.first_match("a" * 5 + "b", everything) == 1
    assert rset.first_match("it works", everything) == 2
    assert rset.first_match("nothing", everything) is None


def test_translation_reads_the_pattern_as_python_does():
    # `{,2}` is Python's 0..2 repeat, `[[:alpha:]]` a class of `[:alph` then `]`, `\Z` the end
    assert translate(re.compile(r"x{,2}", re.I))[0] == r"(?:[\x{58}\x{78}]){0,2}"
    assert translate(re.compile(r"[[:alpha:]]", re.I))[0] == \
        r"[\x{3a}\x{41}\x{48}\x{4c}\x{50}\x{5b}\x{61}\x{68}\x{6c}\x{70}][\x{5d}]"
    assert translate(re.compile(r"a\Z"))[0] == r"[\x{61}]\z"
    # `\s` is Python's: with \v and \x1c-\x1f; Kelvin sign folds to k, so [k] under IGNORECASE has K and k
    assert translate(re.compile(r"\s"))[0] == r"[\x{09}-\x{0d}\x{1c}-\x{20}]"
    assert translate(re.compile("\u212a", re.I))[0] == r"[\x{4b}\x{6b}]"
    assert translate(re.compile("\u212a"))[0] == r"[^\x00-\x{10FFFF}]"
    assert translate(re.compile("(?a:\u212a)", re.I))[0] == r"(?:[^\x00-\x{10FFFF}])"   # no Unicode folding
    # `$` is flagged: a text ending in a newline asks Python
    assert translate(re.compile(r"a$"))[1] is True and translate(re.compile(r"a\Z"))[1] is False


# -- without RE2 -----------------------------------------------------------------------------

def test_without_re2_every_text_goes_through_python_re(monkeypatch):
    monkeypatch.setattr(regexset, "re2", None)
    cfg = parse_config({"rules": TRICKY_RULES})
    c = Categorizer(cfg.rules, known=set(cfg.categories))
    assert not c.accelerated and not c._text_regexes.on_re2
    rng = random.Random(11)
    for text in TRICKY_TEXTS + ADVERSARIAL_TEXTS + [random_text(rng) for _ in range(500)]:
        for source, key in (("bot", None), ("other", "special_x"), ("bot", "employer")):
            assert c.categorize(source, key, text) == reference_category(c.rules, source, key, text), text


def test_accelerate_false_keeps_python_re():
    c = Categorizer(accelerate=False)
    assert not c.accelerated
    assert c.categorize(None, None, "Works at Google as a product analyst") == "employment"
    assert c.categorize(None, "email", "nothing here") == "contact"
    assert c.categorize(None, None, "nothing here") == DEFAULT_CATEGORY


# -- patterns with leading global flags ------------------------------------------------------

FLAG_RULES = [
    {"category": "dotall", "text": ["(?s)moved.to"]},
    {"category": "verbose", "text": ["(?x) speaks \\s+ (?: dutch | thai )  # a comment to the end"]},
    {"category": "stacked", "text": ["(?s)(?m)^likes.tea$", "plain tea"]},
    {"category": "ascii", "text": ["(?a)\\bcaf\\w\\b"]},
]
FLAG_TEXTS = ["moved\nto Oslo", "moved to Oslo", "movedXto", "speaks  dutch", "speaks\nthai", "speaksdutch",
              "a\nlikes\ntea\nb", "LIKES TEA", "plain tea", "café", "cafe", "caf\u00e9s", "nothing here", ""]


def _per_pattern_reference(rules, text: str) -> str:
    """First rule with a pattern that matches, each pattern compiled on its own (no joining)."""
    for rule in rules:
        if any(re.compile(p.pattern, re.IGNORECASE).search(text) for p in rule.text):
            return rule.category
    return DEFAULT_CATEGORY


@pytest.mark.parametrize("accelerate", [False, pytest.param(True, marks=needs_re2)])
def test_leading_global_flags_keep_their_meaning(accelerate):
    """`(?s)a.b` in a rule is valid config: it used to break the Categorizer (global flags
    in the middle of the joined alternation); it now means what it means alone."""
    if accelerate:
        pytest.importorskip("re2", reason="google-re2 (the `fast` extra) is not installed")
    cfg = parse_config({"rules": FLAG_RULES})
    cat = Categorizer(cfg.rules, known=set(cfg.categories), use_default_pack=False, accelerate=accelerate)
    got = {text: cat.categorize("bot", None, text) for text in FLAG_TEXTS}
    assert got == {text: _per_pattern_reference(cfg.rules, text) for text in FLAG_TEXTS}
    assert got["moved\nto Oslo"] == "dotall" and got["speaks\nthai"] == "verbose"
    assert got["a\nlikes\ntea\nb"] == "stacked" and got["café"] == "general" and got["cafe"] == "ascii"
