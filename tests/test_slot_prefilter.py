"""The prefiltered slot extraction reads exactly what the plain path reads (each regex's
required literals checked one by one, every guard searched), and a sync through the fast
path (one literal scan per clause, one reading per fact per block) finds exactly the
contradictions of the plain path (every comparison reads its facts again)."""
from __future__ import annotations

import datetime as dt
import random
import re
import sqlite3
from pathlib import Path

import pytest

from memwatch_overlay.overlay.detect.detector import Detector
from memwatch_overlay.overlay.detect.prefilter import Prefilter
from memwatch_overlay.overlay.detect.pack import load_pack, required_literals, word_trie
from memwatch_overlay.overlay.detect.slots import Extractor
from memwatch_overlay.overlay.store.database import OverlayStore
from memwatch_overlay.overlay.engine.sync import SyncEngine
from memwatch_overlay.rules.config import load_config

import contradiction_cases
from storegen import write_config
from test_sync_contradictions import AS_OF

SEPARATORS = (", but ", ". ", " and ", "; ", " because ", ", so ", " - ", "! ", "? ", "\n", ", ")
PREFIXES = ("", "", "", "My sister said ", "Maybe ", "I think ", "Not sure if ", "Honestly, ")


def _case_texts() -> list[str]:
    """Every text of tests/contradiction_cases.py (written for the tests, not an eval set)."""
    out = []
    for value in vars(contradiction_cases).values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, tuple):
                    out += [x for x in item if isinstance(x, str) and len(x) > 3]
    return list(dict.fromkeys(out))


def _variant(rnd: random.Random, base: list[str]) -> str:
    """A text made of one or two case texts, joined, prefixed, re-cased or re-lettered."""
    t = rnd.choice(base)
    if rnd.random() < 0.6:
        b = rnd.choice(base)
        t = t.rstrip(".!") + rnd.choice(SEPARATORS) + (b[:1].lower() + b[1:] if rnd.random() < 0.5 else b)
    t = rnd.choice(PREFIXES) + t
    r = rnd.random()
    if r < 0.08:
        t = t.upper()
    elif r < 0.16:
        t = t.lower()
    elif r < 0.22:
        t = t.replace("'", "\u2019")
    elif r < 0.28:                       # letters that match ASCII ones only when ignoring case
        t = t.replace("s", "\u017f", 1).replace("k", "\u212a", 1)
    elif r < 0.34:
        t = t.replace("e", "\u00e9", 2).replace("I ", "\u0130 ", 1)
    elif r < 0.40:                       # whitespace that str.split() splits on, and double spaces
        t = t.replace(" ", rnd.choice(("\r", "\x0b", "\x0c", "\x1f", "  ")), rnd.randint(1, 3))
    return t


def _texts(n: int, seed: int) -> list[str]:
    base = _case_texts()
    rnd = random.Random(seed)
    return base + [_variant(rnd, base) for _ in range(n)]


def _read_or_error(ex: Extractor, text: str):
    try:
        return ex.read(text, frozenset({"u1", "alice"}))
    except Exception as e:               # a text the pack cannot read must fail alike
        return type(e).__name__


@pytest.mark.parametrize("accelerate", [True, False], ids=["re2-set", "trie-scan"])
def test_prefilter_finds_exactly_the_literals_a_text_contains(accelerate):
    pack = load_pack()
    ex = Extractor(pack)
    patterns = [r for sd in pack.slots for r in (*sd.assert_, *sd.deny, *sd.end, *sd.event)]
    patterns += [c.pattern for c in pack.cues] + ex.guards.patterns()
    if accelerate:
        pytest.importorskip("re2", reason="google-re2 (the fast extra) scans ASCII texts in one RE2 set")
    pf = Prefilter(patterns, accelerate=accelerate)
    assert pf.accelerated == accelerate
    literals = sorted({w for p in patterns for w in (required_literals(p) or ())})
    assert len(literals) > 300
    rnd = random.Random(3)
    texts = [t.lower() for t in _texts(1500, seed=11)]
    # strings packed with literals and their pieces: overlapping, nested, run together
    texts += ["".join(rnd.choice(literals)[: rnd.randint(1, 12)] for _ in range(rnd.randint(1, 12)))
              for _ in range(1500)]
    for low in texts:
        present = {w for w in literals if w in low}
        assert pf.literals_in(low) == present, low
        expected = pf.always
        for p in patterns:
            lits = required_literals(p)
            if lits and any(w in low for w in lits):
                expected |= pf.bit(p)
        assert pf.mask(low) == expected, low


