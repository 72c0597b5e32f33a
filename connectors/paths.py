"""Dotted paths into JSON values: `value.memory`, `metadata.suggestions[0]`, `a.b[*].c`.

Supported syntax (documented in the README): names separated by dots, `[N]` for a list
index (negative counts from the end), `[*]` for every element. A path that starts with
a column name reads that column and parses it as JSON when it holds JSON text or bytes.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+|\*)\]")
_MISSING = object()


def parse_path(path: str) -> list[str | int]:
    """`a.b[0].c` -> ['a', 'b', 0, 'c']; `[*]` becomes '*'."""
    parts: list[str | int] = []
    pos = 0
    for m in _TOKEN.finditer(path):
        if m.start() != pos and path[pos:m.start()] != ".":
            raise ValueError(f"bad path {path!r} near {path[pos:]!r}")
        pos = m.end()
        if m.group(1) is not None:
            parts.append(m.group(1))
        else:
            parts.append("*" if m.group(2) == "*" else int(m.group(2)))
    if pos != len(path) or not parts:
        raise ValueError(f"bad path {path!r}")
    return parts


def maybe_json(value: Any) -> Any:
    """Parse JSON held as text or bytes (SQLite BLOB from orjson); leave others alone."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode("utf-8", "replace")
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(value)
            except ValueError:
                return value
    return value


def get_path(value: Any, parts: list[str | int]) -> Any:
    """The single value at `parts` (the first one for `*`), or None when absent."""
    for found in iter_path(value, parts):
        return found
    return None


def iter_path(value: Any, parts: list[str | int], _trail: tuple = ()) -> Iterator[Any]:
    """Every value at `parts`, following `*` into each list element."""
    yield from (v for v, _ in iter_path_with_trail(value, parts))


def iter_path_with_trail(value: Any, parts: list[str | int], trail: tuple = ()) -> Iterator[tuple[Any, tuple]]:
    """Like iter_path, also giving the concrete path (names and indexes) to each value."""
    if not parts:
        yield value, trail
        return
    value = maybe_json(value)
    head, rest = parts[0], parts[1:]
    if head == "*":
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from iter_path_with_trail(item, rest, trail + (i,))
        elif isinstance(value, dict):
            for k, item in value.items():
                yield from iter_path_with_trail(item, rest, trail + (k,))
        return
    if isinstance(head, int):
        if isinstance(value, list) and -len(value) <= head < len(value):
            yield from iter_path_with_trail(value[head], rest, trail + (head % len(value),))
        return
    if isinstance(value, dict) and head in value:
        yield from iter_path_with_trail(value[head], rest, trail + (head,))


def trail_to_path(trail: tuple) -> str:
    """(..., 'observations', 3) -> '$.….observations[3]' (JSONPath-like, for pk)."""
    out = "$"
    for step in trail:
        out += f"[{step}]" if isinstance(step, int) else f".{step}"
    return out


def split_column_path(path: str, columns: list[str]) -> tuple[str, list[str | int]]:
    """Split `value.memory` into the column `value` and the JSON path ['memory'].

    A column whose own name contains dots wins over a shorter prefix.
    """
    if path in columns:
        return path, []
    lowered = {c.lower(): c for c in columns}
    if path.lower() in lowered:
        return lowered[path.lower()], []
    parts = parse_path(path)
    for cut in range(len(parts) - 1, 0, -1):
        head = parts[:cut]
        if all(isinstance(p, str) for p in head):
            name = ".".join(head)  # type: ignore[arg-type]
            if name in columns or name.lower() in lowered:
                return lowered.get(name.lower(), name), parts[cut:]
    first = parts[0]
    return (lowered.get(str(first).lower(), str(first)), parts[1:])
