"""Presets: known agent-framework stores, recognised by their tables and columns.

A preset is a thin subclass of a connector with
- `preset` (its name, used as `preset = "…"` in memwatch.toml),
- `defaults`: the [[sources]] mapping it fills in (table, id, text, subject, …),
- `match(tables)`: a score and the reasons it matched, or None,
- optionally its own `read()` / `row_to_record()` where the store needs more than a
  column mapping (an event log, a conversation log, a supersede column).
Explicit keys in memwatch.toml always win over a preset's defaults.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass
class Match:
    preset: str
    score: float                 # higher is a better match; 0 < score <= 1
    reasons: list[str] = field(default_factory=list)
    defaults: dict = field(default_factory=dict)  # mapping values filled in for this store


def columns_of(tables, name):
    """Column names of table `name` in a describe() list, or None when absent."""
    for t in tables:
        if t.name == name:
            return set(t.columns)
    return None


def has_columns(tables, name, required) -> list[str] | None:
    """Reasons list when table `name` has every column in `required`, else None."""
    cols = columns_of(tables, name)
    if cols is None or not set(required) <= cols:
        return None
    return [f"table {name!r} with columns {', '.join(sorted(required))}"]


def best_of(matches: Iterable[Match]) -> Match | None:
    """The highest-scoring match (the first of equals), or None: a preset's pick among the
    tables that fit it."""
    best = None
    for m in matches:
        if best is None or m.score > best.score:
            best = m
    return best
