"""The pack's alternations written for Python's regex engine match what the flat ones match.

- `value_stop` words, looked ahead for at every token of a captured value, as a trie
  (pack.word_trie): it matches exactly the words, whatever it tries first.
- A lexicon's items grouped behind their first letter (pack.alternation): the same matches,
  tried in the same order (which item a match took shows in the groups that follow it).
- The shipped pack compiled both ways reads every test text the same.
"""
from __future__ import annotations

import random
import re
import string
import tomllib
from pathlib import Path

import pytest

from memwatch_overlay.overlay.detect import pack as P
from memwatch_overlay.overlay.detect.slots import Extractor

from test_slot_prefilter import _read_or_error, _texts

SLOTS_TOML = Path(P.__file__).resolve().parents[2] / "rules" / "slots.toml"


def _shipped() -> dict:
    return tomllib.loads(SLOTS_TOML.read_text("utf-8"))


def _flat(items) -> str:
    return "(?:" + "|".join(items) + ")"


def test_word_trie_matches_exactly_its_words():
    rnd = random.Random(7)
    shipped = sorted(w.lower() for w in _shipped()["anchors"]["value_stop"])
    made = ["".join(rnd.choice("abt'-") for _ in range(rnd.randint(1, 5))) for _ in range(300)]
    for words in (shipped, made, ["the", "them", "then", "a", "at", "part-time", "who's"], ["only"], [""]):
        rx = re.compile(P.word_trie(words), re.IGNORECASE)
        wanted = set(words)
        candidates = set(words) | {w[:i] for w in words for i in range(len(w))} | {w + c for w in words for c in "as'"}
        candidates |= {w.upper() for w in words} | {w.title() for w in words}
        for cand in candidates:
            assert (rx.fullmatch(cand) is not None) == (cand.lower() in wanted), (words[:5], cand)


def test_the_shipped_value_stop_look_ahead_is_a_trie():
    stop = frozenset(w.lower() for w in _shipped()["anchors"]["value_stop"])
    tok = P._builtins(stop, None)["WORD"]
    assert f"(?!(?:{P.word_trie(stop)})\\b)" in tok


def _ordered_matches(alt: str, texts: list[str]) -> list:
    """Every match of the alternation followed by what may come after it, with the span of
    what it took itself: which item matched first shows."""
    rx = re.compile(rf"\b(?P<item>{alt})(?P<rest>s?\b|[\w-]*)", re.IGNORECASE)
    return [[(m.span(), m.span("item")) for m in rx.finditer(t)] for t in texts]


@pytest.mark.parametrize("name", sorted(tomllib.loads(SLOTS_TOML.read_text("utf-8"))["lexicon"]))
def test_a_grouped_lexicon_matches_in_the_flat_ones_order(name):
    items = _shipped()["lexicon"][name]
    grouped = P.alternation(items)
    rnd = random.Random(name)
    plain = [i for i in items if re.fullmatch(r"[\w' -]+", i)]
    texts = _texts(400, seed=3)
    # the lexicon's own words run together, cut short, extended, re-cased
    for _ in range(400):
        words = [rnd.choice(plain) if plain else "x" for _ in range(rnd.randint(1, 4))]
        words = [w[:rnd.randint(1, len(w))] if rnd.random() < 0.2 else w for w in words]
        words = [w + rnd.choice(("", "s", "er", "-x")) for w in words]
        texts.append(rnd.choice((" ", "", "-", " and ")).join(words).upper() if rnd.random() < 0.2
                     else " ".join(words))
    assert _ordered_matches(grouped, texts) == _ordered_matches(_flat(items), texts)


def test_items_shared_prefixes_keep_their_order():
    items = ["vet", "vet tech", "veterinarian", "analyst", "vp", "a", "an"]
    assert P.alternation(items) == "(?:v(?:et|et tech|eterinarian|p)|a(?:nalyst||n))"
    texts = ["vet tech", "veterinarian", "a vp", "an analyst", "vets"]
    assert _ordered_matches(P.alternation(items), texts) == _ordered_matches(_flat(items), texts)


@pytest.mark.parametrize("items", [
    ["a|b", "ac"],                  # its own top-level alternation
    ["a(b)", "ac"],                 # a capturing group: moved, it would renumber the rest
    ["a(?P<x>b)", "ac"],
    ["a?b", "ac"],                  # the quantifier belongs to the first letter
    ["a x", "Ab", "a"],             # two first letters that differ only in case ("ab": Ab, not a)
    ["[ab]c", "ad"],                # not a letter first
    ["\\bx", "xy"],
    ["é", "ea"],
    ["x[\\]]|y", "xz"],             # "|" after a class that holds "]"
])
def test_an_alternation_that_cannot_be_grouped_stays_flat(items):
    assert P.alternation(items) == _flat(items)


def test_brackets_and_escapes_hide_a_bar_from_the_grouping():
    assert P.alternation(["x[|]y", "xz"]) == "(?:x(?:[|]y|z))"
    assert P.alternation(["x[]|]y", "xz"]) == "(?:x(?:[]|]y|z))"
    assert P.alternation(["x\\|y", "xz"]) == "(?:x(?:\\|y|z))"
    assert P.alternation(["x(?:a|b)", "xz"]) == "(?:x(?:(?:a|b)|z))"


def test_no_character_matches_two_ascii_letters():
    """What grouping by first letter rests on, under the pack's flags."""
    letters = {c: re.compile(c, P._FLAGS) for c in string.ascii_lowercase}
    for cp in range(0x110000):
        ch = chr(cp)
        assert sum(1 for rx in letters.values() if rx.match(ch)) <= 1, hex(cp)


def test_the_shipped_pack_reads_as_it_does_with_flat_alternations(monkeypatch):
    data = _shipped()
    grouped = P.compile_pack(data, "grouped")
    monkeypatch.setattr(P, "alternation", _flat)
    monkeypatch.setattr(P, "word_trie", lambda words: "|".join(sorted(map(re.escape, words), key=len, reverse=True)))
    flat = P.compile_pack(data, "flat")
    assert any(len(r.pattern) != len(s.pattern) for a, b in zip(grouped.slots, flat.slots)
               for r, s in zip(a.assert_, b.assert_))
    fast, slow = Extractor(grouped), Extractor(flat)
    texts = _texts(2500, seed=29)
    said = 0
    for t in texts:
        a, b = _read_or_error(fast, t), _read_or_error(slow, t)
        assert a == b, t
        said += not isinstance(a, str) and bool(a.slots)
    assert said > len(texts) // 3
