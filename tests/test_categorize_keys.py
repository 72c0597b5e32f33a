"""The first rule whose key globs match a key: one match of all the globs together tells a key
that no rule takes (an item id, a uuid: a new key per row), and only a key some glob matches
is tried rule by rule. The answer is the rule-by-rule loop's for every key, source and rule
order (rules scoped to a source, catch-alls, text-only rules between them)."""
from __future__ import annotations

import random
import re

from memwatch_overlay.rules.categorize import Categorizer
from memwatch_overlay.rules.config import Rule

RULES = [
    Rule("employment", key=["employer", "job*", "*_title"]),
    Rule("contact", source="crm", key=["*phone*", "email"]),
    Rule("preference", text=[re.compile(r"\blikes?\b")]),
    Rule("location", key=["city", "home_?ddress"]),
    Rule("fact", source="crm"),                    # a catch-all for crm's keys only
    Rule("skill", key=["lang*", "*skill"]),
    Rule("general"),                               # a catch-all for every other source
    Rule("belief", key=["opinion"]),               # never reached
]
WORDS = ["employer", "job", "jobs", "job_title", "title", "mobile_phone", "phone", "email", "e-mail",
         "city", "homeaddress", "home_address", "language", "languages", "skill", "hard_skill", "opinion",
         "m1", "m2", "550e8400-e29b-41d4-a716-446655440000", "", "CITY", "Employer", "favourite_food"]


def reference(cat: Categorizer, source: str | None, key: str | None) -> int:
    """The rule-by-rule loop: the first rule of `source` that is a catch-all or whose globs match."""
    lowered = key.lower() if key else None
    for i, rule in enumerate(cat._compiled):
        if rule.source is not None and rule.source != source:
            continue
        if rule.catch_all or (lowered and rule.key is not None and rule.key.match(lowered)):
            return i
    return len(cat._compiled)


def test_the_first_key_rule_is_the_loops_for_every_key_and_source():
    rnd = random.Random(7)
    keys = WORDS + ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz_-*?[]0123456789") for _ in range(rnd.randrange(1, 12)))
                    for _ in range(2000)]
    for rules, pack in ((RULES, False), (RULES[:4] + RULES[5:6], False), ([], True), (RULES[:2], True)):
        cat = Categorizer(rules, use_default_pack=pack)
        for source in (None, "crm", "bot"):
            for key in keys + [None]:
                assert cat._first_key_rule(source, key) == reference(cat, source, key), (rules, source, key)


class Counted:
    """A compiled key pattern that counts its matches."""

    def __init__(self, pattern: re.Pattern, calls: list):
        self.pattern, self._rx, self._calls = pattern.pattern, pattern, calls

    def match(self, text):
        self._calls.append(text)
        return self._rx.match(text)


def test_a_key_no_rule_takes_is_matched_once_not_once_per_rule():
    cat = Categorizer(use_default_pack=True)
    calls: list[str] = []
    for rule in cat._compiled:
        if rule.key is not None:
            rule.key = Counted(rule.key, calls)
    keyed = sum(1 for r in cat._compiled if r.key is not None)
    assert keyed >= 5        # (the default pack has key rules for this to count)
    for i in range(1000):           # 1,000 item ids: no rule's globs take them
        cat.categorize("bot", f"item-{i}", "some memory")
    assert calls == []
    cat.categorize("bot", "employer", "Acme")     # a key some glob takes: tried rule by rule
    assert 0 < len(calls) <= keyed


def test_the_key_gate_is_fnmatch_for_globs_of_every_shape():
    """KeyGate tells 'contains', 'starts with', 'ends with' and 'equals' globs with str methods
    and the rest with fnmatch's patterns: the same answer as fnmatch for any globs and key."""
    import fnmatch

    from memwatch_overlay.rules.categorize import KeyGate
    rnd = random.Random(11)
    alphabet = "ab_.-(\n*?[]!"

    def word(n: int) -> str:
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, n)))

    shapes = [lambda w: f"*{w}*", lambda w: f"{w}*", lambda w: f"*{w}", lambda w: w, lambda w: f"{w}*{w}",
              lambda w: f"{w}?", lambda w: f"[ab]{w}", lambda w: "*", lambda w: "**" + w]
    for _ in range(400):
        globs = [rnd.choice(shapes)(word(4).replace("*", "").replace("?", "").replace("[", "").replace("]", ""))
                 for _ in range(rnd.randrange(1, 6))]
        globs += [word(5) for _ in range(rnd.randrange(0, 2))]        # any glob at all
        gate = KeyGate(globs)
        for key in [word(8) for _ in range(60)] + ["", "a", "ab", "b_a", "550e8400-e29b-41d4"]:
            expected = any(fnmatch.fnmatchcase(key, g) for g in globs)
            assert gate.match(key) == expected, (globs, key)
