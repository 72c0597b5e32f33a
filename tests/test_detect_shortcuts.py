"""Shortcuts in reading a text give what the long way gives.

- A slot's families are matched by one regex (slots._families_regex) instead of regex by
  regex: the same family for every word and phrase.
- A text that holds no name's first three letters is not looked at for names
  (detector._may_name): whenever the long checks find a name, the shortcut lets them run.
- Index terms do not look for the subject's names among a reading's anchors and cue scopes:
  a reading read() gives never holds one there.
"""
from __future__ import annotations

import itertools
import random

import pytest

import contradiction_cases
from memwatch_overlay.overlay.detect.detector import (Detector, FactView, _may_name, _name_form, _names_in,
                                                      subject_words)
from memwatch_overlay.overlay.detect.pack import load_pack
from memwatch_overlay.overlay.detect.slots import _family, _families_regex


def _texts() -> list[str]:
    out = []
    for older, _, newer, _ in contradiction_cases.PARAPHRASES:
        out += [older, newer]
    return out


def _family_by_loop(sd, word):
    """_family's regex-by-regex path (what a slot whose families cannot be merged takes)."""
    saved = _families_regex(sd)
    sd.__dict__["_families_regex"] = None
    try:
        return _family(sd, word)
    finally:
        sd.__dict__["_families_regex"] = saved


def test_merged_families_give_the_family_the_loop_gives():
    pack = load_pack()
    with_families = [sd for sd in pack.slots if sd.families]
    assert len(with_families) >= 5
    rnd = random.Random(7)
    words = ["", "dog", "puppies", "a puppy", "the cats", "bunnies", "swim race", "baking", "baked bread",
             "driver's license", "grandkids", "half-marathons", "rental property", "chickpeas", "garbanzo beans",
             "unknown thing", "two dogs and a cat", "cat dog", "coding and reading", "ski trips"]
    words += [w for sd in with_families for w in sd.families]          # each family's own name
    words += [" ".join(rnd.sample(words, 2)) for _ in range(60)]       # phrases mixing families
    seen = set()
    for sd in with_families:
        assert _families_regex(sd) is not None
        for w in words:
            got = _family(sd, w)
            assert got == _family_by_loop(sd, w), (sd.name, w)
            seen.add(got in sd.families)
    assert seen == {True, False}            # both a family and a plain value were given


def test_may_name_never_skips_a_text_the_long_checks_would_read_for_names():
    ex = Detector().extractor
    names_of = [subject_words(s) for s in ("u_alice", "tom", "user_alex", "u17", "ali", "priya_k", "zoë")]
    texts = _texts() + ["ALICE moved to Oslo", "Alice's new job", "alic", "Tomás left", "Tom's cat",
                        "ALİCE is here", "zoë moved", "ZOË quit", "Σοφία left her job", "u17 said hi"]
    skipped = 0
    for text, names in itertools.product(texts, names_of):
        base = ex.read(text)
        long_way = ex.names_a_word(base.text, names) or _names_in(base, names)
        if not _may_name(base.text, names):
            skipped += 1
            assert not long_way, (text, names)
    assert skipped > len(texts)             # the shortcut does skip texts without the names


def test_a_reading_holds_no_name_of_its_subject_in_anchors_or_cue_scopes():
    det = Detector()
    checked = 0
    for (text, subject), key in itertools.product(
            [("Alice moved to Lisbon and Alice loves it", "u_alice"), ("Tom quit his job at Acme", "tom"),
             ("No longer working with Alex at Initech", "user_alex"), ("Alex and I broke up", "alex")]
            + [(t, s) for t in _texts() for s in ("tom", "alex")], (None, "employer")):
        r = det.read(FactView(ref="r", subject=subject, key=key, text=text, category="general", learned_at=0.0))
        names = subject_words(subject)
        words = list(r.anchors) + [w for c in r.cues for w in c.scope]
        assert not any(_name_form(w, n) for w in words for n in names), (text, subject)
        checked += any(n in text.lower() for n in names)
    assert checked >= 8                     # texts that do name their subject were among them


@pytest.mark.parametrize("subject", ["u_alice", "tom"])
def test_index_terms_of_a_text_naming_its_subject_have_no_word_term_for_the_name(subject):
    det = Detector()
    name = next(iter(subject_words(subject)))
    fact = FactView(ref="r", subject=subject, key=None, text=f"{name.title()} no longer works at Acme",
                    category="employment", learned_at=0.0)
    offers, wants = det.offers_and_wants(fact, learned=False)
    assert ("word", name[:5]) not in offers | wants
    assert {t for t in offers | wants if t[0] == "word"} >= {("word", "acm"), ("word", "long")}    # the other words
