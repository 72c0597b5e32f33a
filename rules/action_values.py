"""Values an [[actions]] entry writes: literals, `now`, or overlay fields such as `{freshness}`.

    set = { expires_at = "now" }                 # wall-clock time, in the column's own format
    set = { score = "{freshness}" }              # the overlay's number, as a number
    set = { note = "memwatch: {label} since {as_of}" }   # text with fields filled in
    set = { is_deleted = 1 }                     # a literal (numbers, booleans, text)

`now` is the wall-clock time of the plan, not `--as-of`: the bot's own sweeper (LangGraph's
TTL sweep compares with SQLite's CURRENT_TIMESTAMP) works on the real clock. `{as_of}` is the
scoring time. A value that is exactly `now`, `{now}` or `{as_of}` is a timestamp and takes the
format the column already uses; inside longer text times are ISO-8601 UTC. `{{` and `}}`
write literal braces. Only the field names below exist; anything else is a config error.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any

from memwatch_overlay.core.timeparse import to_iso

FIELDS = ("freshness", "label", "status", "category", "as_of", "now", "days_left",
          "days_until_expired", "age_days", "ref", "subject", "key")
TIME_FIELDS = ("now", "as_of")
_SAMPLE = {"freshness": 0.5, "label": "stale", "status": "active", "category": "general",
           "as_of": "2026-01-01T00:00:00+00:00", "now": "2026-01-01T00:00:00+00:00",
           "days_left": 1.0, "days_until_expired": 1.0, "age_days": 1.0, "ref": "s:t:1",
           "subject": "u", "key": "k"}


@dataclass(frozen=True)
class TimeValue:
    """A moment (epoch seconds UTC) to be written in the target column's own format."""

    epoch: float


MAX_WIDTH = 1000        # a format spec's width or precision: enough for any column, never gigabytes
MAX_VALUE_CHARS = 10_000   # a whole action value template


def _oversized(spec: str) -> str | None:
    """Why a format spec's width or precision is too large to render, or None."""
    for run in re.findall(r"\d+", spec):
        if len(run) > 4 or int(run) > MAX_WIDTH:
            return f"width and precision must be at most {MAX_WIDTH}"
    if "{" in spec:
        return "nested fields in a format spec are not supported"
    return None


def check(value: Any) -> str | None:
    """Why `value` cannot be used as an action value, or None when it can."""
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return None
    if not isinstance(value, str):
        return "values must be strings, numbers or booleans"
    if len(value) > MAX_VALUE_CHARS:
        return f"a value template may be at most {MAX_VALUE_CHARS} characters"
    try:
        parts = list(string.Formatter().parse(value))
    except ValueError as exc:
        return f"bad template {value!r}: {exc} (write {{{{ and }}}} for literal braces)"
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if name not in FIELDS:
            return (f"unknown field {{{name}}} in {value!r} (fields: "
                    + ", ".join("{" + f + "}" for f in FIELDS) + ")")
        if conversion not in (None, "s", "r"):
            return f"bad conversion !{conversion} in {value!r}"
        too_big = _oversized(spec or "")
        if too_big:
            return f"format spec {spec!r} for {{{name}}} in {value!r}: {too_big}"
        try:
            format(_SAMPLE[name], spec or "")
        except (ValueError, TypeError) as exc:
            return f"bad format spec {spec!r} for {{{name}}} in {value!r}: {exc}"
    return None


def render(value: Any, fact: dict, now: float, as_of: float) -> Any:
    """The value to write for one fact. `fact` holds the overlay fields (freshness, label, …).

    Returns a TimeValue for timestamps, the field's own type for an exact `{field}`,
    otherwise the literal or the filled-in text.
    """
    if not isinstance(value, str):
        return value
    if value == "now":
        return TimeValue(now)
    context = {**{k: fact.get(k) for k in FIELDS}, "now": now, "as_of": as_of}
    parts = list(string.Formatter().parse(value))
    if len(parts) == 1 and parts[0][0] == "" and parts[0][1] and not parts[0][2] and not parts[0][3]:
        name = parts[0][1]
        if name in TIME_FIELDS:
            return TimeValue(context[name])
        return context[name]
    out = []
    for literal, name, spec, conversion in parts:
        out.append(literal)
        if name is None:
            continue
        field_value = context[name]
        if field_value is None:      # e.g. days_left of a fact that never goes stale
            continue
        if name in TIME_FIELDS:
            field_value = to_iso(field_value)
        if conversion == "r":
            field_value = repr(field_value)
        elif conversion == "s":
            field_value = str(field_value)
        out.append(format(field_value, spec or ""))
    return "".join(out)


def is_time(value: Any) -> bool:
    """True when `value` (as written in memwatch.toml) renders a timestamp."""
    return isinstance(value, str) and value in ("now", "{now}", "{as_of}")
