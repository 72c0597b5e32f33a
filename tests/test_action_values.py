"""[[actions]] values: literals, `now`, overlay fields, and their validation in memwatch.toml."""
from __future__ import annotations

import pytest

from memwatch_overlay.rules.action_values import TimeValue, check, render
from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.core.timeparse import format_like, parse_as_of
from memwatch_overlay.rules.config import parse_config

NOW = parse_as_of("2026-11-29T16:00:00.25")
AS_OF = parse_as_of("2026-11-29")
FACT = {"freshness": 0.123456, "label": "expired", "status": "active", "category": "employment",
        "days_left": None, "ref": "bot:t:1"}


@pytest.mark.parametrize("value, expected", [
    (1, 1), (2.5, 2.5), (True, True), ("plain text", "plain text"),
    ("now", TimeValue(NOW)), ("{now}", TimeValue(NOW)), ("{as_of}", TimeValue(AS_OF)),
    ("{freshness}", 0.123456), ("{label}", "expired"), ("{days_left}", None),
    ("{label}/{category}", "expired/employment"),
    ("score {freshness:.2f}", "score 0.12"),
    ("left: {days_left}", "left: "),
    ("at {as_of}", "at 2026-11-29T00:00:00+00:00"),
    ("{{literal}} {label}", "{literal} expired"),
])
def test_render(value, expected):
    assert check(value) is None
    assert render(value, FACT, NOW, AS_OF) == expected


@pytest.mark.parametrize("value, problem", [
    ("{nope}", "unknown field {nope}"),
    ("{label.__class__}", "unknown field"),
    ("{label[0]}", "unknown field"),
    ("{freshness:zz}", "bad format spec"),
    ("{label!a}", "bad conversion"),
    ("unclosed {label", "bad template"),
    (["a"], "values must be"),
])
def test_check_rejects(value, problem):
    assert problem in check(value)


def test_time_values_take_the_columns_format():
    assert format_like("2025-11-08 11:13:39.812258+00:00", NOW) == "2026-11-29 16:00:00.250000+00:00"
    assert format_like("2025-11-08T11:13:39Z", NOW) == "2026-11-29T16:00:00Z"
    assert format_like(1700000000, NOW) == int(NOW)
    assert format_like(1700000000000, NOW) == int(NOW * 1000)


def _actions(body: str):
    import tomllib
    raw = tomllib.loads('[[sources]]\nname = "bot"\nconnector = "sqlite"\npath = "x.db"\n' + body)
    return parse_config(raw).actions


def test_config_accepts_expire_and_annotate_values():
    actions = _actions('[[actions]]\nwhen = "expired"\ndo = "expire"\n'
                       '[[actions]]\nwhen = "stale"\ndo = "annotate"\nset = { note = "{label}" }\n')
    assert [a.do for a in actions] == ["expire", "annotate"]


@pytest.mark.parametrize("body, field", [
    ('do = "expire"\nset = { a = 1 }', "actions[0].set"),
    ('do = "delete"\nset = { a = 1 }', "actions[0].set"),
    ('do = "set"', "actions[0].set"),
    ('do = "set"\nset = { a = "{bogus}" }', "actions[0].set.a"),
    ('do = "drop"', "actions[0].do"),
    ('do = "set"\nset = { a = 1 }\nextra = 1', "actions[0].extra"),
])
def test_config_rejects_bad_actions_naming_the_key(body, field):
    with pytest.raises(ConfigError) as err:
        _actions('[[actions]]\nwhen = "expired"\n' + body + "\n")
    assert err.value.field == field


def test_take_turns_pauses_between_batches_for_as_long_as_the_lock_was_held():
    from memwatch_overlay.connectors.writer import TakeTurns
    slept = []
    turns = TakeTurns(sleep=slept.append)
    clock = iter([0.0, 0.0, 1.0, 2.0, 3.0, 3.0])     # batch 1 holds the lock 0 s, batch 2 for 1 s
    turns._clock = lambda: next(clock)
    batches = list(turns.batches(list(range(25)), 10))
    assert [len(b) for b in batches] == [10, 10, 5]
    assert slept == [TakeTurns.MIN_PAUSE, TakeTurns.MAX_PAUSE]    # no pause before the first batch
