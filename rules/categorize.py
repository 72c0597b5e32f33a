"""Category assignment: explicit category column > [[rules]] > default pack > `general`."""
from __future__ import annotations

import fnmatch
import re
import tomllib
from functools import lru_cache
from importlib import resources

from memwatch_overlay.rules.policy import DEFAULT_CATEGORY
from memwatch_overlay.rules.config import DEFAULT_MAX_TEXT_CHARS, Rule, _parse_rule, _Validator
from memwatch_overlay.rules.regexset import Candidates, RegexSet

DEFAULT_PACK = "default_rules.toml"
KEY_CACHE_SIZE = 4096
UNKNOWN_VALUES_KEPT = 64    # distinct unknown category-column values remembered for the warning


@lru_cache(maxsize=1)
def default_rules() -> tuple[Rule, ...]:
    """The rule pack shipped in rules/default_rules.toml."""
    text = resources.files(__package__).joinpath(DEFAULT_PACK).read_text(encoding="utf-8")
    v = _Validator(DEFAULT_PACK)
    return tuple(_parse_rule(v, body, i) for i, body in enumerate(tomllib.loads(text)["rules"]))


class _CompiledRule:
    """One rule with its globs and regexes folded into one pattern each (one search per rule)."""

    def __init__(self, rule: Rule):
        self.category = rule.category
        self.source = rule.source
        self.catch_all = not rule.key and not rule.text
        self.globs = tuple(g.lower() for g in rule.key)
        self.key = (re.compile("|".join(fnmatch.translate(g) for g in self.globs))
                    if rule.key else None)
        self.text = (re.compile("|".join(_scoped(p.pattern) for p in rule.text), re.IGNORECASE)
                     if rule.text else None)


_LEADING_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def _scoped(pattern: str) -> str:
    """`pattern` as a group that can stand beside others in one alternation.

    A pattern's leading global flags (`(?s)a.b`) become the group's scoped flags
    (`(?s:a.b)`): the same meaning for the same text, while Python refuses global flags
    anywhere but at the very start of the joined expression. Under verbose (`x`) a newline
    ends a trailing `# comment` before the group closes."""
    flags, rest = "", pattern
    while (m := _LEADING_FLAGS.match(rest)):
        flags, rest = flags + m.group(1), rest[m.end():]
    if not flags:
        return f"(?:{pattern})"
    return f"(?{flags}:{rest}\n)" if "x" in flags else f"(?{flags}:{rest})"


_LITERAL_GLOB = re.compile(r"(\*?)([^*?\[\]]+)(\*?)", re.DOTALL)


class KeyGate:
    """Whether any of some globs (lowered, fnmatch's) matches a lowered key, for keys no glob
    takes (an item id, a uuid) told without a regex: one alternation of fnmatch's patterns
    costs about 4 µs for a short key and 15 µs for a uuid in `re` (each `.*?` alternative
    scans the key). Most globs are a literal with a `*` at either end or none: `*email*` is
    'contains' (all of them one alternation of plain strings), `job*` 'starts with', `*_at`
    'ends with', `mail` 'equals'; only the other globs (`?`, `[…]`, an inner `*`) go through
    fnmatch's patterns. 100k keys (default pack): 0.37 → 0.04 s short ids, 1.46 → 0.07 s uuids."""

    def __init__(self, globs: list[str]):
        contains, prefixes, suffixes, exact, other = [], [], [], set(), []
        for glob in globs:
            m = _LITERAL_GLOB.fullmatch(glob)
            if m is None:
                other.append(glob)
                continue
            lead, literal, tail = m.groups()
            if lead and tail:
                contains.append(literal)
            elif tail:
                prefixes.append(literal)
            elif lead:
                suffixes.append(literal)
            else:
                exact.add(literal)
        # the 'contains' literals as one alternation of plain strings: `re` finds those fast
        self.contains = (re.compile("|".join(re.escape(t) for t in dict.fromkeys(contains)), re.DOTALL)
                         if contains else None)
        self.prefixes, self.suffixes, self.exact = tuple(prefixes), tuple(suffixes), frozenset(exact)
        self.other = re.compile("|".join(fnmatch.translate(g) for g in other)) if other else None

    def match(self, key: str) -> bool:
        if key in self.exact or key.startswith(self.prefixes) or key.endswith(self.suffixes):
            return True
        if self.contains is not None and self.contains.search(key) is not None:
            return True
        return self.other is not None and self.other.match(key) is not None


