"""Dotted paths and record-relative paths (the syntax docs/json-sources.md documents)."""
import json
import random

import pytest

from memwatch_overlay.connectors.paths import (
    chain_of,
    get_path,
    iter_path,
    iter_path_with_trail,
    parse_path,
    parse_record_path,
    resolve_record_path,
    trail_to_path,
)


@pytest.mark.parametrize("path, parts", [
    ("a.b[0].c", ["a", "b", 0, "c"]),
    ("entities[*].observations[*]", ["entities", "*", "observations", "*"]),
    ("*.memories[*]", ["*", "memories", "*"]),
    ("[*]", ["*"]),
    ("items[-1]", ["items", -1]),
    ('["a.b"].c', ["a.b", "c"]),
    ('meta["key \\"q\\""]', ["meta", 'key "q"']),
    ("$.x[*]", ["x", "*"]),
    ("$[0]", [0]),
    ("$foo", ["$foo"]),          # a key starting with $ is a name, not the root
])
def test_parse_path_accepts(path, parts):
    assert parse_path(path) == parts


@pytest.mark.parametrize("path", ["", "a..b", ".a", "a.", "a[0]b", "a[x]", "a[", 'a["x"', "$"])
def test_parse_path_rejects(path):
    with pytest.raises(ValueError):
        parse_path(path)


@pytest.mark.parametrize("trail", [(0, "observations", 3), ("a.b", "c[d]", 2), ("with space", '"q"')])
def test_trail_to_path_round_trips(trail):
    assert tuple(parse_path(trail_to_path(trail))) == trail


DOC = {"users": {"u1": {"name": "Priya", "memories": [{"text": "likes tea", "meta": {"at": "2025-01-01"}},
                                                      {"text": "lives in Jakarta"}]}},
       "version": 3}


def resolve(spec, selector="users.*.memories[*]", doc=DOC):
    out = []
    for _, trail in iter_path_with_trail(doc, parse_path(selector)):
        out.append(resolve_record_path(parse_record_path(spec), chain_of(doc, trail)))
    return out


def test_record_relative_paths():
    assert resolve("text") == ["likes tea", "lives in Jakarta"]
    assert resolve("@.text") == ["likes tea", "lives in Jakarta"]
    assert resolve("meta.at") == ["2025-01-01", None]
    assert resolve("#") == [0, 1]                   # index in the memories list
    assert resolve("^.name") == ["Priya", "Priya"]  # nearest enclosing object: the user
    assert resolve("^#") == ["u1", "u1"]            # the key that object sits under
    assert resolve("^^#") == ["users", "users"]     # every enclosing object counts: `users` is one
    assert resolve("^^^.version") == [3, 3]         # three objects up: the document
    assert resolve("$.version") == [3, 3]
    assert resolve("^^^^.x") == [None, None]        # no object that far up


def test_string_records_use_at():
    doc = {"entities": [{"name": "A", "observations": ["x", "y"]}]}
    assert resolve("@", "entities[*].observations[*]", doc) == ["x", "y"]
    assert resolve("^.name", "entities[*].observations[*]", doc) == ["A", "A"]


def test_json_text_inside_values_is_followed():
    doc = [{"payload": '{"data": "hello", "when": {"at": 5}}'}]
    assert resolve("payload.when.at", "[*]", doc) == [5]


@pytest.mark.parametrize("spec", ["^name", "", "a..b", "^#x"])
def test_record_path_rejects(spec):
    with pytest.raises(ValueError):
        parse_record_path(spec)


def _random_value(rnd, depth: int):
    """A JSON value: objects, lists, scalars, and JSON held as text (followed like containers)."""
    kind = rnd.random()
    if depth > 3 or kind < 0.3:
        return rnd.choice([None, 0, 7, "x", "", True, "[1, 2]", '{"a": {"b": 3}}'])
    if kind < 0.6:
        return [_random_value(rnd, depth + 1) for _ in range(rnd.randrange(0, 4))]
    value = {k: _random_value(rnd, depth + 1) for k in rnd.sample(["a", "b", "c", "0"], rnd.randrange(0, 4))}
    return json.dumps(value) if rnd.random() < 0.15 else value


def test_get_path_is_the_first_value_iter_path_finds():
    """get_path walks a path without `*` itself: the same answer as iter_path's first value,
    for names, indexes (negative too, out of range), JSON text and `*` paths alike."""
    rnd = random.Random(11)
    steps = ["a", "b", "c", "0", 0, 1, -1, 5, "*"]
    for _ in range(3000):
        doc = _random_value(rnd, 0)
        for _ in range(5):
            parts = [rnd.choice(steps) for _ in range(rnd.randrange(1, 4))]
            expected = next(iter_path(doc, parts), None)
            assert get_path(doc, parts) == expected, (doc, parts)
            assert get_path(doc, tuple(parts)) == expected, (doc, parts)