def test_trie_pattern_matches_the_longest_word_at_a_position():
    words = ["mov", "move", "moved", "moved away", "ov", "@", "a b"]
    rx = re.compile(word_trie(words))
    assert rx.match("moved awa").group(0) == "moved"
    assert rx.match("moved away now").group(0) == "moved away"
    assert rx.match("movie").group(0) == "mov"
    assert rx.match("a c") is None and rx.match("a b").group(0) == "a b"


def test_prefiltered_readings_equal_plain_readings():
    pack = load_pack()
    fast, plain = Extractor(pack), Extractor(pack, prefilter=False)
    texts = _texts(3000, seed=5)
    assert sum(not t.isascii() for t in texts) > 100
    read = 0
    for t in texts:
        a, b = _read_or_error(fast, t), _read_or_error(plain, t)
        assert a == b, t
        read += not isinstance(a, str) and bool(a.slots or a.cues)
    assert read > len(texts) // 2              # most texts say something the pack reads


class _PlainDetector(Detector):
    """The plain prefilter, a one-entry cache, and block readings ignored: every
    comparison reads both of its facts again."""

    def __init__(self):
        super().__init__(prefilter=False, cache_size=1)

    def compare(self, newer, olders, readings=None):
        return super().compare(newer, olders)


def _synthetic_store(path: Path, users: int, per_user: int, seed: int) -> Path:
    """Users with facts drawn from the case texts and their variants, keys where the case
    has one, categories read by the pack (so related facts share a block), dates spread
    over two years with ties; one user holds a block far larger than the others."""
    rnd = random.Random(seed)
    det = Detector()
    keyed = {}
    for value in vars(contradiction_cases).values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, tuple) and len(item) >= 2 and isinstance(item[1], str):
                    keyed[item[0]] = item[1]
    base = _case_texts()
    now = dt.datetime(2026, 11, 29)
    rows = []
    for u in range(users):
        for _ in range(per_user * (8 if u == 0 else 1)):
            text = rnd.choice(base) if rnd.random() < 0.5 else _variant(rnd, base)
            category = det.category_of(text) or "general"
            key = keyed.get(text) if rnd.random() < 0.7 else None
            days = rnd.choice((0, 1, 30)) if rnd.random() < 0.1 else rnd.uniform(0, 730)
            created = (now - dt.timedelta(days=days)).strftime("%Y-%m-%d %H:%M:%S")
            rows.append((f"u{u}", category, key, text, created))
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, user_id TEXT, kind TEXT, "
                 "fact_key TEXT, content TEXT, created_at TEXT)")
    conn.executemany("INSERT INTO memories (user_id, kind, fact_key, content, created_at) "
                     "VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def _outcome(overlay: OverlayStore) -> tuple[list, list]:
    pairs = sorted(tuple(r) for r in overlay.conn.execute(
        "SELECT o.ref, n.ref, c.kind, c.confidence, c.evidence, coalesce(c.update_json, '') "
        "FROM contradictions c JOIN facts o ON o.id = c.older_id JOIN facts n ON n.id = c.newer_id"))
    facts = sorted(tuple(r) for r in overlay.conn.execute(
        "SELECT ref, status, refreshed_at, confirmations FROM facts"))
    return pairs, facts


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_and_plain_paths_find_the_same_contradictions(tmp_path, seed):
    store = _synthetic_store(tmp_path / "bot.db", users=60, per_user=60, seed=seed)
    cfg = load_config(write_config(tmp_path, store))
    found = {}
    for name, detector in (("fast", Detector(cache_size=16)), ("plain", _PlainDetector())):
        with OverlayStore(tmp_path / f"overlay-{name}.db") as overlay:
            stats = SyncEngine(overlay, cfg, detector=detector).sync(cfg.sources[0], as_of=AS_OF, full=True)
            found[name] = (stats.comparisons, stats.contradictions, *_outcome(overlay))
    assert found["fast"] == found["plain"]
    comparisons, contradictions, pairs, facts = found["fast"]
    # a workload big enough for the equality to mean something (supersession edges: a fact
    # meets the facts still holding its slots, not every older one, so ~0.6 per fact here)
    assert len(facts) > 4000 and comparisons > 2000
    assert contradictions == len(pairs) > 500
    assert {p[2] for p in pairs} >= {"value", "cue"}
    assert any(confirmations for *_, confirmations in facts)


def test_guards_are_searched_where_a_literal_check_could_miss_them():
    """The negation guard reads a prefix's last words re-joined by single spaces, and case
    folding maps "ſ" to "s": a pack whose only negation is "no longer" must still see it."""
    import tomllib
    from importlib import resources
    from memwatch_overlay.overlay.detect.pack import compile_pack

    data = tomllib.loads(resources.files("memwatch_overlay.rules").joinpath("slots.toml").read_text("utf-8"))
    data["guards"]["negation"] = [r"\bno longer\b"]
    pack = compile_pack(data)
    fast, plain = Extractor(pack), Extractor(pack, prefilter=False)
    for text in ("I am no\x0clonger vegan", "I am no  longer vegan", "I am no longer vegan",
                 "I am NO LONGER vegan", "I am no lonſer vegan", "I am vegan"):
        a, b = fast.read(text), plain.read(text)
        assert a == b, text
    assert [s.polarity for s in fast.read("I am no\x0clonger vegan").slots if s.name == "diet"] == [-1]


# -- letters that ignoring case folds onto ASCII ------------------------------------------------

LONG_S = "\u017f"   # ſ: `re.IGNORECASE` matches it for "s", `str.lower()` leaves it alone


@pytest.mark.parametrize("prefilter", [True, False])
def test_a_non_ascii_letter_that_folds_to_ascii_is_read_like_its_ascii_twin(prefilter):
    """The regexes ignore case, so "ſplit up" matches "split up"; a literal prefilter on the
    lowered text must not rule the regex out (it did: the fact read as having no slot)."""
    ex = Detector(prefilter=prefilter).extractor
    for ascii_text in ("Priya and Tom split up last month", "I have been married since 2019",
                       "She speaks Dutch and Thai"):
        folded = ascii_text.replace("s", LONG_S)
        assert folded != ascii_text
        want = [(s.name, s.kind, s.value) for s in ex.read(ascii_text).slots]
        assert want, ascii_text
        assert [(s.name, s.kind, s.value) for s in ex.read(folded).slots] == want, folded


def test_a_duration_unit_spelt_with_a_folding_letter_is_read_not_a_crash():
    """"for 3 yearſ" matches the duration guard ignoring case; its unit used to be looked up
    verbatim and raised KeyError in the middle of a sync."""
    ex = Detector().extractor
    for ascii_text in ("I have been married for 3 years", "I live in Berlin for 3 years now",
                       "I work at Google for 2 years now"):
        want = [(s.name, s.value, s.held_days) for s in ex.read(ascii_text).slots]
        assert want and want[0][2] is not None, ascii_text
        for spelt in ("year" + LONG_S, "YEARS"):
            text = ascii_text.replace("years", spelt)
            assert [(s.name, s.value, s.held_days) for s in ex.read(text).slots] == want, text


@pytest.mark.parametrize("source, literals", [
    # the parser moves a prefix the alternatives share out of them: it is put back on each
    (r"\b(?:jk|j/k|just kidding|just joking)\W*$", ("j/k", "jk", "just joking", "just kidding")),
    (r"(?:works|worked) (?:at|for) (\w+)", ("worked", "works")),
    # a question mark stands alone, and outranks a list of short words found inside others
    (r"^\W*(?:is|are|do|does)\b.*\?\s*$", ("?",)),
    (r"^(?!\W*(?:can you )).*(?<![?!])\?\s*$", ("?",)),
    (r"x(?:y|z)", None),                      # a single letter and a class: nothing to require
    # alternatives that are whole words take the literal after them ("example" holds "am")
    (r"\b(?:i am|is|am|are) (?:now )?(?:an? |the )(\w+)", ("am ", "are ", "i am ", "is ")),
    (r"(?:is|a[mr]e) now", (" now",)),       # not every alternative a word: the literal alone
])
def test_required_literals_of_shared_prefixes_and_question_marks(source, literals):
    from memwatch_overlay.overlay.detect.pack import parse_required_literals
    assert parse_required_literals(source, re.I) == literals


def test_words_that_only_hold_a_listed_word_are_not_searched():
    """A regex opening with a list of short words and a space is run on a clause holding one
    of them followed by a space, not on every clause where one occurs inside a longer word."""
    rx = re.compile(r"\b(?:i am|is|am|are|now) (?:an? |the )(\w+)", re.I)
    pf = Prefilter([rx])
    for text in ("has a dog named rex", "mail3@example.com", "history of care", "i know"):
        assert not pf.mask(text) & pf.bit(rx) and rx.search(text) is None, text
    assert pf.mask("she is a nurse") & pf.bit(rx) and rx.search("she is a nurse")


def test_a_plain_statement_is_not_searched_for_questions_or_retractions():
    """The question and retraction guards (one merged regex each) have literals the
    prefilter reads: a clause without "?" or "kidding" never runs them."""
    ex = Detector().extractor
    bits = ex.guards.bits
    plain = ex._masks([("Works at Acme 7", "Works at Acme 7")])[0]
    asked = ex._masks([("Do you still work at Acme?", "Do you still work at Acme?")])[0]
    joking = ex._masks([("just kidding", "just kidding")])[0]
    assert not plain & bits["question"] and not plain & bits["retraction"]
    assert asked & bits["question"] and joking & bits["retraction"]
