"""Category assignment: explicit category column > [[rules]] > default pack > `general`."""
from __future__ import annotations

import fnmatch
import tomllib
from functools import lru_cache
from importlib import resources

from ..overlay.scoring import DEFAULT_CATEGORY
from .config import Rule, _parse_rule, _Validator

DEFAULT_PACK = "default_rules.toml"


@lru_cache(maxsize=1)
def default_rules() -> tuple[Rule, ...]:
    """The rule pack shipped in rules/default_rules.toml."""
    text = resources.files(__package__).joinpath(DEFAULT_PACK).read_text(encoding="utf-8")
    v = _Validator(DEFAULT_PACK)
    return tuple(_parse_rule(v, body, i) for i, body in enumerate(tomllib.loads(text)["rules"]))


class Categorizer:
    """Assigns a category to a record; user rules first, first match wins."""

    def __init__(self, rules: list[Rule] | tuple[Rule, ...] = (), known: set[str] | None = None,
                 use_default_pack: bool = True):
        self.rules = list(rules) + (list(default_rules()) if use_default_pack else [])
        self.known = known

    def categorize(self, source: str | None, key: str | None, text: str | None,
                   explicit: str | None = None) -> str:
        if explicit:
            explicit = str(explicit).strip().lower()
            if explicit and (self.known is None or explicit in self.known):
                return explicit
        for rule in self.rules:
            if rule.source is not None and rule.source != source:
                continue
            if not rule.key and not rule.text:
                return rule.category  # a catch-all rule for this source
            if key and rule.key and any(fnmatch.fnmatchcase(key.lower(), g.lower()) for g in rule.key):
                return rule.category
            if text and any(p.search(text) for p in rule.text):
                return rule.category
        return DEFAULT_CATEGORY
