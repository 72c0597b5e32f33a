"""Dotted paths into JSON values: `value.memory`, `metadata.suggestions[0]`, `a.b[*].c`.

Supported syntax (docs/json-sources.md is the reference): names separated by dots,
`["a.b"]` for a name holding dots or brackets, `[N]` for a list index (negative counts
from the end), `*` / `[*]` for every element of a list or every value of an object. A
leading `$` or `$.` (the root) is accepted and ignored. A path that starts with a column
name reads that column and parses it as JSON when it holds JSON text or bytes.

Record-relative paths (JSON sources' mapping keys, `parse_record_path`) add `@` (the
record itself), `#` (the name or index the record sits under), `^` (the nearest
enclosing object, `^^` the one above it, …; lists in between are skipped) and `$.…`
(the document: the whole file, or one JSONL line).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

_TOKEN = re.compile(r'([^.\[\]"]+)|\[(-?\d+|\*)\]|\["((?:[^"\\]|\\.)*)"\]')
_MISSING = object()


def parse_path(path: str) -> list[str | int]:
    """`a.b[0].c` -> ['a', 'b', 0, 'c']; `[*]` and a bare `*` become '*'."""
    if path == "$" or path.startswith(("$.", "$[")):
        path = path[1:].removeprefix(".")
    parts: list[str | int] = []
    pos = 0
    for m in _TOKEN.finditer(path):
        gap = path[pos:m.start()]
        if gap not in ("", ".") or (gap == "" and m.group(1) is not None and parts):
            raise ValueError(f"bad path {path!r} near {path[pos:]!r}")
        if gap == "." and not parts:
            raise ValueError(f"bad path {path!r}: starts with a dot")
        pos = m.end()
        if m.group(1) is not None:
            parts.append(m.group(1))
        elif m.group(3) is not None:
            parts.append(re.sub(r"\\(.)", r"\1", m.group(3)))
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
            except (ValueError, RecursionError):   # not JSON, or too deep / too long a number to read
                return value
    return value


def get_path(value: Any, parts: list[str | int] | tuple[str | int, ...]) -> Any:
    """The single value at `parts` (the first one for `*`), or None when absent.

    Without `*` a path names one place: it is walked step by step (iter_path's steps: JSON
    text parsed at each container, an index into a list, a name into an object) without
    iter_path's generators, which were most of a JSON record's cost (every mapped field of
    every record goes through here)."""
    if "*" in parts:
        for found in iter_path(value, list(parts)):
            return found
        return None
    for head in parts:
        value = maybe_json(value)
        if isinstance(head, int):
            if not (isinstance(value, list) and -len(value) <= head < len(value)):
                return None
        elif not (isinstance(value, dict) and head in value):
            return None
        value = value[head]
    return value


def iter_path(value: Any, parts: list[str | int]) -> Iterator[Any]:
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


_PLAIN_NAME = re.compile(r'^[^.\[\]"*]+$')


def trail_to_path(trail: tuple) -> str:
    """(..., 'observations', 3) -> '$.….observations[3]' (JSONPath-like, for pk).

    The result parses back with `parse_path` to the same steps.
    """
    out = "$"
    for step in trail:
        if isinstance(step, int):
            out += f"[{step}]"
        elif _PLAIN_NAME.match(step):
            out += f".{step}"
        else:
            out += "[" + json.dumps(step, ensure_ascii=False) + "]"
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


# -- record-relative paths (JSON sources) ------------------------------------------------

@dataclass(frozen=True)
class RecordPath:
    """A mapping value of a JSON source, parsed.

    base: "record" (a path inside the record), "doc" (`$.…`: the document) or
    "parent" (`^…`: the `ups`-th enclosing object). `own_key` (`#`) asks for the
    name or index the base sits under instead of a value inside it.
    """

    spec: str
    base: str = "record"
    ups: int = 0
    own_key: bool = False
    parts: tuple = ()


def parse_record_path(spec: str) -> RecordPath:
    """Parse `text = "…"`-style values: `a.b`, `@`, `#`, `^.name`, `^^#`, `$.user`."""
    s = spec.strip()
    if not s:
        raise ValueError("empty path")
    if s == "@":
        return RecordPath(spec)
    if s == "#":
        return RecordPath(spec, own_key=True)
    if s.startswith("^"):
        ups = len(s) - len(s.lstrip("^"))
        rest = s[ups:]
        if rest == "":
            return RecordPath(spec, "parent", ups)
        if rest == "#":
            return RecordPath(spec, "parent", ups, own_key=True)
        if not rest.startswith((".", "[")):
            raise ValueError(f"bad path {spec!r}: after ^ comes '.name', '[N]' or '#'")
        return RecordPath(spec, "parent", ups, parts=tuple(parse_path(rest.removeprefix("."))))
    if s == "$":
        return RecordPath(spec, "doc")
    if s.startswith(("$.", "$[")):
        return RecordPath(spec, "doc", parts=tuple(parse_path(s)))
    if s.startswith("@."):
        s = s[2:]
    return RecordPath(spec, parts=tuple(parse_path(s)))


def chain_of(doc: Any, trail: tuple) -> list[tuple[Any, Any]]:
    """(value, name-or-index) pairs from the document down to the value at `trail`.

    The document's own name is None. JSON held as text inside values is parsed the
    same way `iter_path_with_trail` parses it, so the chain matches what was selected.
    """
    chain = [(doc, None)]
    value = doc
    for step in trail:
        value = maybe_json(value)
        value = value[step]
        chain.append((value, step))
    return chain


def resolve_record_path(path: RecordPath, chain: list[tuple[Any, Any]]) -> Any:
    """The value `path` names for the record at the end of `chain` (None when absent)."""
    if path.base == "record":
        value, name = chain[-1]
    elif path.base == "doc":
        value, name = chain[0]
    else:
        found = None
        left = path.ups
        for value, name in reversed(chain[:-1]):
            if isinstance(maybe_json(value), dict):
                left -= 1
                if left == 0:
                    found = (value, name)
                    break
        if found is None:
            return None
        value, name = found
    if path.own_key:
        return name
    return get_path(value, path.parts) if path.parts else maybe_json(value)