class Categorizer:
    """Assigns a category to a record; user rules first, first match wins.

    Key matches are cached per (source, key): stores reuse a handful of keys across
    millions of rows, and a key that matches decides without looking at the text. The text
    regexes of the rules before that one are searched through a RegexSet: one RE2 pass per
    text when google-re2 is installed and `accelerate` is on, Python `re` otherwise; the
    answer is Python `re`'s either way (rules/regexset.py).
    """

    def __init__(self, rules: list[Rule] | tuple[Rule, ...] = (), known: set[str] | None = None,
                 use_default_pack: bool = True, accelerate: bool = True, aliases: dict[str, str] | None = None,
                 max_text_chars: int = DEFAULT_MAX_TEXT_CHARS):
        # texts longer than this are categorised by their beginning ([limits] max_text_chars):
        # a regex over a megabyte of text, once per rule, is what made long texts slow
        self.max_text_chars = max_text_chars
        self.truncated = 0            # texts read truncated since the last take_truncated()
        self.rules = list(rules) + (list(default_rules()) if use_default_pack else [])
        self.aliases = dict(aliases or {})
        # category-column values that name no known category (the rules decided instead),
        # with a count each; take_unknown() hands each value over once
        self.unknown: dict[str, int] = {}
        self._told: set[str] = set()
        self._compiled = [_CompiledRule(r) for r in self.rules]
        self.known = known
        self._text_rule_index = [i for i, rule in enumerate(self._compiled) if rule.text is not None]
        self._text_regexes = RegexSet([self._compiled[i].text for i in self._text_rule_index],
                                      accelerate=accelerate)
        self._candidates: dict[tuple[str | None, int], Candidates] = {}
        self._key_gates: dict[str | None, tuple[int, KeyGate | None]] = {}
        self._key_hits = lru_cache(maxsize=KEY_CACHE_SIZE)(self._key_decision)

    @property
    def accelerated(self) -> bool:
        """Whether RE2 answers for (ASCII) texts; False means every text goes through `re`."""
        return self._text_regexes.accelerated

    def _first_key_rule(self, source: str | None, key: str | None) -> int:
        """Index of the first rule whose globs match `key` (len(rules) when none).

        A key that no rule's globs match (an item id, a uuid: a new key per row, which the
        key cache never sees twice) is told by one match of all the globs together
        (`_key_gate`); only a key that some glob matches is tried rule by rule."""
        lowered = key.lower() if key else None
        gate = self._key_gates.get(source)
        if gate is None:
            gate = self._key_gates[source] = self._key_gate(source)
        stop, any_glob = gate
        if not lowered or any_glob is None or not any_glob.match(lowered):
            return stop
        for i, rule in enumerate(self._compiled):
            if rule.source is not None and rule.source != source:
                continue
            if rule.catch_all or (rule.key is not None and rule.key.match(lowered)):
                return i
        return len(self._compiled)

    def _key_gate(self, source: str | None) -> tuple[int, KeyGate | None]:
        """For keys of `source`: the first rule that takes any key (a catch-all; len(rules)
        when none), and the KeyGate of the globs of the rules before it (None: no globs)."""
        globs: list[str] = []
        for i, rule in enumerate(self._compiled):
            if rule.source is not None and rule.source != source:
                continue
            if rule.catch_all:
                break
            globs += rule.globs
        else:
            i = len(self._compiled)
        return i, KeyGate(globs) if globs else None

    def _key_decision(self, source: str | None, key: str | None) -> tuple[int, Candidates]:
        """The first key-matching rule, and the text regexes of the rules before it that
        apply to `source` (as RegexSet candidates)."""
        stop = self._first_key_rule(source, key)
        cached = self._candidates.get((source, stop))
        if cached is None:
            cached = self._text_regexes.candidates(
                [n for n, i in enumerate(self._text_rule_index)
                 if i < stop and self._compiled[i].source in (None, source)])
            self._candidates[(source, stop)] = cached
        return stop, cached

    def categorize(self, source: str | None, key: str | None, text: str | None,
                   explicit: str | None = None) -> str:
        if explicit:
            explicit = str(explicit).strip().lower()
            explicit = self.aliases.get(explicit, explicit)
            if explicit and (self.known is None or explicit in self.known):
                return explicit
            if explicit and (explicit in self.unknown or len(self.unknown) < UNKNOWN_VALUES_KEPT):
                self.unknown[explicit] = self.unknown.get(explicit, 0) + 1
        return self._by_text(text, *self._key_hits(source, key))

    def _by_text(self, text: str | None, stop: int, candidates: Candidates) -> str:
        """The category of `text` given its key's decision (_key_decision): the first text rule
        before `stop` that matches, else the key's rule, else the default."""
        if text and len(text) > self.max_text_chars:
            text = text[:self.max_text_chars]
            self.truncated += 1
        if text and candidates:
            hit = self._text_regexes.first_match(text, candidates)
            if hit is not None:
                return self._compiled[self._text_rule_index[hit]].category
        if stop < len(self._compiled):
            return self._compiled[stop].category
        return DEFAULT_CATEGORY

    def categorize_page(self, records) -> list[str]:
        """[categorize(r.source, r.key, r.text, r.category) for r in records], with the same
        side effects: the sync categorises a page at a time (categorize_rows)."""
        return self.categorize_rows((r.source, r.key, r.text, r.category) for r in records)

    def categorize_rows(self, rows) -> list[str]:
        """[categorize(source, key, text, category) for each (source, key, text, category)
        tuple], with the same side effects (unknown category values counted, truncated texts
        counted), without the per-row call through categorize(): a page of Records
        (categorize_page) or of staged rows (the SQL first load)."""
        out: list[str] = []
        append = out.append
        categorize, key_hits, by_text = self.categorize, self._key_hits, self._by_text
        for source, key, text, category in rows:
            if category:
                append(categorize(source, key, text, category))
            else:
                append(by_text(text, *key_hits(source, key)))
        return out

    def take_truncated(self) -> str | None:
        """The warning about texts read truncated since the last call, or None."""
        n, self.truncated = self.truncated, 0
        if not n:
            return None
        return (f"{n} text(s) longer than {self.max_text_chars} characters: categories and contradiction "
                f"slots were read from the first {self.max_text_chars} ([limits] max_text_chars)")

    def take_unknown(self) -> dict[str, int]:
        """Unknown category-column values not handed over before (value -> facts), once each."""
        new = {v: n for v, n in self.unknown.items() if v not in self._told}
        self._told.update(new)
        return new


def unknown_categories_warning(values: dict[str, int]) -> str:
    """The one warning about category-column values that name no category."""
    shown = ", ".join(f"{v!r} ({n})" for v, n in sorted(values.items(), key=lambda kv: -kv[1])[:8])
    more = f" and {len(values) - 8} more" if len(values) > 8 else ""
    first = sorted(values)[0]
    return (f"category column values that are not categories: {shown}{more}; those facts were "
            f"categorised by the rules instead. Map a value to a category in memwatch.toml, e.g. "
            f"[categories.preference] aliases = [{first!r}]")
