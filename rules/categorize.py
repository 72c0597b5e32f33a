"""Category assignment: explicit category column > [[rules]] > default pack > `general`."""
from __future__ import annotations

import fnmatch
import re
import tomllib
from functools import lru_cache
from importlib import resources

from ..overlay.scoring import DEFAULT_CATEGORY
from .config import Rule, _parse_rule, _Validator

DEFAULT_PACK = "default_rules.toml"
KEY_CACHE_SIZE = 4096


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
        self.key = (re.compile("|".join(fnmatch.translate(g.lower()) for g in rule.key))
                    if rule.key else None)
        self.text = (re.compile("|".join(f"(?:{p.pattern})" for p in rule.text), re.IGNORECASE)
                     if rule.text else None)


class Categorizer:
    """Assigns a category to a record; user rules first, first match wins.

    Key matches are cached per (source, key): stores reuse a handful of keys across
    millions of rows, and a key that matches decides without looking at the text.
    """

    def __init__(self, rules: list[Rule] | tuple[Rule, ...] = (), known: set[str] | None = None,
                 use_default_pack: bool = True):
        self.rules = list(rules) + (list(default_rules()) if use_default_pack else [])
        self._compiled = [_CompiledRule(r) for r in self.rules]
        self.known = known
        self._key_hits = lru_cache(maxsize=KEY_CACHE_SIZE)(self._first_key_rule)

    def _first_key_rule(self, source: str | None, key: str | None) -> int:
        """Index of the first rule whose globs match `key` (len(rules) when none)."""
        lowered = key.lower() if key else None
        for i, rule in enumerate(self._compiled):
            if rule.source is not None and rule.source != source:
                continue
            if rule.catch_all or (lowered and rule.key is not None and rule.key.match(lowered)):
                return i
        return len(self._compiled)

    def categorize(self, source: str | None, key: str | None, text: str | None,
                   explicit: str | None = None) -> str:
        if explicit:
            explicit = str(explicit).strip().lower()
            if explicit and (self.known is None or explicit in self.known):
                return explicit
        stop = self._key_hits(source, key)
        if text:
            for rule in self._compiled[:stop]:
                if rule.text is not None and (rule.source is None or rule.source == source) \
                        and rule.text.search(text):
                    return rule.category
        if stop < len(self._compiled):
            return self._compiled[stop].category
        return DEFAULT_CATEGORY
