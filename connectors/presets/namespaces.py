"""Which part of a LangGraph namespace names the user.

LangGraph stores items under a namespace tuple, kept as one text joined with `.`. Apps lay
it out in several ways: `("users", user_id, "memories")`, `(user_id, "memories")` (LangGraph's
Stores docs), `(user_id, application_context)` (LangChain's long-term-memory docs),
`("memories", user_id)` (LangMem's default), `("project", team, user_id)`. The subject is the
part that varies per user, so the position is chosen from all the namespaces a store holds:

1. positions where every namespace of that depth has the same value carry no information
   (`users`, `memories` in a store with several users) and are skipped;
2. a part made only of a known container or context word (`memories`, `working`, `profile`…)
   is not a user;
3. among the rest, a position whose values look like ids (digits, `_`, `-`, `@`, a uuid)
   wins; then the one with more distinct values; then the earlier one.

A store with a single namespace still gets a subject: its id-like part, else the first part
that is not a known word. `subject = "prefix[N]"` in memwatch.toml names the position.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable

# Words apps use for the fixed parts of a namespace (containers, memory kinds, contexts).
NAMESPACE_WORDS = frozenset("""
users user memories memory mem facts fact notes note profile profiles user_profile preferences preference
working episodic semantic procedural episodes episode knowledge collections collection items store
long_term short_term longterm shortterm context contexts conversations conversation threads thread
chats chat history messages sessions session agents agent teams team projects project
project_memories app apps application default global shared main data documents docs
""".split())
_ID_LIKE = re.compile(r"\d|[_@-]|^[0-9a-f]{8,}$", re.IGNORECASE)


def looks_like_id(part: str) -> bool:
    return bool(_ID_LIKE.search(part)) and part.lower() not in NAMESPACE_WORDS


def is_word(part: str) -> bool:
    return part.lower() in NAMESPACE_WORDS


def subject_positions(prefixes: Iterable[str]) -> dict[int, int]:
    """namespace depth -> the position holding the user, from the distinct namespaces."""
    by_depth: dict[int, list[list[str]]] = defaultdict(list)
    for prefix in prefixes:
        if prefix:
            parts = prefix.split(".")
            by_depth[len(parts)].append(parts)
    return {depth: _position(rows) for depth, rows in by_depth.items()}


def _position(rows: list[list[str]]) -> int:
    depth = len(rows[0])
    best, best_key = 0, None
    for i in range(depth):
        values = {r[i] for r in rows}
        if all(is_word(v) for v in values):
            continue
        varies = len(values) > 1 or len(rows) == 1
        id_like = sum(looks_like_id(v) for v in values) / len(values)
        key = (varies, id_like >= 0.5, len(values), -i)
        if best_key is None or key > best_key:
            best, best_key = i, key
    return best


def subject_of(prefix: str | None, positions: dict[int, int] | None, fixed: int | None = None) -> str | None:
    """The subject of one namespace: part `fixed` when configured, else the chosen position
    for its depth; namespaces of a depth not seen yet are judged alone."""
    if not prefix:
        return None
    parts = prefix.split(".")
    if fixed is not None:
        try:
            return parts[fixed]
        except IndexError:
            return prefix
    pos = (positions or {}).get(len(parts))
    if pos is None:
        pos = _position([parts])
    return parts[pos] if pos < len(parts) else prefix
