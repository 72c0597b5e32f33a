"""The shipped pack's regexes are compiled when first used, and read exactly as compiled ones."""
from __future__ import annotations

import pickle
import re

from memwatch_overlay.overlay.detect import pack as P
from memwatch_overlay.overlay.detect.slots import Extractor

TEXTS = ["Works at Google", "I moved to Surabaya last month, but I miss Leeds",
         "my email is ann@example.com", "I no longer eat meat", "We adopted a second cat",
         "Ahora trabajo en Globant", "Is she still at Acme?", "Quit smoking in 2019"]


def _all_patterns(pack):
    out = [r for rxs in pack.guards.values() for r in rxs] + [c.pattern for c in pack.cues]
    out += [r for rxs in pack.category_words.values() for r in rxs]
    for sd in pack.slots:
        out += [*sd.assert_, *sd.deny, *sd.end, *sd.event, *sd.reject]
        for table in (sd.terms, sd.implied, sd.families):
            out += [r for rxs in table.values() for r in rxs]
    return out


def test_every_regex_of_the_shipped_pack_compiles():
    # lazy compilation would only report a bad regex at its first use: check them all here
    lazy = _all_patterns(P.load_pack())
    assert lazy and all(isinstance(r, P.LazyPattern) for r in lazy)
    for r in lazy:
        assert isinstance(r.regex(), re.Pattern)


def test_building_an_extractor_compiles_no_slot_regex_and_reading_compiles_few():
    pack = P._load_pack(None, lazy=True)            # a fresh pack: nothing compiled yet
    before = P.LazyPattern.compiled
    ex = Extractor(pack)
    built = P.LazyPattern.compiled - before        # only guards that could not be merged
    ex.read("Works at Google")
    read = P.LazyPattern.compiled - before - built
    total = len(_all_patterns(pack))
    assert built == 0 and 0 < read <= 12 and total > 300


def test_lazy_and_eager_packs_read_the_same():
    eager = Extractor(P._load_pack(None, lazy=False))
    lazy = Extractor(P._load_pack(None, lazy=True))
    assert not isinstance(eager.pack.slots[0].assert_[0], P.LazyPattern)
    for t in TEXTS:
        assert lazy.read(t) == eager.read(t), t


def test_a_lazy_pattern_behaves_as_its_regex():
    lp = P.LazyPattern(r"works at (?P<v>\w+)", re.I)
    rx = re.compile(lp.pattern, lp.flags)
    text = "She WORKS AT Acme, he works at Initech"
    assert lp.search(text).group("v") == rx.search(text).group("v")
    assert [m.span() for m in lp.finditer(text)] == [m.span() for m in rx.finditer(text)]
    assert lp.fullmatch("works at x") and lp.findall(text) == rx.findall(text)
    assert lp.groupindex == rx.groupindex and lp.groups == 1
    again = pickle.loads(pickle.dumps(lp))
    assert again.pattern == lp.pattern and again.search(text).span() == rx.search(text).span()


def test_a_user_pack_is_compiled_at_load_time(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text('version = 1\n[[slots]]\nname = "x"\ncategory = "fact"\nassert = ["works at (?P<v>\\\\w+)"]\n')
    assert isinstance(P.load_pack(str(p)).slot("x").assert_[0], re.Pattern)


def test_the_prefilter_reads_literals_from_a_much_shorter_source():
    # the value placeholders' stop-word look-aheads are dropped from what is parsed for
    # the prefilter's literals: the same literals, a fraction of the characters parsed
    pats = _all_patterns(P._load_pack(None, lazy=True))
    for p in pats:
        assert P.required_literals(p) == P._required_literals(p.pattern, p.flags), p.pattern
    parsed = sum(len(p.literal_source) for p in pats)
    # (a third at most until the look-aheads were written as tries, pack.word_trie: what
    # the parse skips got shorter)
    assert parsed * 2.5 < sum(len(p.pattern) for p in pats)


def test_the_shipped_literals_file_is_what_the_parser_reads_from_the_shipped_pack():
    # rules/prefilter_literals.json spares a detector's start the parsing of every regex;
    # stale (rules/slots.toml edited without re-running tools/prefilter_literals.py), it would
    # let the prefilter skip a regex that can match: it must hold exactly the parser's reading
    import json
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import prefilter_literals
    shipped = json.loads((Path(prefilter_literals.OUT)).read_text(encoding="utf-8"))["literals"]
    assert shipped == prefilter_literals.literals(), "re-run tools/prefilter_literals.py"
    assert len(shipped) > 200


def test_a_regex_the_literals_file_does_not_hold_is_parsed(monkeypatch):
    parsed = []
    real = P.parse_required_literals
    monkeypatch.setattr(P, "parse_required_literals", lambda source, flags: parsed.append(source) or real(source, flags))
    P._required_literals.cache_clear()
    try:
        shipped = P._load_pack(None, lazy=True).slot("employer").assert_[0]
        assert P.required_literals(shipped) and parsed == []          # from the file
        mine = re.compile(r"(?:works|worked) (?:at|for) (\w+)", re.I)    # a user's regex
        assert P.required_literals(mine) == ("worked", "works") and parsed == [mine.pattern]
    finally:
        P._required_literals.cache_clear()
